"""t-SNE vs scikit-learn (Barnes-Hut) and, when installed, openTSNE, in the same run on the same data.

    .venv/bin/python benchmarks/bench_tsne.py              # 10,000 x 50, perplexity 30 (issue 10)
    .venv/bin/python benchmarks/bench_tsne.py --quick      # 2,000 points (smoke test)
    .venv/bin/python benchmarks/bench_tsne.py --large      # also 100,000 points (time and memory)

Prints a table (ratio = ours / scikit-learn, below 1 means faster) with trustworthiness (10
neighbours) and the final KL, the speed of extending new points into the fitted map (points/s,
against openTSNE's ``transform`` when openTSNE is installed; it is never a dependency of the
application) and writes it to benchmarks/results/tsne.txt. Numba functions are compiled
(warm-up fit on 300 points) before timing.
"""
from __future__ import annotations

import argparse
import os
import platform
import resource
import sys
import time
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "plugins"))

from manifold_studio_builtins.tsne import TSNE  # noqa: E402


def clustered(n, d, seed, centers=10):
    rng = np.random.default_rng(seed)
    C = rng.normal(scale=6.0, size=(centers, d))
    lab = rng.integers(0, centers, n)
    return C[lab] + rng.normal(size=(n, d)), lab


def timed(fn):
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="2,000 points (a smoke test)")
    ap.add_argument("--large", action="store_true", help="also fit 100,000 points (slow)")
    ap.add_argument("--large-only", action="store_true",
                    help="only the 100,000-point fit (time and memory), written to results/tsne_large.txt")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "tsne.txt"))
    args = ap.parse_args(argv)
    import sklearn
    from sklearn.manifold import TSNE as SkTSNE
    from sklearn.manifold import trustworthiness
    try:
        import openTSNE
    except ImportError:
        openTSNE = None

    if args.large_only:
        return large_fit(Path(args.out).with_name("tsne_large.txt") if args.out == ap.get_default("out")
                         else Path(args.out))
    n = 2000 if args.quick else 10_000
    X, _ = clustered(2 * n, 50, 0)
    X_fit, X_new = X[:n], X[n:]
    lines = [f"t-SNE benchmark: {n:,} x 50 clustered (10 Gaussian clusters), perplexity 30, 1000 iterations; "
             f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
             f"openTSNE {openTSNE.__version__ + ' (installed for the benchmark only)' if openTSNE else 'not installed'}, "
             f"{os.cpu_count()} cores (shared machine), load {os.getloadavg()[0]:.1f}",
             "numba warmed up (a 300-point fit with method='fft' and 'exact') before timing", ""]
    TSNE(perplexity=30, method="fft", max_iter=60, random_state=0).fit(X[:300]).extend(X[300:310])
    TSNE(perplexity=30, method="exact", max_iter=10, random_state=0).fit(X[:300])

    rows = []
    t_ours, ours = timed(lambda: TSNE(perplexity=30, random_state=0).fit(X_fit))
    tw_ours = trustworthiness(X_fit, ours.embedding_, n_neighbors=10)
    rows.append(("ours (fft)", t_ours, tw_ours, ours.kl_divergence_))
    t_sk, sk = timed(lambda: SkTSNE(perplexity=30, init="pca", random_state=0, method="barnes_hut").fit(X_fit))
    tw_sk = trustworthiness(X_fit, sk.embedding_, n_neighbors=10)
    rows.append(("scikit-learn (BH)", t_sk, tw_sk, sk.kl_divergence_))
    if openTSNE is not None:
        t_ot, ot = timed(lambda: openTSNE.TSNE(perplexity=30, random_state=0, n_jobs=1).fit(X_fit))
        rows.append(("openTSNE (fft, 1 job)", t_ot, trustworthiness(X_fit, np.asarray(ot), n_neighbors=10), ot.kl_divergence))
    lines.append(f"{'method':24s} {'time s':>8s} {'ratio':>7s} {'trust(10)':>10s} {'KL':>8s}")
    for name, t, tw, kl in rows:
        lines.append(f"{name:24s} {t:8.2f} {t / t_sk:7.2f} {tw:10.4f} {kl:8.4f}")
    lines.append(f"trustworthiness ours - scikit-learn: {tw_ours - tw_sk:+.4f} (target >= -0.01); time ratio "
                 f"ours/scikit-learn {t_ours / t_sk:.2f} (target <= 1)")
    print("\n".join(lines), flush=True)

    t_ext, Z = timed(lambda: ours.extend(X_new))
    lines += ["", f"extend {len(X_new):,} new points into the {n:,}-point map (250 iterations each): "
              f"{t_ext:.2f} s = {len(X_new) / t_ext:,.0f} points/s"]
    if openTSNE is not None:
        t_ot_ext, _ = timed(lambda: ot.transform(X_new))
        lines.append(f"openTSNE transform: {t_ot_ext:.2f} s = {len(X_new) / t_ot_ext:,.0f} points/s; "
                     f"ratio ours/openTSNE (time) {t_ext / t_ot_ext:.2f}")
    print("\n".join(lines[-2:]), flush=True)

    if args.large:
        lines += ["", large_line()]
        print(lines[-1], flush=True)

    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n")
    print(f"written to {args.out}")


def large_line(N: int = 100_000) -> str:
    """Fit N clustered points (auto route: FFT) and say how long it took and how much memory."""
    XL, _ = clustered(N, 50, 1)
    tracemalloc.start()
    t_l, big = timed(lambda: TSNE(perplexity=30, random_state=0).fit(XL))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return (f"{N:,} x 50 (perplexity 30, 1000 iterations, method {big.method_ if hasattr(big, 'method_') else 'auto'}): "
            f"{t_l:.1f} s, KL {big.kl_divergence_:.4f}, peak traced numpy/python memory {peak / 2**20:.0f} MiB, "
            f"process max RSS {rss:.0f} MiB; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")


def large_fit(out: Path) -> None:
    line = large_line()
    print(line, flush=True)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("# benchmarks/bench_tsne.py --large-only\n" + line + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
