"""numba's cache locator of the frozen application (:mod:`manifold_studio.algorithms.jit_cache`
names it in ``NUMBA_CACHE_LOCATOR_CLASSES``; numba imports it when it first caches a function).

A compiled loop's cache lives in ``NUMBA_CACHE_DIR/<its module path>/`` and is stamped with the
application's version and the executable's size, not with a source file (the bundle has none) or
an absolute path: the warmed cache the installer ships is valid wherever the application is
installed. numba's index still keys each entry on the signature, the CPU and the function's
bytecode, so a changed loop is compiled again.
"""
from __future__ import annotations

import os
import sys

from numba.core import config
from numba.core.caching import _CacheLocator

from manifold_studio.version import __version__

__all__ = ["FrozenCacheLocator"]


class FrozenCacheLocator(_CacheLocator):
    def __init__(self, py_func, py_file):
        self._lineno = py_func.__code__.co_firstlineno
        module = getattr(py_func, "__module__", None) or "__main__"
        self._cache_path = os.path.join(os.path.abspath(config.CACHE_DIR), *module.split("."))
        try:
            size = os.stat(sys.executable).st_size
        except OSError:
            size = 0
        self._stamp = (__version__, size)

    def get_cache_path(self):
        return self._cache_path

    def get_source_stamp(self):
        return self._stamp

    def get_disambiguator(self):
        return str(self._lineno)

    @classmethod
    def from_function(cls, py_func, py_file):
        if not config.CACHE_DIR:
            return None
        return cls(py_func, py_file)
