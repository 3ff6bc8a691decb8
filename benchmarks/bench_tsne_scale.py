"""t-SNE at scale: ours against openTSNE with ``n_jobs=-1`` (both cores), side by side in one run.

    nice -n 19 .venv/bin/python benchmarks/bench_tsne_scale.py                 # 10,000 and 100,000 x 50
    nice -n 19 .venv/bin/python benchmarks/bench_tsne_scale.py --sizes 10000   # one size

Clustered data as benchmarks/bench_tsne.py makes (10 Gaussian clusters in 50 dimensions),
perplexity 30, 1000 iterations (250 with early exaggeration 12), PCA start, both methods with
FFT-interpolated gradients. Ours runs with its defaults (``neighbors='auto'``: for its 91 neighbours exact below
about 61,000 points, NN-descent above; its kernels split over both cores); openTSNE with its
defaults and ``n_jobs=-1`` (Annoy neighbours above 1,000 points). For each size: wall time, the
ratio ours / openTSNE, trustworthiness (10 neighbours) on the same 5,000-point sample of both
maps, our phase timings (neighbours, affinities, optimisation) and our neighbours' recall@10.
openTSNE is installed for the benchmark only (never an application dependency). numba code is
compiled by a 3,000-point warm-up fit before timing. Results: benchmarks/results/tsne_scale.txt.
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
from manifold_studio_builtins.tsne import TSNE  # noqa: E402


def sample_trust(X, Y, rows):
    from sklearn.manifold import trustworthiness

    return trustworthiness(X[rows], Y[rows], n_neighbors=10)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10_000, 100_000])
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tsne_scale.txt"))
    args = ap.parse_args(argv)
    import openTSNE

    lines = [f"t-SNE at scale, ours vs openTSNE {openTSNE.__version__} (n_jobs=-1); python "
             f"{platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores (shared "
             f"machine, load {os.getloadavg()[0]:.1f} at start; both run under the same load, alternating)",
             "clustered 50-d data, perplexity 30, 1000 iterations; trustworthiness(10) on a 5,000-point sample", ""]
    Xw, _ = clustered(3000, 50, 5)
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0, neighbors="approximate").fit(Xw)
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0, neighbors="exact").fit(Xw)
    openTSNE.TSNE(perplexity=30, n_iter=60, n_jobs=-1, random_state=0).fit(Xw)
    head = (f"{'n':>8s} {'ours s':>8s} {'openTSNE s':>10s} {'ratio':>6s} {'trust ours':>10s} "
            f"{'trust oT':>9s} {'recall@10':>9s}  our phases (s)")
    lines.append(head)
    print("\n".join(lines), flush=True)
    for n in args.sizes:
        X, _ = clustered(n, 50, 1)
        rows = np.random.default_rng(0).choice(n, size=min(n, 5000), replace=False)
        t0 = time.perf_counter()
        ours = TSNE(perplexity=30, random_state=0).fit(X)
        t_ours = time.perf_counter() - t0
        t0 = time.perf_counter()
        ot = openTSNE.TSNE(perplexity=30, n_jobs=-1, random_state=0).fit(X)
        t_ot = time.perf_counter() - t0
        tw_ours = sample_trust(X, ours.embedding_, rows)
        tw_ot = sample_trust(X, np.asarray(ot), rows)
        rec = "exact" if ours.neighbors_recall_ is None else f"{ours.neighbors_recall_:.4f}"
        phases = ", ".join(f"{k} {v:.1f}" for k, v in ours.timings_.items())
        line = (f"{n:8,d} {t_ours:8.1f} {t_ot:10.1f} {t_ours / t_ot:6.2f} {tw_ours:10.4f} {tw_ot:9.4f} "
                f"{rec:>9s}  {phases}")
        lines.append(line)
        print(line, flush=True)
    lines.append("")
    lines.append("ratio = ours / openTSNE wall time (below 1: ours faster); load average at the end "
                 f"{os.getloadavg()[0]:.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
