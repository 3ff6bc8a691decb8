"""UMAP vs umap-learn in the same run on the same generated image-like data (issue 24).

    nice -n 19 .venv/bin/python benchmarks/bench_umap.py                # 70,000 x 784, extend 10,000
    nice -n 19 .venv/bin/python benchmarks/bench_umap.py --n 20000 --n-new 5000

The data: benchmarks/image_like.py (10 classes of 28 x 28 images, each a shape of three strokes
moved and thickened: curved low-dimensional manifolds in [0, 1]^784 with pixel noise). Both fit
with n_neighbors=15, min_dist=0.1, n_components=2, random_state=0 (umap-learn then runs on one
job, as it does whenever a seed is given); ours with neighbors='auto' (approximate NN-descent
from 20,000 points of more than 15 features). Reported: fit time and ratio (ours / umap-learn),
our phases (neighbours with the method and recall@10, fuzzy graph, spectral start, SGD),
trustworthiness (10 neighbours) on a 5,000-point sample of the training points, and extending
n_new new points (ours) vs umap-learn's ``transform``, with the fraction of new points whose 10
nearest map neighbours are mostly of their own class. umap-learn is installed for tests and
benchmarks only. Numba code of both is compiled (a 2,000-point run) before timing. Results go
to the top of benchmarks/results/umap.txt, earlier results kept below.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from image_like import image_like  # noqa: E402
from manifold_studio_builtins.umap import UMAP  # noqa: E402

from manifold_studio.algorithms.neighbors import resolve_neighbors  # noqa: E402
from manifold_studio.algorithms.umap_graph import query_knn  # noqa: E402


def timed(fn):
    """(wall seconds, process CPU seconds over all threads, result). On a shared, overloaded
    machine the CPU seconds measure the work done; the wall time includes waiting for a core."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return time.perf_counter() - t0, time.process_time() - c0, out


