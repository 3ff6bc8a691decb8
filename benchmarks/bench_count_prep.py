"""Count preparation and PCA side by side with scanpy (the first half of issue 32's single-cell
pipeline; UMAP on the PCA map is benchmarked in bench_umap.py).

    .venv/bin/python benchmarks/bench_count_prep.py                 # 100,000 cells x 2,000 genes
    .venv/bin/python benchmarks/bench_count_prep.py --cells 20000   # quick

A sparse negative-binomial count matrix (10 cell types, each with its own 100 marker genes raised
fourfold) is prepared the same way by both: normalize_total (median total), log1p, the 1,000
columns of highest variance, PCA with 50 components. Manifold Studio runs
``make_pipeline("normalize_total", "log", ("select_columns", {"top_k": 1000}), pca)`` on the CSR
matrix; scanpy runs ``sc.pp.normalize_total``, ``sc.pp.log1p``, the same 1,000 columns (variance
computed by scanpy's ``sc.pp.highly_variable_genes(flavor="seurat", n_top_genes=...)`` is another
ranking, so the columns are chosen once, by variance, for both) and ``sc.pp.pca(n_comps=50)``.
Reported: wall time of each (best of --repeat), the largest difference of the prepared matrices,
and the agreement of the two PCA maps (the Procrustes disparity of the first 10 components, and the
ARI of k-means with 10 clusters on each map against the cell types). Results go to
benchmarks/results/count_prep.txt (or --out).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent


def counts(n_cells: int, n_genes: int, seed: int = 0):
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    types = rng.integers(0, 10, n_cells)
    mean = np.full((10, n_genes), 0.3)
    for t in range(10):
        mean[t, t * 100:(t + 1) * 100] *= 4.0
    depth = rng.lognormal(0.0, 0.3, n_cells)   # cell depth varies
    parts = []
    for lo in range(0, n_cells, 10_000):   # in blocks: the dense counts of all cells would not fit
        mu = mean[types[lo:lo + 10_000]] * depth[lo:lo + 10_000, None]
        parts.append(sp.csr_matrix(rng.negative_binomial(2, 2 / (2 + mu)).astype(np.float32)))
    return sp.vstack(parts, format="csr"), types


def best(fn, repeat):
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cells", type=int, default=100_000)
    ap.add_argument("--genes", type=int, default=2_000)
    ap.add_argument("--top", type=int, default=1_000)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--out", default=str(HERE / "results" / "count_prep.txt"))
    args = ap.parse_args(argv)
    import anndata
    import scanpy as sc
    from scipy.linalg import orthogonal_procrustes
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_rand_score

    import manifold_studio as ms

    X, types = counts(args.cells, args.genes)

    def ours():
        pipe = ms.make_pipeline("normalize_total", "log", ("select_columns", {"top_k": args.top}),
                                ms.get_algorithm("pca", n_components=50, random_state=0))
        pipe.fit(X)
        return pipe

    def theirs():
        ad = anndata.AnnData(X.copy())
        sc.pp.normalize_total(ad)
        sc.pp.log1p(ad)
        Y = ad.X
        mean = np.asarray(Y.mean(axis=0)).ravel()
        var = np.asarray(Y.multiply(Y).mean(axis=0)).ravel() - mean ** 2
        keep = np.sort(np.argsort(-var, kind="stable")[:args.top])
        ad = ad[:, keep].copy()
        sc.pp.pca(ad, n_comps=50, random_state=0)
        return ad, keep

    t_ours, pipe = best(ours, args.repeat)
    t_scanpy, (ad, keep) = best(theirs, args.repeat)
    ours_cols = [int(c[1:]) for c in pipe.steps[2][1].columns_out_]
    prepared = pipe.prepare(X[:2000])
    diff = float(np.abs(prepared.toarray() - ad.X[:2000].toarray()).max()) if ours_cols == list(keep) else float("nan")
    A, B = pipe.embedding_[:, :10], ad.obsm["X_pca"][:, :10]
    A0, B0 = A - A.mean(0), B - B.mean(0)
    A0, B0 = A0 / np.linalg.norm(A0), B0 / np.linalg.norm(B0)
    R, _ = orthogonal_procrustes(B0, A0)
    disparity = float(((A0 - B0 @ R) ** 2).sum())
    ari = [adjusted_rand_score(types, KMeans(10, n_init=4, random_state=0).fit_predict(M)) for M in (A, B)]
    lines = [
        f"# bench_count_prep: normalize_total, log1p, top-{args.top} variance, PCA 50 on {args.cells:,} x "
        f"{args.genes:,} sparse counts ({X.nnz:,} stored), Manifold Studio vs scanpy {sc.__version__}",
        f"# {platform.platform()}, {os.cpu_count()} cores, Python {platform.python_version()}, numpy {np.__version__}",
        "",
        f"Manifold Studio  {t_ours:7.2f} s   (best of {args.repeat})",
        f"scanpy           {t_scanpy:7.2f} s   ratio {t_ours / t_scanpy:.2f}x",
        f"same {args.top} columns chosen: {ours_cols == list(keep)}; prepared rows max |difference| {diff:.2e}",
        f"PCA maps (first 10 components): Procrustes disparity {disparity:.2e}",
        f"k-means (10) on the map vs the cell types: ARI {ari[0]:.4f} (Manifold Studio), {ari[1]:.4f} (scanpy)",
    ]
    text = "\n".join(lines) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
