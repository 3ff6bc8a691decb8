"""PCA, probabilistic PCA and NMF vs scikit-learn, side by side in one run on the same generated data.

    .venv/bin/python benchmarks/bench_decomposition.py            # sizes of issue 9
    .venv/bin/python benchmarks/bench_decomposition.py --quick    # small sizes (smoke test)

Prints a table (times are the best of ``--repeats`` runs; ratio = ours / scikit-learn, below 1
means faster) and writes it to benchmarks/results/decomposition.txt. Our ``fit`` also computes
the training embedding, so it is compared with scikit-learn's ``fit_transform`` (scikit-learn's
``fit`` alone is shown in the quality column). Quality: ``ev`` = largest relative difference of
the explained variances; NMF ``err`` = reconstruction_err_ (same meaning in both; lower is
better) after exactly the same number of iterations from the same kind of start (nndsvda).
Nothing here is compiled with numba, so there is no warm-up to do.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import warnings
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import best_time  # noqa: E402

import numpy as np  # noqa: E402

import manifold_studio as ms

ROOT = Path(__file__).resolve().parents[1]



def best_pair(ours, theirs, repeats):
    """Best times of two functions run alternately (a shared, busy machine loads both alike)."""
    t_a, t_b, out_a, out_b = float("inf"), float("inf"), None, None
    for _ in range(repeats):
        t, out_a = best_time(ours, 1)
        t_a = min(t_a, t)
        t, out_b = best_time(theirs, 1)
        t_b = min(t_b, t)
    return t_a, out_a, t_b, out_b


def low_rank(n, d, rank, seed, noise=0.5):
    """Images-like data: a decaying spectrum of rank ``rank`` plus noise."""
    rng = np.random.default_rng(seed)
    A = rng.normal(size=(n, rank)) * (0.9 ** np.arange(rank)) * 10
    return A @ rng.normal(size=(rank, d)) + noise * rng.normal(size=(n, d)) + rng.uniform(0, 5, d)


def non_negative(n, d, rank, seed):
    rng = np.random.default_rng(seed)
    return np.abs(rng.normal(size=(n, rank))) @ np.abs(rng.normal(size=(rank, d))) + 0.1 * np.abs(rng.normal(size=(n, d)))


def rel(a, b):
    return float(np.max(np.abs(np.asarray(a) / np.asarray(b) - 1)))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke test)")
    ap.add_argument("--repeats", type=int, default=None, help="timing repeats (best kept)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "decomposition.txt"))
    args = ap.parse_args(argv)
    import sklearn
    from sklearn.decomposition import NMF, PCA

    warnings.simplefilter("ignore")
    q = 10 if args.quick else 1
    repeats = args.repeats or (1 if args.quick else 3)
    rows = []
    lines = []

    def add(task, size, ours_t, sk_t, quality):
        ratio = ours_t / sk_t if sk_t else float("nan")
        rows.append((task, size, ours_t, sk_t, ratio, quality))
        line = f"{task:<34} {size:>20} {ours_t:9.3f} {sk_t:9.3f} {ratio:7.2f}  {quality}"
        lines.append(line)
        print(line, flush=True)
        save()

    def save(env="partial run"):
        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(f"# benchmarks/bench_decomposition.py ({env}; load average "
                       f"{os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)\n{header}\n" + "\n".join(lines) + "\n")

    header = f"{'task':<34} {'size':>20} {'ours s':>9} {'sklearn s':>9} {'ratio':>7}  quality"
    print(header)

    # -- PCA: tall (covariance), wide (Gram), square (randomized), small (full) --------------------
    cases = [("tall", 20000 // q, 784, 50), ("wide", 300, 20000 // q, 20),
             ("square", 3000 // q, 2000 // q, 20), ("small", 500, 50, 5)]
    for label, n, d, k in cases:
        X = low_rank(n, d, min(100, d, n), seed=0)
        t_ours, ours, t_sk, _ = best_pair(lambda: ms.get_algorithm("pca", n_components=k, random_state=0).fit(X),
                                          lambda: PCA(n_components=k, random_state=0).fit_transform(X), repeats)
        t_skf, sk = best_time(lambda: PCA(n_components=k, random_state=0).fit(X), 1)
        add(f"pca fit ({label}, {ours.svd_solver_})", f"{n:,}x{d:,}->{k}", t_ours, t_sk,
            f"ev={rel(ours.explained_variance_, sk.explained_variance_):.1e} sklearn={sk._fit_svd_solver} "
            f"sklearn fit only {t_skf:.3f}s")

    # -- probabilistic PCA, closed form: sklearn's PCA is the same model (score = its likelihood) ---
    n, d, k = 20000 // q, 784, 50
    X = low_rank(n, d, 100, seed=1)
    t_ours, ours, t_sk, _ = best_pair(lambda: ms.get_algorithm("ppca", n_components=k).fit(X),
                                      lambda: PCA(n_components=k).fit_transform(X), repeats)
    sk = PCA(n_components=k).fit(X)
    add("ppca fit (closed form)", f"{n:,}x{d:,}->{k}", t_ours, t_sk,
        f"noise_variance rel diff={abs(ours.noise_variance_ / sk.noise_variance_ - 1):.1e} (D-M vs min(n,d)-M: "
        f"same when n > d)")
    t_score, s_ours, t_skscore, s_sk = best_pair(lambda: ours.score(X), lambda: sk.score(X), repeats)
    add("ppca score", f"{n:,}x{d:,}->{k}", t_score, t_skscore, f"ours={s_ours:.6f} sklearn={s_sk:.6f}")

    # -- probabilistic PCA, EM with 10% missing values (no scikit-learn counterpart) -------------
    n_em, d_em = 2000 // q, 50
    Xe = low_rank(n_em, d_em, 5, seed=2)
    Xm = Xe.copy()
    Xm[np.random.default_rng(3).random(Xm.shape) < 0.1] = np.nan
    t_em, em = best_time(lambda: ms.get_algorithm("ppca", n_components=5, method="em", max_iter=100,
                                                  random_state=0).fit(Xm), 1)
    add("ppca EM, 10% missing", f"{n_em:,}x{d_em}->5", t_em, float("nan"),
        f"{em.n_iter_} iterations, {t_em / max(em.n_iter_, 1) * 1e3:.1f} ms each (no scikit-learn counterpart)")

    # -- NMF: 200 multiplicative-update iterations, same start -----------------------------------
    n, d, k = 2000 // q, 500, 20
    X = non_negative(n, d, k, seed=4)
    for loss, beta in (("frobenius", "frobenius"), ("kl", "kullback-leibler")):
        t_ours, ours, t_sk, sk = best_pair(
            lambda: ms.get_algorithm("nmf", n_components=k, loss=loss, max_iter=200, tol=0, random_state=0).fit(X),
            lambda: NMF(n_components=k, solver="mu", beta_loss=beta, init="nndsvda", max_iter=200, tol=0,
                        random_state=0).fit(X), repeats)
        add(f"nmf fit ({loss}, 200 it)", f"{n:,}x{d}->{k}", t_ours, t_sk,
            f"err ours={ours.reconstruction_err_:.6g} sklearn={sk.reconstruction_err_:.6g} "
            f"(iterations {ours.n_iter_} / {sk.n_iter_})")

    env = (f"numpy {np.__version__}, scikit-learn {sklearn.__version__}, python {platform.python_version()}, "
           f"{os.cpu_count()} cores, {'quick' if args.quick else 'full'} sizes, best of {repeats}")
    print(env)
    save(env)


if __name__ == "__main__":
    main()
