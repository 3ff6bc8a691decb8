"""PCA's tiled products on threads (blas_tasks) and the task runner (threads.run_tasks)."""
from __future__ import annotations

import numpy as np
import pytest

from manifold_studio.algorithms import blas_tasks, threads
from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.blas_tasks import crossprod, matmul_rows
from manifold_studio.algorithms.threads import run_tasks


@pytest.fixture
def two_threads(monkeypatch):
    """Tasks on two threads even on a one-core runner, and no size threshold."""
    monkeypatch.setattr(threads, "n_threads", lambda: 2)
    monkeypatch.setattr(blas_tasks, "n_threads", lambda: 2)
    monkeypatch.setattr(blas_tasks, "blas_threads", lambda: 2)
    monkeypatch.setattr(blas_tasks, "MIN_WORK", 0)


@pytest.mark.parametrize("d", [7, 50, 300, 500])   # row blocks (d < 2 tiles) and 2 or 3 column tiles
def test_crossprod_is_xtx(two_threads, monkeypatch, d):
    monkeypatch.setattr(blas_tasks, "TASK_WORK", 1)
    X = np.random.default_rng(d).normal(size=(1000, d)) + 3.0
    C = crossprod(X)
    ref = X.T @ X
    assert C.shape == (d, d)
    np.testing.assert_array_equal(C, C.T)
    assert np.max(np.abs(C - ref)) <= 1e-13 * np.max(np.abs(ref))
    np.testing.assert_array_equal(crossprod(X), C)    # the same values on every call


def test_matmul_rows_is_the_product_minus_the_shift(two_threads, monkeypatch):
    monkeypatch.setattr(blas_tasks, "TASK_WORK", 1)
    rng = np.random.default_rng(0)
    X, M, shift = rng.normal(size=(1000, 40)), rng.normal(size=(40, 6)), rng.normal(size=6)
    np.testing.assert_allclose(matmul_rows(X, M, shift), X @ M - shift, rtol=0, atol=1e-12)
    np.testing.assert_allclose(matmul_rows(X, M[:, ::2]), X @ M[:, ::2], rtol=0, atol=1e-12)  # strided M


def test_run_tasks_keeps_order_and_raises(two_threads):
    assert run_tasks([lambda i=i: i * i for i in range(20)]) == [i * i for i in range(20)]

    def boom():
        raise ValueError("task 3 failed")

    with pytest.raises(ValueError, match="task 3 failed"):
        run_tasks([lambda: 1, lambda: 2, boom, lambda: 4])
    assert run_tasks([]) == []


def test_run_tasks_inside_the_pool_runs_serially(two_threads):
    """A nested call from a pool thread must not wait for the pool's (busy) threads."""
    out = run_tasks([lambda: run_tasks([lambda i=i: i for i in range(5)]) for _ in range(4)])
    assert out == [list(range(5))] * 4


def test_a_one_thread_blas_limit_holds(two_threads, monkeypatch):
    """OPENBLAS_NUM_THREADS=1 (or a threadpoolctl limit) means one thread here too: no tasks."""
    monkeypatch.setattr(blas_tasks, "blas_threads", lambda: 1)

    def no_tasks(*args, **kwargs):
        raise AssertionError("tasks on threads despite a one-thread BLAS limit")

    monkeypatch.setattr(blas_tasks, "run_tasks", no_tasks)
    X = np.random.default_rng(1).normal(size=(500, 400))
    with blas_single_thread():   # one call on one BLAS thread, as here (2 threads differ in the last bits)
        xtx, xm = X.T @ X, X @ X[:5].T
    np.testing.assert_array_equal(crossprod(X), xtx)
    np.testing.assert_array_equal(matmul_rows(X, X[:5].T), xm)
