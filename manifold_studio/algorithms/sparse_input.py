"""Sparse input (``scipy.sparse``) for the methods whose mathematics needs only products with
the data, never a dense copy of it (Qt-free).

An algorithm class opts in by deriving from :class:`SparseInput` before its base class::

    class Perceptron(SparseInput, ClassificationAlgorithm): ...

Its ``fit``, ``extend`` and score methods then receive a canonical CSR matrix of float64
(any scipy.sparse format is converted: duplicates summed, indices sorted) when given sparse
data, and the usual dense array otherwise. scikit-learn's tags say ``sparse=True``.
"""
from __future__ import annotations

import numpy as np
from scipy import sparse

from manifold_studio.algorithms.checks import HUGE, check_n_features
from manifold_studio.errors import DataError

__all__ = ["SparseInput", "all_rows_identical", "check_sparse", "column_mean", "is_sparse", "row_sq_norms"]


def is_sparse(X) -> bool:
    return sparse.issparse(X)


def check_sparse(X, *, name: str = "X", min_samples: int = 1) -> sparse.csr_matrix:
    """``X`` as a canonical float64 CSR matrix, or DataError naming the problem."""
    if X.ndim != 2:
        raise DataError(f"{name} is a {X.ndim}-dimensional sparse array; expected (n_samples, n_features).")
    X = sparse.csr_matrix(X, dtype=np.float64, copy=True)
    X.sum_duplicates()                    # also sorts the indices
    n, d = X.shape
    if n < min_samples:
        raise DataError(f"{name} has {n} sample(s); this needs at least {min_samples}.")
    if d < 1:
        raise DataError(f"{name} has 0 feature(s) (shape={X.shape}) while a minimum of 1 is required.")
    if X.nnz:
        bad = ~np.isfinite(X.data)
        if bad.any():
            k = int(np.flatnonzero(bad)[0])
            row = int(np.searchsorted(X.indptr, k, side="right") - 1)
            kind = "NaN" if np.isnan(X.data[k]) else "infinite"
            raise DataError(f"{name} contains {int(bad.sum())} NaN or infinite value(s), the first ({kind}) at "
                            f"row {row} column {int(X.indices[k])}; remove or impute them first.")
        top = float(np.abs(X.data).max())
        if top > HUGE:
            raise DataError(f"{name} holds values as large as {top:.3g}: their squares overflow double "
                            "precision. Rescale the data first, e.g. divide it by a power of ten.")
    return X


def row_sq_norms(X) -> np.ndarray:
    """‖x_i‖² of every row, dense or sparse."""
    if sparse.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


def all_rows_identical(X) -> bool:
    """Whether every row of X (dense or sparse) equals every other (constant data)."""
    if sparse.issparse(X):
        X = sparse.csr_matrix(X)
        return float(np.max(X.max(axis=0).toarray() - X.min(axis=0).toarray())) == 0.0
    return float(np.max(np.ptp(X, axis=0))) == 0.0


def column_mean(X) -> np.ndarray:
    """The mean row of X (dense or sparse) as a 1-D array."""
    return np.asarray(X.mean(axis=0), dtype=float).ravel()


class SparseInput:
    """Mixin: the algorithm accepts scipy.sparse X in fit, extend and its score methods."""

    #: discoverable flag (``getattr(cls, "accepts_sparse", False)``)
    accepts_sparse = True

    def _check_training_data(self, X):
        if not sparse.issparse(X):
            return super()._check_training_data(X)
        self._float32_input = self._keeps_float32(X)    # as for dense input (preserves_float32)
        return check_sparse(X, min_samples=self.min_samples)

    def _check_new_data(self, X, what: str = "extend"):
        if not sparse.issparse(X):
            return super()._check_new_data(X, what)
        self.check_is_fitted(what)
        X = check_sparse(X, name="X_new", min_samples=1)
        check_n_features(X, self.n_features_in_, type(self).__name__)
        return X

    # a sparse fitted attribute (support vectors of a model fitted on sparse data) is saved as its
    # three CSR arrays and its shape, so model and project files stay pickle-free
    _CSR_PARTS = ("data", "indices", "indptr", "shape")

    def fitted_state(self):
        state = super().fitted_state()
        for key, value in vars(self).items():
            if key.endswith("_") and not key.startswith("_") and sparse.issparse(value):
                value = sparse.csr_matrix(value)
                for part, arr in zip(self._CSR_PARTS, (value.data, value.indices, value.indptr, value.shape)):
                    state[f"{key}csr_{part}"] = np.asarray(arr)
        return state

    def restore_state(self, state):
        state = dict(state)
        for key in [k[:-len("csr_data")] for k in state if k.endswith("_csr_data")]:
            data, indices, indptr, shape = (state.pop(f"{key}csr_{part}") for part in self._CSR_PARTS)
            state[key] = sparse.csr_matrix((data, indices, indptr), shape=tuple(int(v) for v in shape))
        return super().restore_state(state)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
