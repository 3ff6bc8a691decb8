"""Kernel functions shared by kernel PCA, spectral clustering and (later) the SVM.

Every kernel is computed blockwise (bounded temporary memory) from two point sets::

    K = kernel_matrix(X, Y, "rbf", gamma=0.5)          # (len(X), len(Y))

``rbf``      exp(-gamma * ||x - y||^2)
``poly``     (gamma * <x, y> + coef0) ** degree
``sigmoid``  tanh(gamma * <x, y> + coef0)
``linear``   <x, y>

``gamma=None`` means ``1 / n_features`` (the scikit-learn convention). X and Y may be
scipy.sparse matrices: only their products are formed (the kernel matrix itself is dense).
:func:`normalised_heat_kernel` is the data-dependent kernel 5.2 of Laplacian eigenmaps and
spectral clustering between new points and the training points.
:func:`check_rbf_width` raises a :class:`~manifold_studio.errors.DataError` when a
Gaussian width is so small that every kernel value between two different points
underflows to 0 (the kernel matrix would be the identity and the method meaningless).
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from manifold_studio.algorithms.distances import (  # noqa: F401
    BLOCK_ELEMENTS,
    row_squares,
    rows_per_block,
    squared_distances,
)
from manifold_studio.algorithms.neighbors import knn_query
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError

KERNELS = ("rbf", "poly", "sigmoid", "linear")

#: exp(-x) underflows to exactly 0 in float64 for x larger than about this
_EXP_UNDERFLOW = 745.0


def _as_float(X):
    """float64 array, or (scipy.sparse input) float64 CSR matrix: kernels only multiply it."""
    return sparse.csr_matrix(X, dtype=float) if sparse.issparse(X) else np.asarray(X, dtype=float)


_row_sq = row_squares


def _dot_t(X, Y, out=None) -> np.ndarray:
    """X Yᵀ as a dense array (written into ``out`` when given); either may be sparse."""
    if not (sparse.issparse(X) or sparse.issparse(Y)):
        return np.matmul(X, Y.T, out=out)
    G = X @ Y.T
    G = G.toarray() if sparse.issparse(G) else np.asarray(G)
    if out is None:
        return G
    out[...] = G
    return out


def resolve_gamma(gamma, n_features: int) -> float:
    return 1.0 / max(int(n_features), 1) if gamma is None else float(gamma)


def _apply(name: str, X, Y, gamma, degree, coef0, y_sq=None, out=None):
    """Kernel block written into ``out`` (allocated when None) without temporaries."""
    G = _dot_t(X, Y, out=out)
    if name == "linear":
        return G
    if name == "rbf":
        x_sq = _row_sq(X)
        G *= 2.0 * gamma
        G -= (gamma * x_sq)[:, None]
        G -= (gamma * y_sq)[None, :]
        np.minimum(G, 0.0, out=G)   # -gamma * max(d^2, 0)
        return np.exp(G, out=G)
    G *= gamma
    G += coef0
    if name == "poly":
        return np.power(G, degree, out=G)
    if name == "sigmoid":
        return np.tanh(G, out=G)
    raise ValueError(f"Unknown kernel {name!r}: allowed are {', '.join(KERNELS)}.")


def kernel_matrix(X, Y=None, kernel: str = "rbf", *, gamma=None, degree: float = 3,
                  coef0: float = 1.0, out: np.ndarray | None = None, progress=None,
                  block_rows: int | None = None) -> np.ndarray:
    """The (len(X), len(Y)) kernel matrix, computed in row blocks with progress/cancel."""
    X = _as_float(X)
    Y = X if Y is None else _as_float(Y)
    if kernel not in KERNELS:
        raise ValueError(f"Unknown kernel {kernel!r}: allowed are {', '.join(KERNELS)}.")
    gamma = resolve_gamma(gamma, X.shape[1])
    progress = as_progress(progress)
    n, m = X.shape[0], Y.shape[0]
    if out is None:
        out = np.empty((n, m), dtype=float)
    y_sq = _row_sq(Y) if kernel == "rbf" else None
    step = block_rows or rows_per_block(m)
    for start in range(0, n, step):
        progress.checkpoint(start / max(n, 1), f"Kernel {start:,}/{n:,} rows")
        stop = min(n, start + step)
        _apply(kernel, X[start:stop], Y, gamma, degree, coef0, y_sq, out=out[start:stop])
    progress.checkpoint(1.0, f"Kernel {n:,}/{n:,} rows")
    return out


def rbf(X, Y=None, gamma=None, **kw):
    return kernel_matrix(X, Y, "rbf", gamma=gamma, **kw)


def poly(X, Y=None, gamma=None, degree=3, coef0=1.0, **kw):
    return kernel_matrix(X, Y, "poly", gamma=gamma, degree=degree, coef0=coef0, **kw)


def sigmoid(X, Y=None, gamma=None, coef0=1.0, **kw):
    return kernel_matrix(X, Y, "sigmoid", gamma=gamma, coef0=coef0, **kw)


def linear(X, Y=None, **kw):
    return kernel_matrix(X, Y, "linear", **kw)


def normalised_heat_kernel(sq_dist: np.ndarray, sigma: float, degrees, *,
                           directional: bool = False, edge_weights=None) -> np.ndarray:
    """Kernel 5.2 between new points and training points from their squared distances.

    ``k(x, x_i) = K(x, x_i) / sqrt(d(x) d_i)`` with the heat kernel
    ``K = exp(-d^2 / (2 sigma^2))``, ``d(x) = sum_l K(x, x_l)`` over the same training points
    (the columns of ``sq_dist``: all n of them, or each point's k nearest) and ``degrees`` the
    training degrees ``d_i``, broadcastable to ``sq_dist`` ((n,) for all columns, ``deg[idx]``
    for neighbours). Computed stably (the smallest distance is factored out), so far points
    get the correct limit 0 instead of 0/0; ``directional=True`` drops the common positive
    factor ``exp(-d_min^2 / (4 sigma^2))`` of each row (its direction, all spectral clustering
    needs). ``edge_weights`` (shaped as ``sq_dist``) multiplies each heat weight before the
    degrees are summed (eigenmaps' 0.5 for a one-way edge of the graph 0.5 (A + A^T)).
    ``sq_dist`` is overwritten with the result, which is returned.
    """
    a = sq_dist
    a /= 2.0 * sigma * sigma
    a_min = a.min(axis=1, keepdims=True) if a.shape[1] else np.zeros((a.shape[0], 1))
    a -= a_min
    K = np.exp(-a, out=a)                      # >= one entry equal to 1 per row
    if edge_weights is not None:
        K *= edge_weights
    dx = K.sum(axis=1, keepdims=True)
    K /= np.sqrt(dx)
    K /= np.sqrt(degrees)
    if not directional:
        K *= np.exp(-0.5 * a_min)
    return K


def min_offdiagonal_sq_distance(X: np.ndarray) -> float:
    """Smallest squared distance between two *different* points of X (0 if duplicates).

    Uses a k-d tree for low dimensions, blockwise brute force otherwise."""

    if X.shape[0] < 2:
        return float("inf")
    dist, _ = knn_query(X, X, 1, exclude_self=True)
    return float(np.min(dist) ** 2)


def check_rbf_width(X: np.ndarray, gamma: float, *, parameter: str = "gamma",
                    value: float | None = None, what: str = "Gaussian kernel") -> float:
    """Raise DataError when exp(-gamma * d^2) underflows to 0 for every pair of different points.

    Returns the smallest squared distance between two different points. ``parameter`` and
    ``value`` name the user-facing width parameter in the message (e.g. ``sigma``)."""
    d2 = min_offdiagonal_sq_distance(X)
    if d2 > 0 and gamma * d2 > _EXP_UNDERFLOW:
        suggestion = _EXP_UNDERFLOW / d2
        shown = gamma if value is None else value
        if parameter == "sigma":
            hint = f"use sigma >= {np.sqrt(d2 / (2 * _EXP_UNDERFLOW)):.3g} (a typical choice is the median distance between neighbours, about {np.sqrt(d2):.3g} or more)"
        else:
            hint = f"use gamma <= {suggestion:.3g} (a typical choice is about 1 / the median squared distance)"
        raise DataError(
            f"The {what} width is too small: with {parameter}={shown:.3g} every kernel value between "
            f"two different points underflows to 0 (even the closest pair, at squared distance "
            f"{d2:.3g}, gives exp(-{gamma * d2:.3g}) = 0), so the kernel carries no information; {hint}.")
    return d2


# -- kernels of the SVM: sets, combinations, precomputed (seed 003) -------------------------
#: kernels a combination may use (sums and products: "rbf+linear", "rbf*poly", "linear+rbf*poly")
COMBINABLE = KERNELS + ("set",)
#: every single kernel name the SVM accepts
SVM_KERNELS = COMBINABLE + ("precomputed",)


def parse_kernel(spec: str) -> list[list[str]]:
    """A kernel expression as a sum of products: ``"rbf+linear*poly"`` -> [["rbf"], ["linear", "poly"]].

    Sums and products of kernels are kernels (seed 003). ``*`` binds tighter than ``+``.
    Raises ValueError naming the unknown part."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError(f"Unknown kernel {spec!r}.")
    terms = []
    for term in spec.replace(" ", "").split("+"):
        factors = term.split("*")
        for f in factors:
            if f not in COMBINABLE:
                raise ValueError(f"Unknown kernel {f!r} in {spec!r}: allowed are {', '.join(COMBINABLE)}, "
                                 "their sums (+) and products (*), or 'precomputed'.")
        terms.append(factors)
    return terms


def check_binary(X: np.ndarray, what: str = "The set kernel") -> None:
    """DataError naming the first column of X holding a value other than 0 and 1."""
    if sparse.issparse(X):   # only the stored values can differ from 0
        bad = X.data != 1
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            raise DataError(f"{what} needs 0/1 data (each row the indicator vector of a set), but column "
                            f"{int(X.indices[k])} holds {float(X.data[k]):g}.")
        return
    bad = ~((X == 0) | (X == 1))
    if bad.any():
        col = int(np.flatnonzero(bad.any(axis=0))[0])
        row = int(np.flatnonzero(bad[:, col])[0])
        raise DataError(f"{what} needs 0/1 data (each row the indicator vector of a set), but column "
                        f"{col} holds {float(X[row, col]):g} (row {row}).")


def set_kernel(X, Y=None) -> np.ndarray:
    """k(A, A') = 2^|A ∩ A'| on 0/1 indicator vectors (seed 003: kernels on sets)."""
    X = _as_float(X)
    Y = X if Y is None else _as_float(Y)
    check_binary(X)
    if Y is not X:
        check_binary(Y)
    return np.exp2(_dot_t(X, Y))


def scale_gamma(gamma, X: np.ndarray) -> float:
    """scikit-learn's SVC convention: 'scale' = 1 / (d · Var(X)), 'auto' = 1 / d, or a number."""
    if gamma == "scale":
        if sparse.issparse(X):   # the variance of every entry, zeros included (as scikit-learn)
            var = float(X.multiply(X).mean() - X.mean() ** 2)
        else:
            var = float(np.asarray(X, dtype=float).var())
        return 1.0 / (X.shape[1] * var) if var > 0 else 1.0
    if gamma == "auto" or gamma is None:
        return 1.0 / max(int(X.shape[1]), 1)
    return float(gamma)


def combined_kernel(X, Y=None, spec: str = "rbf", *, gamma: float = 1.0, degree: float = 3,
                    coef0: float = 0.0, progress=None) -> np.ndarray:
    """The kernel matrix of a kernel expression (sum of products of COMBINABLE kernels)."""
    terms = parse_kernel(spec)
    X = _as_float(X)
    Y = X if Y is None else _as_float(Y)
    total = None
    for term in terms:
        prod = None
        for name in term:
            K = set_kernel(X, Y) if name == "set" else kernel_matrix(
                X, Y, name, gamma=gamma, degree=degree, coef0=coef0, progress=progress)
            prod = K if prod is None else np.multiply(prod, K, out=prod)
        total = prod if total is None else np.add(total, prod, out=total)
    return total


def check_precomputed(K: np.ndarray, n_train: int | None = None) -> None:
    """A precomputed kernel must be (n, n) for fit and (m, n_train) for extend (DataError otherwise)."""
    if n_train is None:
        if K.ndim != 2 or K.shape[0] != K.shape[1]:
            raise DataError(f"kernel='precomputed' needs the square (n, n) kernel matrix of the training "
                            f"points for fit; got shape {K.shape}.")
    elif K.ndim != 2 or K.shape[1] != n_train:
        raise DataError(f"kernel='precomputed' needs an (m, {n_train}) matrix for new points (their "
                        f"kernel values with the {n_train} training points); got shape {K.shape}.")
