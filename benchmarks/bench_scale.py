"""Extending a fitted model to many rows: in memory, out of core, and on a Dask LocalCluster.

    .venv/bin/python benchmarks/bench_scale.py                  # 10,000,000 x 10 rows (long: tens of minutes)
    .venv/bin/python benchmarks/bench_scale.py --rows 1000000   # what was run for the note
    .venv/bin/python benchmarks/bench_scale.py --quick          # 200,000 rows

An Isomap model (n_neighbors = 10) is fitted on 5,000 points of a 10-D data set; the same
``--rows`` rows (generated once, saved as one .npy) are then extended three ways, each in a fresh
process so that its peak memory is its own:

* **in memory**: ``np.load`` the whole file, one ``extend`` call;
* **out of core**: ``manifold_studio.extend.out_of_core.extend_source`` reads the .npy through a memory
  map in chunks of 50,000 rows and writes the result .npy as it goes;
* **Dask**: a LocalCluster with 2 worker processes (1 thread each), ``extend_dask`` over 50,000-row
  blocks read by the workers themselves (50,000 rows), the result written to a .npy; memory is the sum of the
  client's and the workers' peaks.

Throughput is rows per second of the extension (reading and writing included); the three results
are checked equal (1e-12). Results go to benchmarks/results/scale.txt (or --out).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def child(mode: str, model: str, data: str, out: str) -> dict:
    import numpy as np

    from manifold_studio.files.model_file import load_model

    est = load_model(model)
    start = time.perf_counter()
    if mode == "memory":
        X = np.load(data)
        np.save(out, est.extend(X))
        mem = peak_mb()
    elif mode == "out_of_core":
        from manifold_studio.extend.out_of_core import extend_source

        extend_source(est, data, out=out, chunk_rows=50_000)
        mem = peak_mb()
    else:
        from distributed import Client, LocalCluster

        from manifold_studio.extend.dask_extend import extend_dask, read_input, write_output

        with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster, \
                Client(cluster) as client:
            start = time.perf_counter()
            X, _labels, _names = read_input(data)
            write_output(extend_dask(est, X), out, est.id, est.kind)
            seconds = time.perf_counter() - start
            workers = client.run(peak_mb)
            mem = peak_mb() + sum(workers.values())
        return {"seconds": seconds, "peak_mb": mem}
    return {"seconds": time.perf_counter() - start, "peak_mb": mem}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--quick", action="store_true", help="200,000 rows")
    ap.add_argument("--out", default=str(HERE / "results" / "scale.txt"))
    ap.add_argument("--child", nargs=4, metavar=("MODE", "MODEL", "DATA", "OUT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        print(json.dumps(child(*args.child)))
        return 0
    import numpy as np

    import manifold_studio as ms
    from manifold_studio.files.model_file import save_model

    rows = 200_000 if args.quick else args.rows
    lines = [f"# bench_scale: {rows:,} x 10 rows extended with an Isomap model fitted on 5,000 points",
             f"# {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, "
             f"numpy {np.__version__}", ""]
    with tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_TMP")) as tmp:
        tmp = Path(tmp)
        rng = np.random.default_rng(0)
        basis = rng.normal(size=(3, 10))
        train = np.tanh(rng.normal(size=(5000, 3))) @ basis + 0.05 * rng.normal(size=(5000, 10))
        start = time.perf_counter()
        est = ms.get_algorithm("isomap", n_neighbors=10).fit(train)
        fit_s = time.perf_counter() - start
        save_model(est, tmp / "iso.npz")
        model_kb = (tmp / "iso.npz").stat().st_size / 1024
        data = np.lib.format.open_memmap(tmp / "rows.npy", mode="w+", dtype=np.float64, shape=(rows, 10))
        for s in range(0, rows, 1_000_000):
            n = min(1_000_000, rows - s)
            data[s:s + n] = np.tanh(rng.normal(size=(n, 3))) @ basis + 0.05 * rng.normal(size=(n, 10))
        data.flush()
        del data
        size_mb = (tmp / "rows.npy").stat().st_size / 1e6
        lines.append(f"fit: {fit_s:.1f} s; model file {model_kb:,.0f} KB; data file {size_mb:,.0f} MB")
        lines.append("")
        lines.append(f"{'mode':<14}{'seconds':>10}{'rows/s':>12}{'peak MB':>10}")
        results = {}
        for mode in ("memory", "out_of_core", "dask"):
            out = tmp / f"{mode}.npy"
            proc = subprocess.run([sys.executable, __file__, "--child", mode, str(tmp / "iso.npz"),
                                   str(tmp / "rows.npy"), str(out)], capture_output=True, text=True)
            if proc.returncode:
                lines.append(f"{mode:<14} failed: {proc.stderr.strip().splitlines()[-1]}")
                continue
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            results[mode] = np.load(out, mmap_mode="r")
            lines.append(f"{mode:<14}{r['seconds']:>10.1f}{rows / r['seconds']:>12,.0f}{r['peak_mb']:>10,.0f}")
            print(lines[-1], flush=True)
        ref = results.get("memory")
        for mode, res in results.items():
            if ref is not None and mode != "memory":
                diff = max(float(np.abs(np.asarray(res[s:s + 1_000_000]) - np.asarray(ref[s:s + 1_000_000])).max())
                           for s in range(0, rows, 1_000_000))
                lines.append(f"{mode}: max |difference| from in memory = {diff:.2e}")
        del results, ref
    lines.append("")
    lines.append("Per row, Isomap's extension finds the 10 nearest of the 5,000 training points and takes, for every")
    lines.append("training point, the shortest path through one of them: about 50,000 operations per row, so the")
    lines.append("throughput is set by that cost, not by reading (a 10-column row is 80 bytes).")
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
