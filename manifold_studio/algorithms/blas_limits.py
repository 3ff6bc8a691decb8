"""The thread count of the loaded BLAS libraries: read it, or hold it at one for a block of work
(threadpoolctl; a no-op without it).

BLAS's thread count is process-wide, and its results depend on it: OpenBLAS splits some products
differently on one and on two threads (measured: Xᵀ·D of 200 × 30 and 200 × 100, X·Mᵀ of 500 × 400
and 5 × 400, ddot of 10,001 and 20,000 elements), so an MLP's gradient differs in the last bits,
its probabilities by up to 3e-14 and Test & Score's log-loss by up to 7.5e-16.
Code that must give the same bits whatever else runs in the process (the classifiers: the
window, ``score``, the API and an exported script agree exactly) holds one thread with
:func:`blas_single_thread`. The hold is reference-counted under a lock: the first thread to enter
records the libraries' counts and sets one thread, later entrants only count, and the last to
leave restores what the first recorded. (threadpoolctl's own ``limit`` restores what *it* saw at
entry, so two threads entering and leaving in an interleaved order could leave BLAS on one thread
for good, or switch the count under another thread's computation.)
"""
from __future__ import annotations

import contextlib
import threading

__all__ = ["blas_single_thread", "blas_threads", "limits_changed"]

_blas_controller = None
#: guards the hold: how many blocks are inside it and the counts the first one recorded
_lock = threading.RLock()
_hold: dict = {"holders": 0, "saved": None}


def _controller():
    """threadpoolctl's controller of the loaded BLAS libraries (NumPy's and SciPy's), or False
    without threadpoolctl."""
    global _blas_controller
    if _blas_controller is None:
        try:
            import scipy.linalg  # noqa: F401 - SciPy's BLAS loaded now, so it is controlled too
            from threadpoolctl import ThreadpoolController
            _blas_controller = ThreadpoolController().select(user_api="blas")
        except Exception:  # not installed, or unable to inspect the loaded libraries
            _blas_controller = False
    return _blas_controller


def _release_control() -> None:
    """threadpoolctl (3.8+) lets one Python thread at a time change OpenBLAS's count and silently
    ignores the others; the hold's own lock orders the changes, so any thread may make them."""
    try:
        from threadpoolctl import OpenBLASController
        OpenBLASController.clear_controlling_thread(force=True)
    except (ImportError, AttributeError, TypeError):  # an older threadpoolctl: no such rule
        pass


def _set_counts(counts) -> None:
    _release_control()
    for lib, n in zip(_blas_controller.lib_controllers, counts):
        if n is not None:
            lib.set_num_threads(n)
    _release_control()


def _enter() -> None:
    with _lock:
        if _hold["holders"] == 0:
            saved = [lib.num_threads for lib in _blas_controller.lib_controllers]
            _set_counts([1] * len(saved))
            _hold["saved"] = saved
        _hold["holders"] += 1


def _leave() -> None:
    with _lock:
        _hold["holders"] -= 1
        if _hold["holders"] == 0:
            saved, _hold["saved"] = _hold["saved"], None
            _set_counts(saved)


@contextlib.contextmanager
def blas_single_thread():
    """Context manager running BLAS on one thread (a no-op when threadpoolctl is not installed);
    safe to enter from several threads at once and to nest (see the module docstring).

    Besides making results independent of the thread count, it is quicker where the products are
    thin (k-means, the silhouette, the mixture log-densities, an MLP's mini-batches): a second
    BLAS thread gains little, and when the cores are busy with other work each multi-threaded call
    waits for a time slice, which was measured to make them 3 to 10 times slower. scikit-learn's
    KMeans does the same.
    """
    if not _controller():
        yield
        return
    try:
        _enter()
    except Exception:  # unable to set the count: run as it is
        yield
        return
    try:
        yield
    finally:
        _leave()


@contextlib.contextmanager
def limits_changed():
    """Block in which the caller sets the libraries' thread counts (the window's Threads
    preference): a hold in progress is lifted for it, records the new counts, and keeps one
    thread until its last block ends, which then restores the new counts."""
    if not _controller():
        yield
        return
    with _lock:
        held = _hold["holders"] > 0
        if held:
            _set_counts(_hold["saved"])
        try:
            yield
        finally:
            _release_control()
            if held:
                _hold["saved"] = [lib.num_threads for lib in _blas_controller.lib_controllers]
                _set_counts([1] * len(_hold["saved"]))


def blas_threads() -> int | None:
    """The largest thread count of the loaded BLAS libraries (OPENBLAS_NUM_THREADS, a threadpoolctl
    limit...) outside any :func:`blas_single_thread` block, or None when it cannot be read."""
    if not _controller():
        return None
    try:
        with _lock:
            counts = _hold["saved"] if _hold["holders"] else [lib.num_threads for lib in
                                                              _blas_controller.lib_controllers]
    except Exception:
        return None
    counts = [c for c in counts if c is not None]
    return max(counts) if counts else None
