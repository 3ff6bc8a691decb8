"""Which long calls of a fit hold the GIL (issue 33, item 9), without a window.

    .venv/bin/python benchmarks/bench_fit_gil.py kernel_pca [n=20000] [seconds=25]

The fit runs in a worker thread on ``bench_ui``'s data (10 blobs in 10-D, non-negative) and
parameters while the main thread wakes every 5 ms; a gap between its wake-ups longer than that is
time it could not get the GIL (or a core). A watchdog thread, when it could not run for over
40 ms, records where the worker was at that moment (just after the call that held the GIL).
Prints the gaps (max, p99, count over 50 ms) and the longest holds with their stacks. The fit is
stopped at its next progress checkpoint after ``seconds``.
"""
from __future__ import annotations

import os
import sys
import threading
import time
import traceback
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import limit_threads  # noqa: E402  (sets BLAS threads before numpy loads)

limit_threads([])

import numpy as np  # noqa: E402

from bench_ui import FIT_PARAMS, blobs  # noqa: E402


class _Stop(Exception):
    pass


class _Progress:
    def __init__(self, stop: threading.Event):
        self.stop = stop

    def checkpoint(self, *args, **kwargs):
        if self.stop.is_set():
            raise _Stop()

    def partial(self, *args, **kwargs):
        self.checkpoint()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    import manifold_studio as ms

    algo = argv[0]
    n = int(argv[1]) if len(argv) > 1 else 20_000
    limit = float(argv[2]) if len(argv) > 2 else 25.0
    X, y = blobs(n, 10, seed=2)
    X = np.abs(X)
    params = dict(FIT_PARAMS.get(algo, {}))
    warm = {k: (2 if k in ("max_iter", "max_epochs") else v) for k, v in params.items()}
    Xw, yw = blobs(200, 10, seed=1)
    try:  # numba's one-off compilation is not the fit's
        ms.get_algorithm(algo, **warm).fit(np.abs(Xw), yw)
    except Exception:  # noqa: BLE001
        pass
    est = ms.get_algorithm(algo, **params)
    stop, done = threading.Event(), threading.Event()
    holds: Counter = Counter()
    worker: list[int] = []

    def work():
        worker.append(threading.get_ident())
        try:
            est.fit(X, y, progress=_Progress(stop))
        except _Stop:
            pass
        except Exception as exc:  # noqa: BLE001
            print(f"fit failed: {exc!r}")
        finally:
            done.set()

    def watch():
        last = time.perf_counter()
        while not done.wait(0.01):
            now = time.perf_counter()
            frame = sys._current_frames().get(worker[0]) if worker else None
            if now - last > 0.04 and frame is not None:
                stack = traceback.extract_stack(frame)[-4:]
                where = " <- ".join(f"{f.name}({f.filename.rsplit('/', 1)[-1]}:{f.lineno})" for f in reversed(stack))
                holds[(round((now - last) * 1000), where)] += 1
            last = now

    start = time.perf_counter()
    thread = threading.Thread(target=work)
    thread.start()
    threading.Thread(target=watch, daemon=True).start()
    ticks = [time.perf_counter()]
    while not done.is_set():
        time.sleep(0.005)
        ticks.append(time.perf_counter())
        if ticks[-1] - start > limit:
            stop.set()
    thread.join()
    gaps = np.maximum(np.diff(ticks) * 1000 - 5, 0)
    print(f"{algo} n={n}: {ticks[-1] - start:.1f} s{' (stopped)' if stop.is_set() else ''}; stall max "
          f"{gaps.max():.0f} ms, p99 {np.percentile(gaps, 99):.1f} ms, {(gaps > 50).sum()} over 50 ms; load "
          f"{os.getloadavg()[0]:.2f}")
    for (ms_, where), _count in sorted(holds.items(), reverse=True)[:8]:
        print(f"  {ms_} ms: {where}")


if __name__ == "__main__":
    main()
