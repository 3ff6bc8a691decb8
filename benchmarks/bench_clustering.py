"""Clustering benchmarks, side by side with scikit-learn on the same generated data, same run.

    .venv/bin/python benchmarks/bench_clustering.py            # full sizes (about a minute)
    .venv/bin/python benchmarks/bench_clustering.py --quick    # small sizes (a few seconds)
    .venv/bin/python benchmarks/bench_clustering.py --threads 1 --out benchmarks/results/clustering_1thread.txt

Cases (full sizes): k-means on 100,000 x 10 blobs (k = 10, n_init = 10, k-means++), Gaussian
mixture (full covariances) on 20,000 points, Ward linkage on 5,000 points, silhouette on 10,000
points. Each timing is the best of ``--repeat`` runs, ours and scikit-learn's alternating; the
ratio is ours / scikit-learn (below 1: faster). Quality figures (inertia, mean log-likelihood,
silhouette value) are printed next to the times. Results go to benchmarks/results/clustering.txt
(or --out).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path



sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_time, duel, limit_threads  # noqa: E402  (sets BLAS threads before numpy loads)

_THREADS = limit_threads(sys.argv[1:])

import numpy as np  # noqa: E402




def blobs(n, d, centers, seed):
    from sklearn.datasets import make_blobs
    X, y = make_blobs(n_samples=n, n_features=d, centers=centers, cluster_std=1.5, random_state=seed)
    return X, y


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing, best kept")
    parser.add_argument("--threads", default=None,
                        help="BLAS/OpenMP threads for both libraries (default: the libraries' own choice)")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "clustering.txt"))
    args = parser.parse_args(argv)

    import sklearn
    from scipy.cluster import hierarchy
    from sklearn.cluster import AgglomerativeClustering, KMeans as SKKMeans
    from sklearn.metrics import adjusted_rand_score, silhouette_score
    from sklearn.mixture import GaussianMixture as SKGaussianMixture

    from manifold_studio.analysis import metrics
    from manifold_studio.algorithms.kmeans_core import kmeans
    from manifold_studio_builtins.gmm import GaussianMixture
    from manifold_studio_builtins.hierarchical import HierarchicalClustering

    scale = 10 if args.quick else 1
    lines = []

    def report(text=""):
        print(text, flush=True)
        lines.append(text)

    report(f"Manifold Studio clustering benchmark ({'quick' if args.quick else 'full'} sizes), "
           f"{time.strftime('%Y-%m-%d %H:%M')}")
    report(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
           f"{os.cpu_count()} CPU(s), threads {args.threads or 'default'}, load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    report("times: best of %d runs, ours and scikit-learn alternating; ratio = ours / scikit-learn "
           "(< 1 is faster)" % args.repeat)
    report()
    rows = []

    # k-means -------------------------------------------------------------------------------
    n = 100_000 // scale
    X, _ = blobs(n, 10, 10, seed=0)
    t_ours, r, t_sk, s = duel(lambda: kmeans(X, 10, n_init=10, random_state=0),
                              lambda: SKKMeans(10, n_init=10, random_state=0).fit(X), args.repeat)
    rows.append((f"k-means {n:,}x10, k=10, n_init=10", t_ours, t_sk,
                 f"inertia ours {r.inertia:.6e} / sklearn {s.inertia_:.6e} (rel. diff {r.inertia / s.inertia_ - 1:+.2e})"))
    t_ours, r, t_sk, s = duel(lambda: kmeans(X, 10, init="random", n_init=10, random_state=0),
                              lambda: SKKMeans(10, init="random", n_init=10, random_state=0).fit(X), args.repeat)
    rows.append((f"k-means random init {n:,}x10, k=10", t_ours, t_sk,
                 f"inertia ours {r.inertia:.6e} / sklearn {s.inertia_:.6e} (rel. diff {r.inertia / s.inertia_ - 1:+.2e})"))

    # Gaussian mixture ----------------------------------------------------------------------
    n = 20_000 // scale
    X, _ = blobs(n, 5, 5, seed=1)
    X = X @ np.random.default_rng(1).normal(size=(5, 5))
    for cov in ("full", "diag"):
        t_ours, g, t_sk, s = duel(
            lambda: GaussianMixture(n_components=5, covariance_type=cov, random_state=0).fit(X),
            lambda: SKGaussianMixture(5, covariance_type=cov, random_state=0).fit(X), args.repeat)
        rows.append((f"GMM {cov} {n:,}x5, 5 components", t_ours, t_sk,
                     f"mean log-lik ours {g.score(X):.6f} / sklearn {s.score(X):.6f}"))

    # Ward ----------------------------------------------------------------------------------
    n = 5_000 // scale
    X, _ = blobs(n, 10, 8, seed=2)
    t_ours, h, t_sk, s = duel(lambda: HierarchicalClustering(method="ward", n_clusters=8).fit(X),
                              lambda: AgglomerativeClustering(n_clusters=8, linkage="ward").fit(X), args.repeat)
    same = np.array_equal(h.linkage_matrix_, hierarchy.linkage(X, "ward"))
    rows.append((f"Ward {n:,}x10, 8 clusters", t_ours, t_sk,
                 f"linkage == scipy: {same}; ARI vs sklearn labels {adjusted_rand_score(s.labels_, h.labels_):.4f}"))
    t_ours, h = best_time(lambda: HierarchicalClustering(method="divisive", n_clusters=8, random_state=0).fit(X),
                          args.repeat)
    rows.append((f"divisive (ours only) {n:,}x10, 8 clusters", t_ours, np.nan,
                 f"inertia {h.inertia_:.6e}"))

    # silhouette ----------------------------------------------------------------------------
    n = 10_000 // scale
    X, y = blobs(n, 10, 10, seed=3)
    t_ours, a, t_sk, b = duel(lambda: metrics.silhouette(X, y), lambda: silhouette_score(X, y), args.repeat)
    rows.append((f"silhouette {n:,}x10, 10 clusters", t_ours, t_sk, f"ours {a:.12f} / sklearn {b:.12f}"))

    width = max(len(r[0]) for r in rows)
    report(f"{'case':<{width}}  {'ours s':>8}  {'sklearn s':>9}  {'ratio':>6}  quality")
    for name, t_o, t_s, quality in rows:
        ratio = t_o / t_s if np.isfinite(t_s) else np.nan
        report(f"{name:<{width}}  {t_o:8.3f}  {t_s:9.3f}  {ratio:6.2f}  {quality}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
