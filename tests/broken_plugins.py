"""Deliberately broken algorithm plugins, for the worker-process tests (tests/session/test_isolated_fit.py)."""
import ctypes
import os
import time

import numpy as np

from manifold_studio.algorithms import EmbeddingAlgorithm, Int


class _Base(EmbeddingAlgorithm):
    params = ()

    def _extend(self, X):
        return X[:, :2]


class Segfault(_Base):
    id = "broken_segfault"
    name = "Crashes with a segmentation fault"
    help = "Reads address 0."

    def _fit(self, X, y, progress):
        progress.checkpoint(0.1, "about to crash")
        ctypes.string_at(0)


class MemoryHog(_Base):
    id = "broken_memory"
    name = "Eats all the memory"
    help = "Allocates until it fails."

    def _fit(self, X, y, progress):
        hoard = []
        while True:
            hoard.append(np.ones(50_000_000))  # 400 MB at a time


class Hang(_Base):
    id = "broken_hang"
    name = "Never calls checkpoint"
    help = "Loops forever without checkpoints."

    def _fit(self, X, y, progress):
        progress.checkpoint(0.0, "starting")
        while True:
            time.sleep(0.05)


class Exit(_Base):
    id = "broken_exit"
    name = "Ends its own process"
    help = "Calls os._exit."

    def _fit(self, X, y, progress):
        os._exit(3)


class Raises(_Base):
    id = "broken_raises"
    name = "Raises an unexpected error"
    help = "ZeroDivisionError inside."

    def _fit(self, X, y, progress):
        return 1 / 0


class Slow(_Base):
    """Well behaved: progress, partial maps and Cancel at checkpoints."""

    id = "slow_partial"
    name = "Slow but polite"
    help = "Publishes partial maps."
    params = (Int("steps", 20, "steps", low=1),)

    def _fit(self, X, y, progress):
        Z = X[:, :2].copy()
        for i in range(self._p["steps"]):
            progress.checkpoint(i / self._p["steps"], f"step {i + 1}")
            Z = Z * 0.9
            progress.partial(Z)
            time.sleep(0.02)
        self.embedding_ = Z


ALL = [Segfault, MemoryHog, Hang, Exit, Raises, Slow]


def report_session(conn):
    """A worker-process target (``run_supervised``): its session id and niceness."""
    from manifold_studio.session.isolated_fit import report_outcome

    report_outcome(conn, lambda: (os.getsid(0), os.getpriority(os.PRIO_PROCESS, 0)))
