"""The same bits whatever else runs (issue 30, item 6): the classifiers' figures do not depend on
BLAS's thread count, which is process-wide and which other threads change (one-BLAS-thread blocks
of k-means, the silhouette, PCA, a Threads preference), nor on the machine's load.

The cause, measured: OpenBLAS's product Xᵀ·δ of an MLP mini-batch (inner dimension 200) differs
in the last bits on 1 and on 2 threads, so Test & Score of the MLP gave fold log-losses up to
7.5e-16 apart; and threadpoolctl's ``limit``, which the one-thread blocks used, restored the count
it saw at entry, so two threads entering and leaving in turn switched the count under a fit, or
left it at one for good. Now the classifiers fit and predict on one BLAS thread, held by a
reference-counted block (tests/algorithms/test_blas_limits.py).
"""
from __future__ import annotations

import csv
import subprocess
import sys
import threading
import warnings

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.analysis.compare_learners import METRICS
from manifold_studio.evaluation import compare_learners

threadpoolctl = pytest.importorskip("threadpoolctl")

FAST = [("mlp", {"max_iter": 40}), ("svm", {"probability": True})]
FIGURES = tuple(m for m in METRICS if not m.endswith("_time"))


@pytest.fixture(scope="module")
def breast_cancer():
    return ms.load_data("sample:breast_cancer")


def _figures(learners, data, cv=3) -> dict:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # a short MLP warns that it did not converge
        c = compare_learners(learners, data, cv=cv)
    out = {(r.name, m): np.asarray(r.fold_metrics[m]) for r in c.learners for m in FIGURES}
    out.update({(r.name, "proba"): r.proba for r in c.learners})
    return out


def _assert_same(a: dict, b: dict, what: str) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key], b[key], err_msg=f"{what}: {key}")


class _Toggler:
    """Threads that keep BLAS busy, half of the time inside one-BLAS-thread blocks, entering and
    leaving them out of step with each other and with the fits."""

    def __init__(self, n=2, size=300):
        self.stop = threading.Event()
        self.rounds = 0
        rng = np.random.default_rng(1)
        self.A = rng.standard_normal((size, size))
        self.threads = [threading.Thread(target=self._work, args=(i,), daemon=True) for i in range(n)]

    def _work(self, i):
        k = i
        while not self.stop.is_set():
            k += 1
            if k % 2:
                with blas_single_thread():
                    self.A @ self.A
            else:
                self.A @ self.A
            self.rounds += 1

    def __enter__(self):
        for t in self.threads:
            t.start()
        return self

    def __exit__(self, *exc):
        self.stop.set()
        for t in self.threads:
            t.join(10)


def test_classifier_figures_do_not_depend_on_the_blas_thread_count(breast_cancer):
    with threadpoolctl.threadpool_limits(1, user_api="blas"):
        one = _figures(FAST, breast_cancer)
    with threadpoolctl.threadpool_limits(3, user_api="blas"):
        three = _figures(FAST, breast_cancer)
    _assert_same(one, three, "1 against 3 BLAS threads")
    assert np.all(np.isfinite(one[("svm", "log_loss")]))


def test_classifier_figures_are_the_same_while_other_threads_toggle_blas(breast_cancer):
    alone = _figures(FAST, breast_cancer)
    with _Toggler() as busy:
        busy_run = _figures(FAST, breast_cancer)
    assert busy.rounds > 0
    _assert_same(alone, busy_run, "with other threads toggling BLAS")


def _score_in_a_process(tmp_path, name) -> dict:
    out = tmp_path / f"{name}.csv"
    done = subprocess.run([sys.executable, "-m", "manifold_studio", "score", "mlp", "svm", "--data",
                           "sample:breast_cancer", "--cv", "3", "--seed", "0", "--quiet", "--out", str(out),
                           "--param", "svm.probability=true"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    with open(out, newline="") as fh:
        rows = {r["learner"]: r for r in csv.DictReader(fh)}
    return {(n, m): float(rows[n][m]) for n in ("mlp", "svm") for m in FIGURES}


@pytest.mark.slow
def test_score_twice_under_load_and_in_a_busy_process_gives_identical_bits(breast_cancer, tmp_path):
    """Default MLP and SVM (Platt): ``score`` in two fresh processes while this process keeps two
    threads busy with BLAS work and one-thread blocks, and Test & Score here in a worker thread
    meanwhile: every figure bit for bit."""
    learners = [("mlp", {}), ("svm", {"probability": True})]
    quiet = _figures(learners, breast_cancer)
    found = {}
    with _Toggler() as busy:
        worker = threading.Thread(target=lambda: found.update(_figures(learners, breast_cancer)))
        worker.start()
        first = _score_in_a_process(tmp_path, "first")
        second = _score_in_a_process(tmp_path, "second")
        worker.join(600)
    assert busy.rounds > 0
    _assert_same(quiet, found, "in a worker thread of a busy process")
    assert first == second
    for (name, m), value in first.items():
        v = quiet[(name, m)]
        mean = float(v[np.isfinite(v)].mean()) if np.isfinite(v).any() else float("nan")
        assert value == mean or (np.isnan(value) and np.isnan(mean)), (name, m, value, mean)
