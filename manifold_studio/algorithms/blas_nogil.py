"""BLAS calls that let the other threads run: scipy's own BLAS through ``ctypes``.

``scipy.linalg.blas`` wrappers (f2py) hold the GIL for the whole call. On a large matrix that is
the window's event loop frozen: ``dsymv`` on a 20,000 × 20,000 kernel matrix (an ARPACK step of
kernel PCA or spectral clustering) reads 1.6 GB and held the GIL 230–1,160 ms on a busy 2-core
machine, once per iteration. A ``ctypes`` foreign call releases the GIL, so calling the very same
routine of the same library (``scipy.linalg.cython_blas``, whose function pointers scipy exports)
through ``ctypes`` gives bit-identical results while the window keeps turning.
"""
from __future__ import annotations

import ctypes
import functools

import numpy as np

__all__ = ["dsymv_upper"]

_P = ctypes.c_void_p


@functools.lru_cache(maxsize=None)
def _cython_blas(name: str, n_args: int):
    """The C function ``name`` of ``scipy.linalg.cython_blas`` as a ctypes function (GIL released
    during the call), all ``n_args`` arguments pointers (the Fortran calling convention)."""
    from scipy.linalg import cython_blas

    capsule = cython_blas.__pyx_capi__[name]
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype, get_name.argtypes = ctypes.c_char_p, [ctypes.py_object]
    get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
    get_pointer.restype, get_pointer.argtypes = ctypes.c_void_p, [ctypes.py_object, ctypes.c_char_p]
    address = get_pointer(capsule, get_name(capsule))
    return ctypes.CFUNCTYPE(None, *([_P] * n_args))(address)


def dsymv_upper(F: np.ndarray, v) -> np.ndarray:
    """``F @ v`` for a symmetric float64 Fortran-ordered ``F`` reading its upper triangle only:
    BLAS ``dsymv`` with ``uplo='U'``, exactly what ``scipy.linalg.blas.dsymv(1.0, F, v, lower=0)``
    computes, without holding the GIL."""
    if F.dtype != np.float64 or F.ndim != 2 or F.shape[0] != F.shape[1] or not F.flags.f_contiguous:
        raise ValueError("dsymv_upper needs a square Fortran-ordered float64 matrix")
    n = F.shape[0]
    x = np.ascontiguousarray(v, dtype=np.float64).ravel()
    if x.shape[0] != n:
        raise ValueError(f"dsymv_upper: vector of length {x.shape[0]} for a {n} × {n} matrix")
    y = np.zeros(n)
    if n == 0:
        return y
    try:
        dsymv = _cython_blas("dsymv", 10)
    except Exception:  # no exported capsule (a scipy built without it): the f2py wrapper, GIL held
        from scipy.linalg.blas import dsymv as held
        return held(1.0, F, x, lower=0)
    uplo = ctypes.c_char(b"U")
    size, one = ctypes.c_int(n), ctypes.c_int(1)
    alpha, beta = ctypes.c_double(1.0), ctypes.c_double(0.0)
    ref = ctypes.byref
    dsymv(ref(uplo), ref(size), ref(alpha), F.ctypes.data, ref(size),
                              x.ctypes.data, ref(one), ref(beta), y.ctypes.data, ref(one))
    return y
