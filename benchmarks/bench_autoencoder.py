"""Autoencoder benchmark: our ``autoencoder`` against scikit-learn's MLPRegressor trained to
reproduce its input (X → X) with the same architecture, in one run.

    .venv/bin/python benchmarks/bench_autoencoder.py            # 20 epochs on each data set
    .venv/bin/python benchmarks/bench_autoencoder.py --quick    # 5 epochs

Architecture: d → hidden → code → hidden → d (ours: ``hidden_layer_sizes=(hidden,)``,
``n_components=code``, the decoder mirrored; scikit-learn: ``hidden_layer_sizes=(hidden, code,
hidden)``), tanh hidden and code units, identity output, squared loss, Adam (lr 1e-3), batch 200,
no L2, exactly ``--epochs`` epochs on both (no stopping rule fires). Fixed data: the 8×8 digits
scaled to [0, 1] (1,797 × 64), and 10,000 low-rank "images" of 784 pixels (28 × 28). Each timing
is the best of ``--repeat`` runs, ours and scikit-learn's alternating; samples per second =
rows × epochs / time. The reconstruction error (mean squared error over every pixel, computed
here the same way for both) shows the work is equal. Results go to
benchmarks/results/autoencoder.txt.
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


def low_rank_images(n: int, side: int = 28, rank: int = 20, seed: int = 0) -> np.ndarray:
    """n smooth non-negative images (side × side, flattened) in [0, 1] from ``rank`` patterns."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:side, 0:side] / side
    patterns = np.stack([np.exp(-((xx - cx) ** 2 + (yy - cy) ** 2) / (2 * s * s)).ravel()
                         for cx, cy, s in rng.uniform([0.1, 0.1, 0.05], [0.9, 0.9, 0.25], size=(rank, 3))])
    X = rng.gamma(1.0, 1.0, size=(n, rank)) @ patterns
    return X / X.max()


def main(argv=None):
    args = epoch_arguments(__doc__, 20, 5, "autoencoder.txt", argv)

    import sklearn
    from sklearn.datasets import load_digits
    from sklearn.neural_network import MLPRegressor

    import manifold_studio as ms

    epochs = args.epochs
    ms.get_algorithm("autoencoder")  # load the plugins before timing (no compiled code to warm up)
    digits = load_digits().data / 16.0
    images = low_rank_images(2_000 if args.quick else 10_000)
    cases = [("digits 1,797 x 64", digits, 32, 8), ("images 28x28", images, 128, 16)]
    lines = [f"Autoencoder benchmark ({'quick' if args.quick else 'full'}): {epochs} epochs, tanh, adam lr 1e-3, "
             "batch 200, no L2, d -> hidden -> code -> hidden -> d (scikit-learn: MLPRegressor X -> X)",
             f"python {platform.python_version()}, numpy {np.__version__}, scikit-learn {sklearn.__version__}, "
             f"threads {args.threads or 'default'}, {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}, "
             f"best of {args.repeat}; ratio = ours / scikit-learn time (below 1: faster)", ""]
    print("\n".join(lines), flush=True)
    rows = []
    for label, X, hidden, code in cases:
        n, d = X.shape

        def ours():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return ms.get_algorithm("autoencoder", n_components=code, hidden_layer_sizes=(hidden,),
                                        activation="tanh", learning_rate=1e-3, batch_size=200, alpha=0.0,
                                        max_iter=epochs, tol=0.0, n_iter_no_change=epochs,
                                        early_stopping="off", random_state=0).fit(X)

        def theirs():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return MLPRegressor(hidden_layer_sizes=(hidden, code, hidden), activation="tanh", solver="adam",
                                    learning_rate_init=1e-3, batch_size=200, alpha=0.0, max_iter=epochs,
                                    tol=0.0, n_iter_no_change=epochs, random_state=0).fit(X, X)

        t_o, e_o, t_s, e_s = duel(ours, theirs, args.repeat)
        mse_o = float(np.mean((e_o.inverse_transform(e_o.embedding_) - X) ** 2))
        mse_s = float(np.mean((e_s.predict(X) - X) ** 2))
        line = (f"{label:18s} {n:>6,} x {d:<4d} hidden {hidden:>3d} code {code:>2d}:  ours {t_o:7.3f} s "
                f"= {n * epochs / t_o:>9,.0f} samples/s  sklearn {t_s:7.3f} s = {n * epochs / t_s:>9,.0f} samples/s  "
                f"ratio {t_o / t_s:5.2f}  MSE ours {mse_o:.5f} sklearn {mse_s:.5f}")
        print(line, flush=True)
        rows.append(line)
    text = "\n".join(lines + rows) + "\n"
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text)
    print(f"\nwritten to {args.out}")


if __name__ == "__main__":
    main()
