"""Linear classifier benchmarks (perceptron, linear_classifier) side by side with scikit-learn,
same generated data, same run.

    .venv/bin/python benchmarks/bench_linear.py            # full sizes (about half a minute)
    .venv/bin/python benchmarks/bench_linear.py --quick    # small sizes (a few seconds)
    .venv/bin/python benchmarks/bench_linear.py --threads 1 --append   # BLAS on one thread for both

Cases (full sizes): the perceptron on 70,000 x 20 for 5 epochs in data order against
scikit-learn's Perceptron with the same schedule (shuffle=False, tol=None, eta0=tau, alpha=0,
max_iter=5), binary and 3 classes; the logistic loss on 50,000 x 20 with L-BFGS against
LogisticRegression (lbfgs, same C and tol), binary and multinomial; the squared loss against
RidgeClassifier (alpha = 1/C); the seed's Widrow-Hoff rule for 5 epochs against SGDClassifier
(squared_error, constant step, no penalty, no shuffle); the rbf kernel perceptron (ours only).
The compiled (numba) loops are warmed up by one small fit before any timing. Each timing is
the best of ``--repeat`` runs, ours and scikit-learn's alternating; ratio = ours / scikit-learn
(below 1: faster). The quality column gives the largest coefficient difference relative to
scikit-learn's largest coefficient, and both accuracies. Results go to
benchmarks/results/linear.txt (or --out).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
import warnings
from pathlib import Path



sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import duel, limit_threads  # noqa: E402  (sets BLAS threads before numpy loads)

_THREADS = limit_threads(sys.argv[1:])

import numpy as np  # noqa: E402



def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small sizes (smoke test)")
    parser.add_argument("--repeat", type=int, default=5, help="runs per timing, best kept")
    parser.add_argument("--threads", default=None,
                        help="BLAS/OpenMP threads for both libraries (default: the libraries' own choice)")
    parser.add_argument("--append", action="store_true", help="append to --out instead of replacing it")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "linear.txt"))
    args = parser.parse_args(argv)

    import sklearn
    from sklearn.datasets import make_classification
    from sklearn.linear_model import LogisticRegression, Perceptron as SKPerceptron, RidgeClassifier, SGDClassifier

    from manifold_studio_builtins.linear_classifier import LinearClassifier
    from manifold_studio_builtins.perceptron import Perceptron

    warnings.simplefilter("ignore")      # convergence warnings of fixed-epoch schedules
    scale = 10 if args.quick else 1
    lines = []

    def report(text=""):
        print(text, flush=True)
        lines.append(text)

    report(f"Manifold Studio linear classifier benchmark ({'quick' if args.quick else 'full'} sizes), "
           f"{time.strftime('%Y-%m-%d %H:%M')}")
    report(f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
           f"{os.cpu_count()} CPU(s), threads {args.threads or 'default'}, load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    report("times: best of %d runs, ours and scikit-learn alternating; ratio = ours / scikit-learn "
           "(< 1 is faster)" % args.repeat)
    Xw, yw = make_classification(200, 5, n_classes=3, n_informative=3, random_state=0)
    t = time.perf_counter()
    Perceptron(max_epochs=2).fit(Xw, yw)
    Perceptron(max_epochs=2, kernel="rbf").fit(Xw, yw)
    LinearClassifier(solver="seed", max_iter=2).fit(Xw, yw)
    report(f"numba warm-up (one small fit of each compiled loop, not timed below): {time.perf_counter() - t:.2f} s")
    report()
    rows = []

    def quality(ours, theirs, X, y):
        c_o, c_s = np.asarray(ours.coef_), np.reshape(theirs.coef_, np.shape(ours.coef_))
        diff = np.abs(c_o - c_s).max() / np.abs(c_s).max()
        return f"coef rel. diff {diff:.1e}; accuracy ours {ours.score(X, y):.4f} / sklearn {theirs.score(X, y):.4f}"

    # perceptron -------------------------------------------------------------------------------
    n = 70_000 // scale
    for k in (2, 3):
        X, y = make_classification(n, 20, n_informative=10, n_classes=k, random_state=k)
        t_o, o, t_s, s = duel(lambda: Perceptron(max_epochs=5).fit(X, y),
                              lambda: SKPerceptron(shuffle=False, tol=None, eta0=1.0, alpha=0.0, max_iter=5).fit(X, y),
                              args.repeat)
        rows.append((f"perceptron {n:,}x20, {k} classes, 5 epochs", t_o, t_s, quality(o, s, X, y)))

    # logistic, L-BFGS -----------------------------------------------------------------------
    n = 50_000 // scale
    for k in (2, 3):
        X, y = make_classification(n, 20, n_informative=10, n_classes=k, random_state=10 + k)
        t_o, o, t_s, s = duel(lambda: LinearClassifier(loss="logistic", C=1.0).fit(X, y),
                              lambda: LogisticRegression(C=1.0).fit(X, y), args.repeat)
        rows.append((f"logistic lbfgs {n:,}x20, {k} classes{' (multinomial)' if k > 2 else ''}", t_o, t_s,
                     quality(o, s, X, y) + f"; iterations {o.n_iter_} / {int(np.max(s.n_iter_))}"))

        # squared loss: exact ridge -----------------------------------------------------------
        t_o, o, t_s, s = duel(lambda: LinearClassifier(loss="squared", C=1.0).fit(X, y),
                              lambda: RidgeClassifier(alpha=1.0).fit(X, y), args.repeat)
        rows.append((f"squared (ridge) {n:,}x20, {k} classes", t_o, t_s, quality(o, s, X, y)))

    # the seed's Widrow-Hoff rule ----------------------------------------------------------------
    X, y = make_classification(n, 20, n_informative=10, random_state=20)
    X = (X - X.mean(0)) / X.std(0)
    t_o, o, t_s, s = duel(
        lambda: LinearClassifier(loss="squared", solver="seed", C=np.inf, learning_rate=1e-3, max_iter=5,
                                 tol=0.0).fit(X, y),
        lambda: SGDClassifier(loss="squared_error", penalty=None, learning_rate="constant", eta0=1e-3,
                              shuffle=False, tol=None, max_iter=5, average=False).fit(X, y),
        args.repeat)
    rows.append((f"Widrow-Hoff (seed) {n:,}x20, 5 epochs", t_o, t_s, quality(o, s, X, y)))

    # kernel perceptron (ours only) -----------------------------------------------------------
    m = 2_000 // scale
    X, y = make_classification(m, 20, n_informative=10, random_state=30)
    t = time.perf_counter()
    kp = Perceptron(kernel="rbf", max_epochs=50).fit(X, y)
    rows.append((f"kernel perceptron rbf {m:,}x20 (ours only)", time.perf_counter() - t, np.nan,
                 f"{kp.n_epochs_} epochs, converged {kp.converged_}, training accuracy {kp.score(X, y):.4f}"))

    width = max(len(r[0]) for r in rows)
    report(f"{'case':<{width}}  {'ours s':>8}  {'sklearn s':>9}  {'ratio':>6}  quality")
    for name, t_o, t_s, qual in rows:
        ratio = t_o / t_s if np.isfinite(t_s) else np.nan
        report(f"{name:<{width}}  {t_o:8.4f}  {t_s:9.4f}  {ratio:6.2f}  {qual}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("a" if args.append else "w", encoding="utf-8") as fh:
        fh.write(("\n" if args.append else "") + "\n".join(lines) + "\n")
    print(f"\nwritten to {out}")


if __name__ == "__main__":
    main()
