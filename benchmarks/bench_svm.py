"""SVM benchmark against scikit-learn's SVC (libsvm), same data, same run.

    .venv/bin/python benchmarks/bench_svm.py            # digits 1,797 x 64, 10 classes, rbf
    .venv/bin/python benchmarks/bench_svm.py --quick    # the first 600 digits

numba is warmed up (one small fit) before timing, and said so. Each timing is the best of
``--repeat`` runs, ours and scikit-learn's alternating; the ratio is ours / scikit-learn (below
1: faster). The decision functions and the predictions are compared. Results go to
benchmarks/results/svm.txt (or --out).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import duel, write_report  # noqa: E402

import numpy as np  # noqa: E402



def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "svm.txt"))
    args = ap.parse_args(argv)

    from sklearn.datasets import load_digits
    from sklearn.svm import SVC

    import manifold_studio as ms

    X, y = load_digits(return_X_y=True)
    if args.quick:
        X, y = X[:600], y[:600]
    lines = [f"SVM benchmark ({'quick' if args.quick else 'full'}), {time.strftime('%Y-%m-%d %H:%M')}, "
             f"{platform.machine()}, Python {platform.python_version()}, {os.cpu_count()} CPU(s), "
             f"load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}",
             f"digits {X.shape[0]:,} x {X.shape[1]}, {len(np.unique(y))} classes, rbf, gamma='scale', C=1, tol=1e-3"]
    t = time.perf_counter()
    ms.get_algorithm("svm").fit(X[:50], y[:50])
    lines.append(f"numba warm-up (one small fit, compile or cache load): {time.perf_counter() - t:.2f} s (not timed below)")

    ours_t, ours, sk_t, sk = duel(lambda: ms.get_algorithm("svm", kernel="rbf").fit(X, y),
                                  lambda: SVC(kernel="rbf").fit(X, y), args.repeat)
    diff = np.abs(ours.decision_function(X) - sk.decision_function(X)).max()
    agree = float(np.mean(ours.predict(X) == sk.predict(X)))
    lines.append(f"fit: ours {ours_t:.3f} s, scikit-learn SVC {sk_t:.3f} s, ratio {ours_t / sk_t:.2f}")
    lines.append(f"  support vectors {ours.support_.size} vs {sk.support_.size}; max |decision diff| "
                 f"{diff:.2e}; predictions agree {agree:.4f}")
    lines.append("  (ovr scores are votes + confidence: a pair decision within tol of 0 on the other side "
                 "moves a vote, hence a difference of 1 at tol=1e-3; tests compare at tol=1e-6)")
    pt, _, spt, _ = duel(lambda: ours.decision_function(X), lambda: sk.decision_function(X), args.repeat)
    lines.append(f"decision_function on the training set: ours {pt:.3f} s, scikit-learn {spt:.3f} s, "
                 f"ratio {pt / spt:.2f}")
    write_report(lines, args.out)


if __name__ == "__main__":
    main()
