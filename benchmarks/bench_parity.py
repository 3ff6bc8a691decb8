"""The speed targets of issue 33, side by side with scikit-learn in one run: PCA and probabilistic PCA
on 20,000 x 784 (against PCA.fit_transform: our fit also computes the training embedding), kernel
PCA fit (rbf, 3,000 swiss-roll points) and Ward linkage (5,000 x 10 blobs, 8 clusters).

    nice -n 19 .venv/bin/python benchmarks/bench_parity.py              # 5 alternating runs each
    .venv/bin/python benchmarks/bench_parity.py --repeat 3 --threads 1

Ours and scikit-learn's run alternately (a busy shared machine loads both alike). Three ratios
(ours / scikit-learn, below 1: faster): of the best and of the median wall-clock times, and of the median CPU times
of the process (time.process_time: every BLAS thread counted; what a loaded machine distorts least,
though the spinning of idle OpenBLAS threads is counted too). The data generators are those of
bench_decomposition.py, bench_spectral.py and bench_clustering.py. Results go to
benchmarks/results/parity.txt.
"""
from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import limit_threads  # noqa: E402

_THREADS = limit_threads(sys.argv[1:])

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def alternate(ours, theirs, repeat: int):
    """[(wall, cpu) per run] of each function, run alternately."""
    runs = ([], [])
    for _ in range(repeat):
        for i, func in enumerate((ours, theirs)):
            w, c = time.perf_counter(), time.process_time()
            func()
            runs[i].append((time.perf_counter() - w, time.process_time() - c))
    return runs


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5, help="alternating runs per case")
    ap.add_argument("--threads", default=None, help="BLAS threads for both libraries")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "parity.txt"))
    args = ap.parse_args(argv)
    import sklearn
    from sklearn.cluster import AgglomerativeClustering
    from sklearn.decomposition import PCA, KernelPCA

    import manifold_studio as ms
    from bench_clustering import blobs
    from bench_decomposition import low_rank
    from bench_spectral import swiss_roll
    from manifold_studio_builtins.hierarchical import HierarchicalClustering

    load_start = os.getloadavg()[0]
    X = low_rank(20000, 784, 100, seed=0)
    Xp = low_rank(20000, 784, 100, seed=1)
    Xk = swiss_roll(5000, 0)[0][:3000]
    Xw = blobs(5000, 10, 8, seed=2)[0]
    cases = [
        ("pca fit vs fit_transform", "20,000x784->50",
         lambda: ms.get_algorithm("pca", n_components=50, random_state=0).fit(X),
         lambda: PCA(n_components=50, random_state=0).fit_transform(X)),
        ("ppca fit vs PCA fit_transform", "20,000x784->50",
         lambda: ms.get_algorithm("ppca", n_components=50).fit(Xp),
         lambda: PCA(n_components=50).fit_transform(Xp)),
        ("kernel_pca fit (rbf)", "3,000x3->2",
         lambda: ms.get_algorithm("kernel_pca", kernel="rbf", gamma=0.01).fit(Xk),
         lambda: KernelPCA(n_components=2, kernel="rbf", gamma=0.01).fit(Xk)),
        ("Ward, 8 clusters", "5,000x10",
         lambda: HierarchicalClustering(method="ward", n_clusters=8).fit(Xw),
         lambda: AgglomerativeClustering(n_clusters=8, linkage="ward").fit(Xw)),
    ]
    head = (f"{'case':<32} {'size':>15} {'ours s':>8} {'sk s':>8} {'wall':>6} {'median':>7} {'ours cpu':>9} "
            f"{'sk cpu':>8} {'cpu':>6}")
    print(head, flush=True)
    lines = [head]
    for name, size, ours, theirs in cases:
        a, b = alternate(ours, theirs, args.repeat)
        wa, wb = min(w for w, _ in a), min(w for w, _ in b)
        ma, mb = statistics.median(w for w, _ in a), statistics.median(w for w, _ in b)
        ca, cb = statistics.median(c for _, c in a), statistics.median(c for _, c in b)
        line = (f"{name:<32} {size:>15} {wa:8.3f} {wb:8.3f} {wa / wb:6.2f} {ma / mb:7.2f} {ca:9.3f} {cb:8.3f} "
                f"{ca / cb:6.2f}")
        print(line, flush=True)
        lines.append(line)
    header = (f"# benchmarks/bench_parity.py  {time.strftime('%Y-%m-%d %H:%M')}  python {platform.python_version()}  "
              f"numpy {np.__version__}  scikit-learn {sklearn.__version__}  {os.cpu_count()} cores  threads "
              f"{_THREADS or 'default'}  load average {load_start:.1f} at the start, {os.getloadavg()[0]:.1f} at "
              f"the end\n# {args.repeat} alternating runs per case; wall = ratio of the best wall-clock times, "
              f"median = of the median wall-clock times, cpu = of the median process CPU times (ours / scikit-learn)")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(header + "\n" + "\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
