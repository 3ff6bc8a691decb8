"""Shared by the benchmark scripts: the BLAS thread limit of ``--threads`` (set before numpy
loads its BLAS) and the timings (best of several runs; ours and scikit-learn's alternating)."""
from __future__ import annotations

import os
import time


def limit_threads(argv) -> str | None:
    """Apply ``--threads N`` from ``argv`` to the BLAS/OpenMP environment; returns N or None.
    Call it before importing numpy."""
    threads = None
    for i, a in enumerate(argv):
        if a == "--threads" and i + 1 < len(argv):
            threads = argv[i + 1]
        elif a.startswith("--threads="):
            threads = a.split("=", 1)[1]
    if threads:
        for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ[var] = threads
    return threads


def best_time(func, repeat: int):
    """(best time over ``repeat`` runs, the last result)."""
    best, out = float("inf"), None
    for _ in range(repeat):
        t = time.perf_counter()
        out = func()
        best = min(best, time.perf_counter() - t)
    return best, out


def duel(ours, theirs, repeat: int):
    """Best times of two functions run alternately (a shared, busy machine loads both alike):
    (ours, its result, theirs, its result)."""
    best = [float("inf"), float("inf")]
    outs = [None, None]
    for _ in range(repeat):
        for i, func in enumerate((ours, theirs)):
            t = time.perf_counter()
            outs[i] = func()
            best[i] = min(best[i], time.perf_counter() - t)
    return best[0], outs[0], best[1], outs[1]


def epoch_arguments(doc: str, full: int, quick: int, result_name: str, argv=None):
    """The options of the neural-network benchmarks (``--quick``, ``--epochs``, ``--repeat``,
    ``--threads``, ``--out``), parsed; ``args.epochs`` is set (``full``, or ``quick`` with
    --quick) and ``args.out`` defaults to benchmarks/results/``result_name``."""
    import argparse
    from pathlib import Path

    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help=f"{quick} epochs (smoke test)")
    parser.add_argument("--epochs", type=int, default=None, help=f"epochs (default {full}, {quick} with --quick)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per timing, best kept")
    parser.add_argument("--threads", default=None, help="BLAS threads for both libraries")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / result_name))
    args = parser.parse_args(argv)
    args.epochs = args.epochs or (quick if args.quick else full)
    return args


def write_report(lines: list[str], out) -> str:
    """Print the report's ``lines`` and write them to the file ``out`` (its folder made)."""
    from pathlib import Path

    text = "\n".join(lines) + "\n"
    print(text, end="")
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    Path(out).write_text(text, encoding="utf-8")
    return text
