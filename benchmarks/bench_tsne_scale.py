"""t-SNE at scale: ours against openTSNE with ``n_jobs=-1`` (both cores), side by side in one run.

    nice -n 19 .venv/bin/python benchmarks/bench_tsne_scale.py                 # 10,000 and 100,000 x 50
    nice -n 19 .venv/bin/python benchmarks/bench_tsne_scale.py --sizes 10000   # one size
    nice -n 19 .venv/bin/python benchmarks/bench_tsne_scale.py --sizes 1000000 --ours-only \
        --out benchmarks/results/tsne_1m.txt                                       # ours alone, peak memory

Clustered data as benchmarks/bench_tsne.py makes (10 Gaussian clusters in 50 dimensions),
perplexity 30, 1000 iterations (250 with early exaggeration 12), PCA start, both methods with
FFT-interpolated gradients. Ours runs with its defaults (``neighbors='auto'``: for its 91
neighbours exact, float32-screened, below about 184,000 points, NN-descent above; its kernels
split over both cores); openTSNE with its defaults, ``n_jobs=-1`` (Annoy neighbours above 1,000
points) and ``n_iter=750``, so that both run 1000 iterations (openTSNE's own default is 500
after the 250 exaggerated ones). For each size: wall and process CPU seconds (the machine is
shared), the ratio ours / openTSNE, trustworthiness (10 neighbours) on the same 5,000-point
sample of both maps, our phase timings (neighbours, affinities, optimisation) and our
neighbours' recall@10. ``--ours-only`` fits ours alone in this process and reports its peak
resident memory (``resource.getrusage`` maxrss; ``--tracemalloc``: also the peak of traced
allocations, which slows the fit a little).
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
    ap.add_argument("--ours-only", action="store_true")
    ap.add_argument("--tracemalloc", action="store_true")
    args = ap.parse_args(argv)
    if args.ours_only:
        return ours_only(args)
    import openTSNE

    lines = [f"t-SNE at scale, ours vs openTSNE {openTSNE.__version__} (n_jobs=-1); python "
             f"{platform.python_version()}, numpy {np.__version__}, {os.cpu_count()} cores (shared "
             f"machine, load {os.getloadavg()[0]:.1f} at start; both run under the same load, alternating)",
             "clustered 50-d data, perplexity 30, 1000 iterations; trustworthiness(10) on a 5,000-point sample", ""]
    Xw, _ = clustered(3000, 50, 5)
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0, neighbors="approximate").fit(Xw)
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0, neighbors="exact").fit(Xw)
    openTSNE.TSNE(perplexity=30, n_iter=60, n_jobs=-1, random_state=0).fit(Xw)
    head = (f"{'n':>8s} {'ours s':>8s} {'cpu s':>7s} {'openTSNE s':>10s} {'cpu s':>7s} {'ratio':>6s} "
            f"{'trust ours':>10s} {'trust oT':>9s} {'recall@10':>9s} {'load':>5s}  our phases (s)")
    lines.append(head)
    print("\n".join(lines), flush=True)
    for n in args.sizes:
        X, _ = clustered(n, 50, 1)
        rows = np.random.default_rng(0).choice(n, size=min(n, 5000), replace=False)
        t0, c0 = time.perf_counter(), time.process_time()
        ours = TSNE(perplexity=30, random_state=0).fit(X)
        t_ours, c_ours = time.perf_counter() - t0, time.process_time() - c0
        t0, c0 = time.perf_counter(), time.process_time()
        ot = openTSNE.TSNE(perplexity=30, n_iter=750, n_jobs=-1, random_state=0).fit(X)
        t_ot, c_ot = time.perf_counter() - t0, time.process_time() - c0
        tw_ours = sample_trust(X, ours.embedding_, rows)
        tw_ot = sample_trust(X, np.asarray(ot), rows)
        rec = "exact" if ours.neighbors_recall_ is None else f"{ours.neighbors_recall_:.4f}"
        phases = ", ".join(f"{k} {v:.1f}" for k, v in ours.timings_.items())
        line = (f"{n:8,d} {t_ours:8.1f} {c_ours:7.1f} {t_ot:10.1f} {c_ot:7.1f} {t_ours / t_ot:6.2f} "
                f"{tw_ours:10.4f} {tw_ot:9.4f} {rec:>9s} {os.getloadavg()[0]:5.1f}  {phases}")
        lines.append(line)
        print(line, flush=True)
    lines.append("")
    lines.append("ratio = ours / openTSNE wall time (below 1: ours faster); load average at the end "
                 f"{os.getloadavg()[0]:.1f}")
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")


def ours_only(args):
    """Our fit alone at each size: wall and CPU seconds, phases, recall, peak memory."""
    import resource
    import tracemalloc

    lines = [f"t-SNE at scale, ours only; python {platform.python_version()}, numpy {np.__version__}, "
             f"{os.cpu_count()} cores (shared machine, load {os.getloadavg()[0]:.1f} at start)"]
    Xw, _ = clustered(3000, 50, 5)
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0, neighbors="approximate").fit(Xw)
    print(lines[0], flush=True)
    for n in args.sizes:
        X, _ = clustered(n, 50, 1)
        if args.tracemalloc:
            tracemalloc.start()
        t0, c0 = time.perf_counter(), time.process_time()
        ours = TSNE(perplexity=30, random_state=0).fit(X)
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        traced = f", traced peak {tracemalloc.get_traced_memory()[1] / 2**20:,.0f} MB" if args.tracemalloc else ""
        tracemalloc.stop()
        rows = np.random.default_rng(0).choice(n, size=min(n, 5000), replace=False)
        rec = "exact" if ours.neighbors_recall_ is None else f"{ours.neighbors_recall_:.4f}"
        rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        phases = ", ".join(f"{k} {v:.1f}" for k, v in ours.timings_.items())
        line = (f"{n:,} x 50: wall {wall:.1f} s, cpu {cpu:.1f} s, trustworthiness {sample_trust(X, ours.embedding_, rows):.4f}, "
                f"recall@10 {rec}, peak RSS {rss:,.0f} MB (process){traced}; phases: {phases}; "
                f"load at the end {os.getloadavg()[0]:.1f}")
        lines.append(line)
        print(line, flush=True)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
