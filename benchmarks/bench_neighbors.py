"""Approximate nearest neighbours: our NN-descent against pynndescent and hnswlib, the size where
'auto' switches, and the neighbour methods' fits with exact vs approximate neighbours.

    nice -n 19 .venv/bin/python benchmarks/bench_neighbors.py                  # everything
    nice -n 19 .venv/bin/python benchmarks/bench_neighbors.py --parts recall   # one part

Parts (each side by side in one run; wall seconds and process CPU seconds, since the machine is
shared; pynndescent and hnswlib are installed for the benchmark only):

* ``recall``: the 10-NN graph of ``--n-images`` (70,000) generated 28 x 28 images
  (benchmarks/image_like.py: 10 classes on curved low-dimensional manifolds), recall@10 on a
  1,000-point sample against brute force, for ours, pynndescent (defaults) and hnswlib (M=16,
  ef_construction=200, ef=50, each point queried for its 11 nearest).
* ``auto``: exact vs approximate 10-NN graph of clustered 50-d data at growing n (where
  ``neighbors='auto'`` switches).
* ``tsne``: the 91-NN graph (t-SNE's 3 x perplexity + 1 for perplexity 30) of clustered 50-d
  data at ``--tsne-sizes`` (10,000 and 100,000): exact (BLAS blocks, float32-screened from
  20,000 points), our
  NN-descent and pynndescent (``n_jobs=-1``), recall@10 on a 300-point sample; where 'auto'
  switches for many neighbours.
* ``methods``: Laplacian eigenmaps at ``--n-methods`` (50,000) images, the classic Isomap at
  ``--n-isomap`` points and Landmark Isomap (``--isomap-landmarks``, 1,000) at ``--n-methods``
  points, neighbors='exact' vs 'approximate': time, ratio, the phases and trustworthiness(10)
  on a 5,000-point sample. With exact neighbours the pieces of a disconnected graph are joined
  through their exact closest pairs (a brute-force pass); with approximate ones, from samples.

Results: benchmarks/results/neighbors.txt.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_tsne import clustered  # noqa: E402
from image_like import image_like  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.algorithms.neighbors import NeighborIndex, knn_query, make_index  # noqa: E402


def timed(fn):
    t, c = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t, time.process_time() - c, out


def recall_at(X, idx, rows, k=10):
    """Fraction of idx[rows, :k] within the true k nearest (ties at the k-th distance count)."""
    d_true, _ = knn_query(X, X[rows], k + 1, index=NeighborIndex(X, method="brute"))
    kth = d_true[:, k]
    found = idx[rows, :k]
    d_found = np.sqrt(((X[found] - X[rows][:, None, :]) ** 2).sum(axis=2))
    return float(np.mean(d_found <= kth[:, None] * (1 + 1e-6) + 1e-9))


def part_recall(n, out):
    X, _ = image_like(n)
    X = X.astype(np.float64)
    rows = np.random.default_rng(0).choice(n, 1000, replace=False)
    make_index(X[:3000], neighbors="approximate", n_neighbors=10)  # compile
    w, c, ours = timed(lambda: make_index(X, neighbors="approximate", n_neighbors=10))
    idx = ours.training_neighbors(10)[1]
    out.append(f"ours NN-descent      {w:8.1f} {c:8.1f} {recall_at(X, idx, rows):9.4f}")
    print(out[-1], flush=True)
    try:
        import pynndescent

        pynndescent.NNDescent(X[:3000], n_neighbors=11)  # compile
        w, c, nd = timed(lambda: pynndescent.NNDescent(X, n_neighbors=11, random_state=0))
        idx = nd.neighbor_graph[0][:, 1:]
        out.append(f"pynndescent {pynndescent.__version__:8s} {w:8.1f} {c:8.1f} {recall_at(X, idx, rows):9.4f}")
        print(out[-1], flush=True)
    except ImportError:
        out.append("pynndescent not installed")
    try:
        import hnswlib

        def hnsw():
            p = hnswlib.Index(space="l2", dim=X.shape[1])
            p.init_index(max_elements=n, ef_construction=200, M=16, random_seed=0)
            p.add_items(X.astype(np.float32), num_threads=-1)
            p.set_ef(50)
            return p.knn_query(X.astype(np.float32), k=11, num_threads=-1)[0]

        w, c, labels = timed(hnsw)
        own = labels == np.arange(n)[:, None]
        own[~own.any(axis=1), -1] = True
        idx = labels[~own].reshape(n, 10).astype(np.intp)
        out.append(f"hnswlib              {w:8.1f} {c:8.1f} {recall_at(X, idx, rows):9.4f}")
        print(out[-1], flush=True)
    except ImportError:
        out.append("hnswlib not installed")


def part_auto(sizes, out):
    for n in sizes:
        X, _ = clustered(n, 50, 0)
        we, ce, _ = timed(lambda: knn_query(X, X, 10, exclude_self=True))
        wa, ca, _ = timed(lambda: make_index(X, neighbors="approximate", n_neighbors=10).training_neighbors(10))
        out.append(f"{n:8,d}   exact {we:7.1f} s (cpu {ce:6.1f})   approximate {wa:7.1f} s (cpu {ca:6.1f})   "
                   f"ratio exact/approximate {we / wa:5.2f}")
        print(out[-1], flush=True)


def part_tsne(sizes, out, k=91):
    for n in sizes:
        X, _ = clustered(n, 50, 1)
        rows = np.random.default_rng(0).choice(n, 300, replace=False)
        runs = [("exact (BLAS blocks)", lambda: NeighborIndex(X).training_neighbors(k)[1]),
                ("ours NN-descent", lambda: make_index(X, neighbors="approximate", n_neighbors=k).training_neighbors(k)[1])]
        try:
            import pynndescent

            pynndescent.NNDescent(X[:3000], n_neighbors=k + 1)  # compile
            runs.append((f"pynndescent {pynndescent.__version__}",
                         lambda: pynndescent.NNDescent(X, n_neighbors=k + 1, random_state=0, n_jobs=-1).neighbor_graph[0][:, 1:]))
        except ImportError:
            out.append("pynndescent not installed")
        for name, fn in runs:
            w, c, idx = timed(fn)
            out.append(f"{n:8,d}  {name:24s} {w:8.1f} {c:8.1f} {recall_at(X, idx, rows):9.4f} {os.getloadavg()[0]:5.1f}")
            print(out[-1], flush=True)


def part_methods(n, n_iso, landmarks, out):
    from sklearn.manifold import trustworthiness

    X, _ = image_like(max(n, n_iso), seed=1)
    X = X.astype(np.float64)
    # compile the numba kernels (NN-descent, the neighbour screens) outside the timings
    ms.get_algorithm("isomap", neighbors="approximate", n_neighbors=10, n_landmarks=100,
                     random_state=0).fit(X[:3000])
    cases = [("laplacian_eigenmaps", n, {"n_neighbors": 10}), ("isomap", n_iso, {"n_neighbors": 10})]
    if landmarks:
        cases.append(("isomap", n, {"n_neighbors": 10, "n_landmarks": landmarks, "random_state": 0}))
    for algo, m, kw in cases:
        Xm = X[:m]
        rows = np.random.default_rng(0).choice(m, min(m, 5000), replace=False)
        res = {}
        for nb in ("exact", "approximate"):
            w, c, est = timed(lambda: ms.get_algorithm(algo, neighbors=nb, **kw).fit(Xm))
            tw = trustworthiness(Xm[rows], est.embedding_[rows], n_neighbors=10)
            res[nb] = w
            phases = ", ".join(f"{k} {v:.1f}" for k, v in est.timings_.items())
            what = algo if "n_landmarks" not in kw else f"isomap L={kw['n_landmarks']}"
            out.append(f"{what:20s} {m:7,d} {nb:12s} {w:8.1f} {c:8.1f} trust {tw:.4f}  [{phases}]")
            print(out[-1], flush=True)
        out.append(f"{what:20s} speed-up approximate vs exact: {res['exact'] / res['approximate']:.2f}x")
        print(out[-1], flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", nargs="+", default=["recall", "auto", "tsne", "methods"])
    ap.add_argument("--n-images", type=int, default=70_000)
    ap.add_argument("--auto-sizes", type=int, nargs="+", default=[5_000, 10_000, 20_000, 40_000])
    ap.add_argument("--tsne-sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--n-methods", type=int, default=50_000)
    ap.add_argument("--n-isomap", type=int, default=8_000,
                    help="points of the classic Isomap (n x n geodesics)")
    ap.add_argument("--isomap-landmarks", type=int, default=1_000,
                    help="Landmark Isomap at --n-methods points with this many landmarks (0: not run)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "neighbors.txt"))
    args = ap.parse_args(argv)
    out = [f"neighbours benchmark; python {platform.python_version()}, numpy {np.__version__}, "
           f"{os.cpu_count()} cores (shared machine, load {os.getloadavg()[0]:.1f} at start)", ""]
    if "recall" in args.parts:
        out += [f"10-NN graph of {args.n_images:,} x 784 image-like points", f"{'':20s} {'wall s':>8s} "
                f"{'cpu s':>8s} {'recall@10':>9s}"]
        part_recall(args.n_images, out)
        out.append("")
    if "auto" in args.parts:
        out.append("10-NN graph of clustered 50-d data, exact (BLAS blocks) vs approximate (NN-descent)")
        part_auto(args.auto_sizes, out)
        out.append("")
    if "tsne" in args.parts:
        out += ["91-NN graph of clustered 50-d data (t-SNE, perplexity 30)",
                f"{'n':>8s}  {'':24s} {'wall s':>8s} {'cpu s':>8s} {'recall@10':>9s} {'load':>5s}"]
        make_index(clustered(3000, 50, 5)[0], neighbors="approximate", n_neighbors=91)  # compile
        part_tsne(args.tsne_sizes, out)
        out.append("")
    if "methods" in args.parts:
        out.append("neighbour methods on image-like data, exact vs approximate neighbours (wall s, cpu s)")
        part_methods(args.n_methods, args.n_isomap, args.isomap_landmarks, out)
        out.append("")
    out.append(f"load average at the end {os.getloadavg()[0]:.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(out) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
