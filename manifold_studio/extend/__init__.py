"""Extension at scale (Qt-free): fit on a sample, out of core, Dask, extension quality, and the tasks behind the out-of-sample tools."""
