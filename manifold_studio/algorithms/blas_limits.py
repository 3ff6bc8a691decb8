"""The thread count of the loaded BLAS libraries: read it, or hold it at one for a block of work
(threadpoolctl; a no-op without it)."""
from __future__ import annotations

import contextlib

__all__ = ["blas_single_thread", "blas_threads"]

_blas_controller = None


def _controller():
    """threadpoolctl's controller of the loaded libraries, or False without threadpoolctl."""
    global _blas_controller
    if _blas_controller is None:
        try:
            from threadpoolctl import ThreadpoolController
            _blas_controller = ThreadpoolController()
        except Exception:  # not installed, or unable to inspect the loaded libraries
            _blas_controller = False
    return _blas_controller


def blas_single_thread():
    """Context manager running BLAS on one thread (a no-op when threadpoolctl is not installed).

    The products of k-means, the silhouette and the mixture log-densities are thin (inner
    dimension d + 2, many small blocks): a second BLAS thread gains little, and when the cores
    are busy with other work each multi-threaded call waits for a time slice, which was
    measured to make them 3 to 10 times slower. scikit-learn's KMeans does the same.
    """
    if _controller() is False:
        return contextlib.nullcontext()
    try:
        return _blas_controller.limit(limits=1, user_api="blas")
    except Exception:
        return contextlib.nullcontext()


def blas_threads() -> int | None:
    """The largest thread count of the loaded BLAS libraries (OPENBLAS_NUM_THREADS, a threadpoolctl
    limit...), or None when it cannot be read."""
    if not _controller():
        return None
    try:
        counts = [lib.num_threads for lib in _blas_controller.select(user_api="blas").lib_controllers]
    except Exception:
        return None
    return max(counts) if counts else None