def own_cluster_fraction(E_train, lab_train, E_new, lab_new, k=10):
    """Fraction of new points whose k nearest training points in the map mostly share their label."""
    from scipy.spatial import cKDTree

    _, idx = cKDTree(E_train).query(E_new, k=k)
    return float(np.mean((lab_train[idx] == lab_new[:, None]).mean(axis=1) > 0.5))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=70_000, help="training points")
    ap.add_argument("--n-new", type=int, default=10_000, help="points to extend")
    ap.add_argument("--sample", type=int, default=5_000, help="points for trustworthiness")
    ap.add_argument("--neighbors", default="auto", choices=("auto", "exact", "approximate"),
                    help="our neighbour search (default auto)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "umap.txt"))
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore")
    import umap as umap_learn
    from sklearn.manifold import trustworthiness

    X, lab = image_like(args.n + args.n_new)
    X64 = X.astype(np.float64)
    X_fit, X_new = X64[:args.n], X64[args.n:]
    lab_fit, lab_new = lab[:args.n], lab[args.n:]
    params = dict(n_neighbors=15, min_dist=0.1, n_components=2, random_state=0)
    auto = resolve_neighbors("auto", args.n, X.shape[1], "euclidean", params["n_neighbors"] - 1)
    print(f"neighbors='auto' at {args.n:,} x {X.shape[1]}: {auto}", flush=True)

    # compile both libraries' numba code first (a 2,000-point fit takes umap-learn's small-data
    # path; its search index's compiled query is built per fitted model, on the first transform);
    # ours with an approximate index too (NN-descent's kernels)
    UMAP(**params, neighbors="approximate").fit(X64[:2000]).extend(X64[2000:2100])
    umap_learn.UMAP(**params).fit(X[:2000]).transform(X[2000:2100])

    t_ours, c_ours, ours = timed(lambda: UMAP(**params, neighbors=args.neighbors).fit(X_fit))
    print(f"ours fitted in {t_ours:.1f} s: {ours.result_summary()}", flush=True)
    t_ref, c_ref, ref = timed(lambda: umap_learn.UMAP(**params).fit(X[:args.n]))
    sample = np.random.default_rng(1).choice(args.n, min(args.sample, args.n), replace=False)
    tw_ours = trustworthiness(X_fit[sample], ours.embedding_[sample], n_neighbors=10)
    tw_ref = trustworthiness(X_fit[sample], ref.embedding_[sample], n_neighbors=10)
    # extend / transform twice: the first transform of a fitted umap-learn model compiles its
    # index's search (reported); the second is the one compared
    te1_ours, _, _ = timed(lambda: ours.extend(X_new))
    te1_ref, _, _ = timed(lambda: ref.transform(X[args.n:]))
    te_ours, ce_ours, E_ours = timed(lambda: ours.extend(X_new))
    # the part of our extend that is the neighbour search of the fit's index
    tq_ours, cq_ours, _ = timed(lambda: query_knn(ours._index(), X_new, params["n_neighbors"] - 1))
    te_ref, ce_ref, E_ref = timed(lambda: ref.transform(X[args.n:]))
    own_ours = own_cluster_fraction(ours.embedding_, lab_fit, E_ours, lab_new)
    own_ref = own_cluster_fraction(ref.embedding_, lab_fit, E_ref, lab_new)
    ph = ours.timings_
    recall = "" if ours.neighbors_recall_ is None else f", recall@10 {ours.neighbors_recall_:.4f}"

    import sklearn
    lines = [
        f"UMAP benchmark: {args.n:,} x {X.shape[1]} image-like points (benchmarks/image_like.py), "
        f"n_neighbors=15, min_dist=0.1, random_state=0; extend {args.n_new:,} new points; "
        f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
        f"umap-learn {umap_learn.__version__} (benchmark only), {os.cpu_count()} cores (shared machine), "
        f"load {os.getloadavg()[0]:.1f}",
        "",
        "seconds: wall (CPU of all threads); ratios ours / umap-learn",
        f"{'':28s}{'fit s':>16s}{'ratio':>12s}{'trust(10)':>11s}{'extend s':>16s}{'ratio':>12s}{'own cluster':>13s}",
        f"{'ours':28s}{t_ours:8.1f} ({c_ours:5.1f}){t_ours / t_ref:5.2f} ({c_ours / c_ref:4.2f}){tw_ours:11.4f}"
        f"{te_ours:8.2f} ({ce_ours:5.1f}){te_ours / te_ref:5.2f} ({ce_ours / ce_ref:4.2f}){own_ours:13.3f}",
        f"{'umap-learn (1 job, seeded)':28s}{t_ref:8.1f} ({c_ref:5.1f}){1.0:5.2f} ({1.0:4.2f}){tw_ref:11.4f}"
        f"{te_ref:8.2f} ({ce_ref:5.1f}){1.0:5.2f} ({1.0:4.2f}){own_ref:13.3f}",
        f"ours by phase: neighbours {ph['neighbours']:.1f} s ({ours.neighbors_method_} with "
        f"neighbors={args.neighbors!r}{recall}), fuzzy graph {ph['fuzzy graph']:.1f} s, spectral start "
        f"{ph['spectral start']:.1f} s, SGD {ph['sgd']:.1f} s ({ours.n_iter_} epochs), start {ours.init_}",
        f"ours extend: neighbour search {tq_ours:.2f} s ({cq_ours:.1f} CPU), the rest (memberships, start, "
        f"SGD against the fixed map in threads) {te_ours - tq_ours:.2f} s ({ce_ours - cq_ours:.1f} CPU)",
        f"first extend / transform call (umap-learn compiles its index's search then): ours {te1_ours:.2f} s, "
        f"umap-learn {te1_ref:.2f} s",
        f"trustworthiness ours - umap-learn: {tw_ours - tw_ref:+.4f} (target >= -0.01); fit time ratio "
        f"{t_ours / t_ref:.2f} wall, {c_ours / c_ref:.2f} CPU (target <= 1); extend time ratio "
        f"{te_ours / te_ref:.2f} wall, {ce_ours / ce_ref:.2f} CPU (target <= 1)",
        "",
    ]
    text = "\n".join(lines)
    print(text)
    out = Path(args.out)
    earlier = out.read_text() if out.exists() else ""
    out.write_text(text + "\n" + earlier)


if __name__ == "__main__":
    main()
