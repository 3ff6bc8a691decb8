"""The reference-counted one-BLAS-thread hold (blas_limits): threads entering and leaving it in any
order leave the count exactly as it was, every block runs on one thread, a preference set during
a hold takes effect when it ends; and why it matters: OpenBLAS's results depend on its count."""
from __future__ import annotations

import random
import threading

import numpy as np
import pytest

threadpoolctl = pytest.importorskip("threadpoolctl")

from manifold_studio.algorithms import blas_limits  # noqa: E402
from manifold_studio.algorithms.blas_limits import blas_single_thread, blas_threads, limits_changed  # noqa: E402


def _counts() -> list[int]:
    return [lib.num_threads for lib in blas_limits._controller().lib_controllers]


def _set(n: int) -> None:
    blas_limits._set_counts([n] * len(_counts()))


@pytest.fixture
def three_threads():
    """BLAS on 3 threads (also on a one-core runner, so that one thread is a change); restored."""
    if not blas_limits._controller() or not blas_limits._controller().lib_controllers:
        pytest.skip("no BLAS library that threadpoolctl controls")
    before = _counts()
    _set(3)
    yield
    assert blas_limits._hold["holders"] == 0
    blas_limits._set_counts(before)


def test_interleaved_threads_restore_the_count_exactly(three_threads):
    """A enters, B enters, A leaves, B leaves (threadpoolctl's own limit left BLAS on one thread for
    good here, and B's block ran on 3 threads once A had left)."""
    a_in, b_in, a_out = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def a():
        with blas_single_thread():
            a_in.set()
            b_in.wait(5)
            seen["a"] = _counts()
        a_out.set()

    def b():
        a_in.wait(5)
        with blas_single_thread():
            b_in.set()
            a_out.wait(5)
            seen["b after a left"] = _counts()
            seen["base inside"] = blas_threads()

    workers = [threading.Thread(target=a), threading.Thread(target=b)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(10)
    assert set(seen["a"]) == {1} and set(seen["b after a left"]) == {1}
    assert seen["base inside"] == 3          # the libraries' own count, not the hold's
    assert set(_counts()) == {3} and blas_threads() == 3


def test_many_threads_in_random_order_and_nested(three_threads):
    errors = []

    def work(seed):
        rng = random.Random(seed)
        for _ in range(200):
            with blas_single_thread():
                if set(_counts()) != {1}:
                    errors.append(_counts())
                if rng.random() < 0.3:
                    with blas_single_thread():      # nested in the same thread
                        if set(_counts()) != {1}:
                            errors.append(_counts())

    workers = [threading.Thread(target=work, args=(s,)) for s in range(6)]
    for t in workers:
        t.start()
    for t in workers:
        t.join(30)
    assert errors == []
    assert set(_counts()) == {3} and blas_limits._hold["holders"] == 0


def test_an_exception_inside_leaves_the_count_restored(three_threads):
    with pytest.raises(ValueError):
        with blas_single_thread():
            raise ValueError("inside")
    assert set(_counts()) == {3}


def test_a_count_set_during_a_hold_applies_when_it_ends(three_threads):
    with blas_single_thread():
        with limits_changed():
            assert set(_counts()) == {3}      # the hold is lifted for the change
            _set(2)
        assert set(_counts()) == {1} and blas_threads() == 2
    assert set(_counts()) == {2}


def test_a_hold_gives_the_one_thread_bits_whatever_the_count(three_threads):
    """Why the classifiers hold one thread: the first-layer gradient of an MLP mini-batch (Xᵀ·δ,
    inner dimension 200) was measured to differ in the last bits between 1 and 2 OpenBLAS threads
    (Haswell kernels); inside a hold it is the one-thread product whatever the count outside."""
    rng = np.random.default_rng(0)
    X, D = rng.standard_normal((200, 30)), rng.standard_normal((200, 100))
    _set(1)
    one = X.T @ D
    for n in (2, 3):
        _set(n)
        np.testing.assert_allclose(X.T @ D, one, rtol=1e-12, atol=1e-12)
        with blas_single_thread():
            np.testing.assert_array_equal(X.T @ D, one)
