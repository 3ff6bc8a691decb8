"""Sparse input and an ill-conditioned SVM against scikit-learn, same data, same run.

    .venv/bin/python benchmarks/bench_sparse_classify.py            # 4,000 x 50,000, 0.2 % filled
    .venv/bin/python benchmarks/bench_sparse_classify.py --quick    # 1,000 x 10,000

Text-like data (scipy.sparse CSR, 100 stored values per row, two classes from a sparse linear
rule with 5 % flipped labels): the perceptron (seed rule, data order, 10 epochs, as scikit-learn's
Perceptron(shuffle=False, tol=None, alpha=0)), the logistic linear classifier (L-BFGS) and the SVM
(linear and rbf kernels). Then issue 22's ill-conditioned SVM: a cubic kernel on unscaled
normal(100) data with random labels, default parameters (ours stops at libsvm's bound of 10^7 SMO
steps with a ConvergenceWarning). numba is warmed up before timing. Each timing is the best of
``--repeat`` runs, ours and scikit-learn's alternating; ratio = ours / scikit-learn.
Results go to benchmarks/results/sparse_classify.txt (or --out).
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
from timing import duel, write_report  # noqa: E402

import numpy as np  # noqa: E402
from scipy import sparse  # noqa: E402


def text_like(n, d, per_row, seed=0):
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), per_row)
    cols = rng.integers(0, d, size=rows.size)
    X = sparse.csr_matrix((rng.random(rows.size), (rows, cols)), shape=(n, d))
    w = np.zeros(d)
    w[rng.choice(d, 500, replace=False)] = rng.normal(size=500)
    y = (X @ w > 0).astype(int)
    flip = rng.random(n) < 0.05
    y[flip] = 1 - y[flip]
    return X, y


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "sparse_classify.txt"))
    args = ap.parse_args(argv)

    from sklearn.linear_model import LogisticRegression, Perceptron
    from sklearn.svm import SVC

    import manifold_studio as ms

    n, d = (1000, 10_000) if args.quick else (4000, 50_000)
    X, y = text_like(n, d, 100)
    lines = [f"Sparse classification benchmark ({'quick' if args.quick else 'full'}), {platform.machine()}, "
             f"Python {platform.python_version()}",
             f"CSR {n:,} x {d:,}, {X.nnz:,} stored values ({X.nnz / (n * d):.2%}), two classes"]
    t = time.perf_counter()
    for name, kw in (("perceptron", {}), ("svm", {}), ("linear_classifier", {"loss": "logistic"})):
        ms.get_algorithm(name, **kw).fit(X[:50], y[:50])
    lines.append(f"numba warm-up: {time.perf_counter() - t:.2f} s (not timed below)")
    cases = [
        ("perceptron, 10 epochs", lambda: ms.get_algorithm("perceptron", max_epochs=10).fit(X, y),
         lambda: Perceptron(shuffle=False, tol=None, alpha=0.0, eta0=1.0, max_iter=10).fit(X, y)),
        ("logistic, C=1, L-BFGS", lambda: ms.get_algorithm("linear_classifier", loss="logistic", tol=1e-6).fit(X, y),
         lambda: LogisticRegression(C=1.0, tol=1e-6).fit(X, y)),
        ("SVM linear, C=1", lambda: ms.get_algorithm("svm", kernel="linear").fit(X, y),
         lambda: SVC(kernel="linear").fit(X, y)),
        ("SVM rbf, C=1", lambda: ms.get_algorithm("svm").fit(X, y), lambda: SVC().fit(X, y)),
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for title, ours_fit, sk_fit in cases:
            ours_t, ours, sk_t, sk = duel(ours_fit, sk_fit, args.repeat)
            agree = float(np.mean(ours.predict(X) == sk.predict(X)))
            lines.append(f"{title}: ours {ours_t:.3f} s, scikit-learn {sk_t:.3f} s, ratio {ours_t / sk_t:.2f}; "
                         f"training predictions agree {agree:.4f}")

        rng = np.random.default_rng(0)
        Xi = rng.normal(loc=100, size=(100, 2))
        yi = rng.integers(0, 2, 100)
        ours_t, ours, sk_t, sk = duel(lambda: ms.get_algorithm("svm", kernel="poly").fit(Xi, yi),
                                      lambda: SVC(kernel="poly").fit(Xi, yi), 1)
    lines.append(f"ill-conditioned SVM (poly, normal(100) 100 x 2, random labels): ours {ours_t:.2f} s, "
                 f"{int(ours.n_iter_[0]):,} SMO steps, converged {ours.converged_}; scikit-learn {sk_t:.3f} s, "
                 f"{int(sk.n_iter_[0]):,} steps; ratio {ours_t / sk_t:.0f}")
    write_report(lines, args.out)


if __name__ == "__main__":
    main()
