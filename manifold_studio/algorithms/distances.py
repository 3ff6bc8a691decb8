"""Blockwise squared Euclidean distances: the primitive under the kernels and the neighbour
search (both import it from here, so neither imports the other for it)."""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

#: elements per temporary block (about 32 MB of float64)
BLOCK_ELEMENTS = 4_000_000


def rows_per_block(n_cols: int, budget: int = BLOCK_ELEMENTS) -> int:
    """How many rows of an (·, n_cols) float64 block fit in the temporary-memory budget."""
    return max(1, int(budget // max(int(n_cols), 1)))


def row_squares(X) -> np.ndarray:
    """The squared norm of each row of X (a dense array or a scipy.sparse matrix)."""
    if sp.issparse(X):
        return np.asarray(X.multiply(X).sum(axis=1), dtype=float).ravel()
    return np.einsum("ij,ij->i", X, X)


def squared_distances(X: np.ndarray, Y: np.ndarray, x_sq: np.ndarray | None = None,
                      y_sq: np.ndarray | None = None) -> np.ndarray:
    """Squared Euclidean distances between the rows of X and Y (clipped at 0); either may be a
    scipy.sparse matrix (only their product is formed; the result is dense)."""
    if x_sq is None:
        x_sq = row_squares(X)
    if y_sq is None:
        y_sq = row_squares(Y)
    D = X @ Y.T
    if sp.issparse(D):
        D = D.toarray()
    elif type(D) is not np.ndarray:   # np.matrix from a sparse matrix's product
        D = np.asarray(D)
    D *= -2.0
    D += x_sq[:, None]
    D += y_sq[None, :]
    np.maximum(D, 0.0, out=D)
    return D
