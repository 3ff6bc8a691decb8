"""Manifold Studio: dimensionality reduction, manifold learning and clustering with
out-of-sample extension for every method.

Scripting API::

    import manifold_studio as ms
    ms.list_algorithms()
    est = ms.get_algorithm("pca", n_components=2).fit(X)
    est.embedding_, est.extend(X_new)
    ds = ms.load_data("sample:iris")          # or a path to a .csv/.tsv/.xlsx/.parquet/.npy/.npz file
    D = ms.load_distance_matrix("D.csv")      # a square distance matrix: fit with metric="precomputed"
    ms.list_preprocessors()                   # preparation steps: standardize, impute, one_hot, ...
    pipe = ms.make_pipeline("standardize", ("impute", {"strategy": "median"}),
                            ms.get_algorithm("kmeans", n_clusters=3)).fit(ds)
    ms.save_model(pipe, "model.npz", data=ds)  # JSON + arrays, no pickle
    est = ms.load_model("model.npz")
"""
from __future__ import annotations

from manifold_studio.algorithms import FitCancelled
from manifold_studio.algorithms.pipeline import Pipeline, make_pipeline
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.data import Dataset, set_roles_after_load
from manifold_studio.errors import (
    DataError,
    InvalidParameterError,
    ManifoldStudioError,
    NotFittedError,
    UnknownAlgorithmError,
)
from manifold_studio.fileio.source_file import file_record
from manifold_studio.plugins.host import get_host
from manifold_studio.distance_matrix import DistanceMatrixLoader
from manifold_studio.version import __version__

__all__ = ["list_algorithms", "get_algorithm", "algorithm_class", "list_loaders", "list_samples",
           "load_data", "load_distance_matrix", "save_model", "load_model", "list_preprocessors", "get_preprocessor", "make_pipeline", "Pipeline", "Dataset",
           "FitCancelled", "DataError", "InvalidParameterError",
           "NotFittedError", "ManifoldStudioError", "UnknownAlgorithmError", "__version__"]


#: names imported on first use (module ``__getattr__``, by module name): model files are not
#: needed to list the plugins or start the window, so ``import manifold_studio`` stays light
_LAZY = {"save_model": "manifold_studio.files.model_file", "load_model": "manifold_studio.files.model_file"}


def __getattr__(name: str):
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'manifold_studio' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later look-ups are plain attribute reads
    return value


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


def _host():
    return get_host()


def list_algorithms(kind: str | None = None) -> list[str]:
    """Ids of every loaded algorithm plugin (optionally only one kind)."""
    algos = _host().algorithms
    return sorted(a for a, cls in algos.items() if kind is None or cls.kind == kind)


def algorithm_class(algorithm_id: str):
    return _host().algorithm_class(algorithm_id)


def get_algorithm(algorithm_id: str, **params):
    """A new estimator for ``algorithm_id`` with validated ``params``."""
    est = algorithm_class(algorithm_id)()
    est.set_params(**params)
    est.validate_params()
    return est


def list_preprocessors() -> list[str]:
    """Ids of every loaded preparation step (plugin kind ``preprocessing``)."""
    return sorted(_host().preprocessors)


def get_preprocessor(step_id: str, **params):
    """A new preparation step ``step_id`` with validated ``params``."""
    return _host().get_preprocessor(step_id, **params)


def list_loaders() -> list[str]:
    return sorted(_host().loaders)


def list_samples() -> list[str]:
    return sorted(_host().samples)


def load_data(source: str, host=None, progress=None, *, loader=None, **options) -> Dataset:
    """Load ``sample:NAME`` or a file path with the loader registered for its extension
    (``host``: the plugin host to use, default the process-wide one; ``progress``: reports the
    start and the end; ``loader``: the loader when the caller has resolved it already)."""
    progress = as_progress(progress)
    progress.checkpoint(0.0, f"Loading {source}")
    host = _host() if host is None else host
    if isinstance(source, str) and source.startswith("sample:"):
        sample_id = source.split(":", 1)[1]
        if sample_id not in host.samples:
            raise DataError(f"Unknown sample data set '{sample_id}': available are "
                            f"{', '.join(sorted(host.samples)) or 'none'}.")
        sample = host.samples[sample_id]
        roles = None if "roles" in {p.name for p in sample.options} else options.pop("roles", None)
        ds = set_roles_after_load(sample.load(**options), roles, source)
    else:
        ds = (host.loader_for(source) if loader is None else loader).load(source, **options)
    if not isinstance(ds, Dataset):
        raise DataError(f"The loader for {source} returned {type(ds).__name__}, not a Dataset.")
    ds.load_options = dict(options)
    ds.source_file = file_record(source)
    progress.checkpoint(1.0, f"Loaded {ds.describe()}")
    return ds


def load_distance_matrix(source, host=None, progress=None, **options) -> Dataset:
    """Load a file holding a square matrix of distances between n items (CSV/TSV with or without
    a header row and a first column of names, Excel, ``.npy``, ``.npz`` dense or sparse, ``.mtx``)
    as a data set flagged ``distance_matrix``, after checking that it is one (square, finite,
    non-negative, zero diagonal, symmetric, names that agree): see
    :mod:`manifold_studio.distance_matrix`. ``options``: the file's loader options (e.g.
    ``label_column``) and ``symmetry_tolerance``."""
    host = _host() if host is None else host
    loader = DistanceMatrixLoader(host.loader_for(source))
    return load_data(str(source), host, progress, loader=loader, **options)

