"""Spectral family vs scikit-learn, side by side in the same run on the same generated data.

    .venv/bin/python benchmarks/bench_spectral.py            # sizes of issue 3
    .venv/bin/python benchmarks/bench_spectral.py --quick    # small sizes (smoke test)

Prints a table (times are the best of ``--repeats`` runs; ratio = ours / scikit-learn, below 1
means faster) with quality figures, and writes it to benchmarks/results/spectral.txt.
Quality: ``procrustes`` is the relative residual between our and scikit-learn's result after
the best rotation/reflection/scale (0 = same map); ``spearman`` is |rho| between the swiss
roll's parameter and the best coordinate; ``ARI`` is the adjusted Rand index to the truth.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_time  # noqa: E402

import numpy as np  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

import manifold_studio as ms  # noqa: E402
from procrustes import procrustes_residual  # noqa: E402
from scipy.stats import spearmanr  # noqa: E402


def swiss_roll(n, seed):
    rng = np.random.default_rng(seed)
    t = rng.uniform(1.5 * np.pi, 4.5 * np.pi, n)
    return np.c_[t * np.cos(t), rng.uniform(0, 21, n), t * np.sin(t)], t



def rho(emb, t):
    return max(abs(spearmanr(emb[:, j], t)[0]) for j in range(emb.shape[1]))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="timing repeats (best kept)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "spectral.txt"))
    args = ap.parse_args(argv)
    import sklearn
    from sklearn import cluster, decomposition, manifold
    from sklearn.datasets import make_circles
    from sklearn.metrics import adjusted_rand_score

    q = 5 if args.quick else 1
    repeats = args.repeats or (1 if args.quick else 2)
    n_roll, n_new, n_kpca, n_mds, n_sc = 5000 // q, 10000 // q, 3000 // q, 5000 // q, 2000 // q
    X, t = swiss_roll(n_roll, 0)
    X_new, t_new = swiss_roll(n_new, 1)
    rows = []

    def add(task, size, ours_t, sk_t, quality):
        ratio = ours_t / sk_t if sk_t else float("nan")
        rows.append((task, size, ours_t, sk_t, ratio, quality))
        print(f"{task:<38} {size:>14} {ours_t:9.3f} {sk_t if sk_t else float('nan'):9.3f} {ratio:7.2f}  {quality}",
              flush=True)

    print(f"{'task':<38} {'size':>14} {'ours s':>9} {'sklearn s':>9} {'ratio':>7}  quality")

    # -- manifold learners on the swiss roll: fit and extension of new points --------------------
    specs = [
        ("isomap", dict(n_neighbors=10), lambda: manifold.Isomap(n_neighbors=10, n_components=2)),
        ("lle", dict(n_neighbors=10), lambda: manifold.LocallyLinearEmbedding(n_neighbors=10, n_components=2)),
        ("laplacian_eigenmaps", dict(n_neighbors=10),
         lambda: manifold.SpectralEmbedding(n_components=2, n_neighbors=10, random_state=0)),
    ]
    throughput = {}
    for algo, params, make_sk in specs:
        t_ours, ours = best_time(lambda: ms.get_algorithm(algo, **params).fit(X), repeats)
        t_sk, sk = best_time(lambda: make_sk().fit(X), repeats)
        add(f"{algo} fit", f"{n_roll:,}", t_ours, t_sk,
            f"procrustes={procrustes_residual(sk.embedding_, ours.embedding_):.2e} "
            f"spearman ours={rho(ours.embedding_, t):.4f} sklearn={rho(sk.embedding_, t):.4f}")
        te_ours, ext = best_time(lambda: ours.extend(X_new), repeats)
        throughput[algo] = n_new / te_ours
        if hasattr(sk, "transform"):
            te_sk, ext_sk = best_time(lambda: sk.transform(X_new), repeats)
            add(f"{algo} extend", f"{n_new:,} on {n_roll:,}", te_ours, te_sk,
                f"procrustes={procrustes_residual(ext_sk, ext):.2e} spearman ours={rho(ext, t_new):.4f}")
        else:
            add(f"{algo} extend", f"{n_new:,} on {n_roll:,}", te_ours, None,
                f"(scikit-learn has no transform) spearman ours={rho(ext, t_new):.4f}")

    # -- kernel PCA -----------------------------------------------------------------------------
    Xk = X[:n_kpca]
    gamma = 0.01
    t_ours, ours = best_time(lambda: ms.get_algorithm("kernel_pca", kernel="rbf", gamma=gamma).fit(Xk), repeats)
    t_sk, sk = best_time(lambda: decomposition.KernelPCA(n_components=2, kernel="rbf", gamma=gamma).fit(Xk), repeats)
    add("kernel_pca fit (rbf)", f"{n_kpca:,}", t_ours, t_sk,
        f"procrustes={procrustes_residual(sk.transform(Xk), ours.embedding_, scale=False):.2e}")
    te_ours, ext = best_time(lambda: ours.extend(X_new), repeats)
    te_sk, ext_sk = best_time(lambda: sk.transform(X_new), repeats)
    throughput["kernel_pca"] = n_new / te_ours
    add("kernel_pca extend", f"{n_new:,} on {n_kpca:,}", te_ours, te_sk,
        f"procrustes={procrustes_residual(ext_sk, ext, scale=False):.2e}")

    # -- classical MDS ----------------------------------------------------------------------------
    Xm = X[:n_mds]
    t_ours, ours = best_time(lambda: ms.get_algorithm("mds").fit(Xm), repeats)
    if hasattr(manifold, "ClassicalMDS"):
        t_sk, sk = best_time(lambda: manifold.ClassicalMDS(n_components=2).fit(Xm), repeats)
        add("mds fit (euclidean)", f"{n_mds:,}", t_ours, t_sk,
            f"procrustes={procrustes_residual(sk.embedding_, ours.embedding_, scale=False):.2e}")
    else:
        add("mds fit (euclidean)", f"{n_mds:,}", t_ours, None, "(no ClassicalMDS in this scikit-learn)")
    from scipy.spatial.distance import cdist

    D = cdist(Xm, Xm)
    t_ours, ours_p = best_time(lambda: ms.get_algorithm("mds", dissimilarity="precomputed").fit(D), 1)
    add("mds fit (precomputed)", f"{n_mds:,}", t_ours, None,
        f"procrustes to euclidean={procrustes_residual(ours.embedding_, ours_p.embedding_):.2e}")
    te_ours, _ = best_time(lambda: ours.extend(X_new), repeats)
    throughput["mds"] = n_new / te_ours

    # -- spectral clustering ----------------------------------------------------------------------
    Xc, yc = make_circles(n_sc, factor=0.5, noise=0.05, random_state=0)
    sigma = 0.1
    t_ours, ours = best_time(lambda: ms.get_algorithm("spectral_clustering", n_clusters=2, sigma=sigma,
                                                       random_state=0).fit(Xc), repeats)
    t_sk, sk = best_time(lambda: cluster.SpectralClustering(n_clusters=2, gamma=1 / (2 * sigma ** 2),
                                                            random_state=0).fit(Xc), repeats)
    add("spectral_clustering fit (rbf, circles)", f"{n_sc:,}", t_ours, t_sk,
        f"ARI ours={adjusted_rand_score(yc, ours.labels_):.3f} sklearn={adjusted_rand_score(yc, sk.labels_):.3f}")
    Xc_new, yc_new = make_circles(n_new, factor=0.5, noise=0.05, random_state=1)
    te_ours, lab = best_time(lambda: ours.extend(Xc_new), repeats)
    add("spectral_clustering extend (labels)", f"{n_new:,} on {n_sc:,}", te_ours, None,
        f"(scikit-learn cannot) ARI ours={adjusted_rand_score(yc_new, lab):.3f}")

    # -- extension throughput against a 5,000-point training set ----------------------------------
    Xs, _ = swiss_roll(n_roll, 2)
    sc5 = ms.get_algorithm("spectral_clustering", n_clusters=2, sigma=3.0, random_state=0).fit(Xs)
    te, _ = best_time(lambda: sc5.extend(X_new), repeats)
    throughput["spectral_clustering"] = n_new / te
    kp5 = ms.get_algorithm("kernel_pca", kernel="rbf", gamma=gamma).fit(Xs)
    te, _ = best_time(lambda: kp5.extend(X_new), repeats)
    throughput["kernel_pca"] = n_new / te

    lines = [f"{'task':<38} {'size':>14} {'ours s':>9} {'sklearn s':>9} {'ratio':>7}  quality"]
    for task, size, a, b, r, quality in rows:
        lines.append(f"{task:<38} {size:>14} {a:9.3f} {b if b else float('nan'):9.3f} {r:7.2f}  {quality}")
    lines.append("")
    lines.append(f"Extension throughput against a {n_roll:,}-point training set, points per second:")
    for algo, v in throughput.items():
        lines.append(f"  {algo:<22} {v:12,.0f}")
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    header = (f"# bench_spectral.py{' --quick' if args.quick else ''}  {time.strftime('%Y-%m-%d %H:%M')}  "
              f"python {platform.python_version()}  numpy {np.__version__}  scikit-learn {sklearn.__version__}  "
              f"cores {os.cpu_count()}  load average at the end {load[0]:.2f}  best of {repeats}")
    text = header + "\n" + "\n".join(lines) + "\n"
    print("\n".join(lines[len(rows) + 1:]))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text)
    print(f"written to {out}")


if __name__ == "__main__":
    main()
