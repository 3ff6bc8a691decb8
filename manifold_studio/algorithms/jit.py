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

Kernels that call each other (NN-descent's, UMAP's SGD) belong to a :class:`KernelModule`: marked
with its ``mark`` decorator and compiled together, once, by its ``compile`` (:func:`compile_module`,
which can also compile one module's kernel bodies again over another module's helpers: the same
loops over dense and over sparse rows).
"""
from __future__ import annotations

import functools
import threading
import types

__all__ = ["KernelModule", "compile_module", "jit", "kernel_marker"]

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


def kernel_marker(registry: list):
    """A decorator marking a kernel for :func:`compile_module` (the kernels call each other, which
    the lazy :func:`jit` wrapper does not allow); ``registry`` collects one module's kernel names."""
    def mark(func=None, **options):
        def decorate(f):
            f.numba_options = dict(options, nogil=True)
            registry.append(f.__name__)
            return f
        return decorate(func) if func is not None else decorate
    return mark


def compile_module(g: dict, names: list, shared: tuple[dict, tuple] | None = None) -> None:
    """Replace the kernels ``names`` in the module globals ``g`` by ``numba.njit`` dispatchers
    (numba resolves the kernels' calls to each other through those globals). ``shared``:
    (globals of an already compiled module, names of its kernels): those bodies are compiled once
    more for ``g``, their calls resolved to ``g``'s kernels where ``g`` has them (``names``, the
    kernels they call in ``shared``) and to the other module's otherwise. Importing numba here
    keeps it off the start-up path."""
    for name in names:
        g[name] = _compile(g[name], g[name].numba_options)
    if shared is None:
        return
    base, bodies = shared
    scope = dict(base)
    scope.update((name, g[name]) for name in names)
    suffix = g["__name__"].rpartition(".")[2]
    for name in bodies:
        f = base[name].py_func
        body = types.FunctionType(f.__code__, scope, name, f.__defaults__, f.__closure__)
        body.__qualname__ = f"{name}_{suffix}"     # its own entry in the on-disk cache
        scope[name] = g[name] = _compile(body, f.numba_options)


class KernelModule:
    """The kernels of one module (globals ``g``), marked with :attr:`mark` and compiled together by
    :meth:`compile` once, before the first use; ``needs``: the ``compile`` of the kernel modules
    they call (compiled first); ``shared``: as for :func:`compile_module`."""

    def __init__(self, g: dict, needs=(), shared: tuple[dict, tuple] | None = None):
        self.names: list[str] = []
        self.mark = kernel_marker(self.names)
        self._g, self._needs, self._shared = g, tuple(needs), shared
        self._ready = False
        self._lock = threading.Lock()

    def compile(self) -> None:
        for need in self._needs:
            need()
        with self._lock:
            if not self._ready:
                compile_module(self._g, self.names, self._shared)
                self._ready = True
