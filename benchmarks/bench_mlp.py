"""MLP benchmark: our ``mlp`` against scikit-learn's MLPClassifier on the handwritten digits
(sklearn's load_digits, 1,797 x 64, scaled to [0, 1]), same architecture, solver, epochs, batch size,
learning rate and L2, early stopping off, in one run.

    .venv/bin/python benchmarks/bench_mlp.py             # (100,) relu and sigmoid, adam, 200 epochs
    .venv/bin/python benchmarks/bench_mlp.py --quick     # 30 epochs
    .venv/bin/python benchmarks/bench_mlp.py --threads 1

Both are trained on a fixed 75 % of the rows and scored on the other 25 %. Both run exactly
``--epochs`` epochs (n_iter_no_change = epochs, so neither stopping rule fires) — equal work —
and also with the libraries' default stopping rule (tol = 1e-4, 10 epochs). Each timing is the
best of ``--repeat`` runs, ours and scikit-learn's alternating; ratio = ours / scikit-learn
(below 1: faster). No compiled code is involved (no warm-up needed): both spend their time in
the same float64 BLAS products; ours avoids per-batch Python overhead (one flat parameter vector,
preallocated layer buffers, in-place optimiser steps). Results go to benchmarks/results/mlp.txt.
"""
from __future__ import annotations

import os
import platform
import sys
import warnings
from pathlib import Path



sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import duel, epoch_arguments, limit_threads  # noqa: E402  (sets BLAS threads before numpy loads)

_THREADS = limit_threads(sys.argv[1:])

import numpy as np  # noqa: E402



def main(argv=None):
    args = epoch_arguments(__doc__, 200, 30, "mlp.txt", argv)

    import sklearn
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPClassifier

    import manifold_studio as ms

    epochs = args.epochs
    X, y = load_digits(return_X_y=True)
    X = X / 16.0
    perm = np.random.default_rng(0).permutation(len(y))
    cut = int(0.75 * len(y))
    Xtr, ytr, Xte, yte = X[perm[:cut]], y[perm[:cut]], X[perm[cut:]], y[perm[cut:]]

    lines = [f"MLP benchmark ({'quick' if args.quick else 'full'}) — digits {Xtr.shape[0]} train / "
             f"{Xte.shape[0]} test x 64, hidden (100,), adam, lr 0.001, batch 200, alpha 1e-4, early stopping off",
             f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
             f"threads {args.threads or 'default'}, best of {args.repeat}; no numba in this path (no warm-up needed)",
             "ratio = ours / scikit-learn time (below 1: faster); accuracy on the held-out 25 %", ""]
    print("\n".join(lines))
    rows = []
    for activation, sk_act in (("relu", "relu"), ("sigmoid", "logistic")):
        for rule, extra in (("fixed epochs", {"n_iter_no_change": epochs}), ("default stopping", {})):
            common = dict(max_iter=epochs, batch_size=200, alpha=1e-4, tol=1e-4, **extra)

            def ours():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return ms.get_algorithm("mlp", hidden_layer_sizes=(100,), activation=activation,
                                            solver="adam", learning_rate=0.001, random_state=0,
                                            **common).fit(Xtr, ytr)

            def theirs():
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    return MLPClassifier((100,), activation=sk_act, solver="adam", learning_rate_init=0.001,
                                         random_state=0, **common).fit(Xtr, ytr)

            t_o, e_o, t_s, e_s = duel(ours, theirs, args.repeat)
            acc_o, acc_s = e_o.score(Xte, yte), e_s.score(Xte, yte)
            line = (f"{activation:8s} {rule:17s} ours {t_o:7.3f} s ({e_o.n_iter_:3d} epochs, acc {acc_o:.4f})  "
                    f"sklearn {t_s:7.3f} s ({e_s.n_iter_:3d} epochs, acc {acc_s:.4f})  "
                    f"ratio {t_o / t_s:5.2f}  per-epoch ratio {(t_o / e_o.n_iter_) / (t_s / e_s.n_iter_):5.2f}  "
                    f"acc diff {acc_o - acc_s:+.4f}")
            print(line, flush=True)
            rows.append(line)
    text = "\n".join(lines + rows) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
