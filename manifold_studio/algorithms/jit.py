"""Compiled inner loops: a lazy, cached ``numba.njit``.

The supervised methods have loops that are sequential by nature (the perceptron visits the
examples one after the other and every mistake changes the next margins; SMO updates two
dual variables per step). They are written in plain Python/numpy and compiled with numba::

    from manifold_studio.algorithms.jit import jit

    @jit
    def perceptron_epoch(X, u, a, b, tau): ...

``jit`` defers importing numba and compiling until the first call, so importing a plugin
(``manifold-studio list``, the window's start-up) stays fast. Compiled code is cached on disk
when numba can locate a cache directory (``cache=True``); where it cannot (a read-only or
frozen installation without sources) the function is compiled without a cache.
"""
from __future__ import annotations

import functools
import threading

__all__ = ["jit"]

_lock = threading.Lock()


def _compile(func, options):
    import numba

    try:
        return numba.njit(cache=True, **options)(func)
    except (RuntimeError, OSError):  # no cache locator (frozen or read-only installation)
        return numba.njit(cache=False, **options)(func)


def jit(func=None, **options):
    """``numba.njit(cache=True, nogil=True, **options)`` compiled on first call."""
    options.setdefault("nogil", True)

    def decorate(f):
        compiled = None

        @functools.wraps(f)
        def wrapper(*args):
            nonlocal compiled
            if compiled is None:
                with _lock:
                    if compiled is None:
                        compiled = _compile(f, options)
            return compiled(*args)

        wrapper.py_func = f
        return wrapper

    return decorate(func) if func is not None else decorate
