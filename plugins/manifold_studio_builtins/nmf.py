"""Non-negative matrix factorisation (seed 002 §NMF; Lee & Seung, NIPS 2000).

X (n × d, non-negative) ≈ W H with W (n × k) ≥ 0 the coordinates (``embedding_``) and
H (k × d) ≥ 0 the parts (``components_``), by Lee & Seung's multiplicative updates for the
Frobenius cost ‖X − WH‖² or the Kullback–Leibler divergence D(X‖WH) (shared code in
:mod:`manifold_studio.algorithms.nmf_updates`).
"""
from __future__ import annotations

import hashlib
import weakref

import numpy as np

from manifold_studio.algorithms import Choice, EmbeddingAlgorithm, FitCancelled
from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.nmf_updates import (
    LOSSES, coefficients_kl, coefficients_nnls, initialize, mu_step, reconstruction_error,
)
from manifold_studio.algorithms.params import (
    max_iter_param, n_components_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError
from manifold_studio.hookspecs import hookimpl


def check_non_negative(X, name: str = "X") -> None:
    """DataError naming the first column (and a row) holding a negative value (X dense or CSR)."""
    if is_sparse(X):
        bad = np.flatnonzero(X.data < 0)
        if bad.size:
            row = int(np.searchsorted(X.indptr, bad[0], side="right") - 1)
            cols = np.unique(X.indices[bad])
            raise DataError(f"Negative values in data passed to NMF: {name} has negative values (first in "
                            f"column {int(X.indices[bad[0]])}, e.g. row {row}: {X.data[bad[0]]:g}; "
                            f"{len(cols)} column(s) in all): non-negative matrix factorisation needs "
                            "X ≥ 0. Shift or rescale those columns, or use PCA.")
        return
    neg = X < 0
    if neg.any():
        cols = np.flatnonzero(neg.any(axis=0))
        col = int(cols[0])
        row = int(np.flatnonzero(neg[:, col])[0])
        raise DataError(f"Negative values in data passed to NMF: {name} has negative values (first in "
                        f"column {col}, e.g. row {row}: "
                        f"{X[row, col]:g}; {len(cols)} column(s) in all): non-negative matrix "
                        "factorisation needs X ≥ 0. Shift or rescale those columns, or use PCA.")


#: estimator -> (its training rows, {row bytes: index}) for recognising training rows in extend
_ROW_INDEX: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()
#: entries of a densified block of sparse rows in extend (bounded memory)
_DENSE_BLOCK_ENTRIES = 1 << 22


def _row_digest(indices: np.ndarray, values: np.ndarray) -> bytes:
    """A 16-byte digest of a row given by its non-zero columns (increasing) and values."""
    h = hashlib.blake2b(digest_size=16)
    h.update(np.ascontiguousarray(indices, dtype=np.int64).tobytes())
    h.update(np.ascontiguousarray(values, dtype=np.float64).tobytes())
    return h.digest()


def row_digests(X) -> np.ndarray:
    """(n, 16) uint8 digests of the rows of X (dense or canonical CSR): equal rows, equal digests,
    whatever the storage (zeros, -0.0 included, are left out)."""
    out = np.empty((X.shape[0], 16), dtype=np.uint8)
    for i in range(X.shape[0]):
        if is_sparse(X):
            lo, hi = X.indptr[i], X.indptr[i + 1]
            idx, val = X.indices[lo:hi], X.data[lo:hi]
        else:
            idx = np.flatnonzero(X[i])
            val = X[i, idx]
        out[i] = np.frombuffer(_row_digest(idx, val), dtype=np.uint8)
    return out


class NMF(EmbeddingAlgorithm):
    """Non-negative matrix factorisation by multiplicative updates.

    Parameters
    ----------
    n_components : int
        Number of parts k.
    loss : {'frobenius', 'kl'}
        The cost: squared Frobenius norm ‖X − WH‖² or the Kullback–Leibler divergence
        D(X‖WH) = Σ X log(X/WH) − X + WH (the Poisson likelihood; scikit-learn's
        beta_loss='kullback-leibler').
    init : {'nndsvda', 'nndsvd', 'random'}
        Starting point: NNDSVD (Boutsidis & Gallopoulos) from a seeded randomized SVD, its
        zeros replaced by the mean of X ('nndsvda', the default: multiplicative updates
        cannot move a zero) or kept ('nndsvd'); or |N(0, 1)|·sqrt(mean(X)/k) ('random').
    max_iter : int
        Maximum number of iterations (one iteration updates W, then H).
    tol : float
        Stop when, at a check every 10 iterations, the reconstruction error fell by less
        than tol times the initial error since the previous check (scikit-learn's rule).
    random_state : int or None
        Seed of the random initialisation and of the randomized SVD of NNDSVD.

    Attributes
    ----------
    embedding_ : (n, k) W, the coefficients of every training row.
    components_ : (k, d) H, the parts.
    reconstruction_err_ : ‖X − WH‖_F (Frobenius) or sqrt(2·D(X‖WH)) (KL), as scikit-learn.
    n_iter_ : iterations run.
    loss_curve_, loss_iterations_ : the cost (½‖X − WH‖² or D) after those iterations.

    ``extend`` solves for the coefficients of new rows with H fixed, row by row:
    non-negative least squares (Frobenius) or the multiplicative update with H fixed (KL).
    ``inverse_transform(W) = W H``.

    Sparse X (scipy.sparse) is never densified in fit (see
    :mod:`~manifold_studio.algorithms.nmf_updates`; the result equals the dense one to rounding);
    the training rows are then recognised by a digest of each row
    (``training_row_digests_``) instead of a copy of X, and extend densifies new sparse rows a
    bounded block at a time. Data types: float32 data give float32 ``embedding_``,
    ``components_`` and extend results (computed in float64).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("nmf", n_components=2, random_state=0).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "nmf"
    name = "Non-negative matrix factorisation (NMF)"
    help = ("Approximates non-negative data (counts, pixel intensities, spectra) by products of "
            "two non-negative matrices: each row is a non-negative mixture of a few non-negative "
            "parts, so the parts are additive and often interpretable (strokes of digits, topics "
            "of documents). Lee & Seung's multiplicative updates for the squared error or the "
            "Kullback-Leibler divergence. New rows get their coefficients with the parts fixed.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "components_": Fitted(shape=("n_components_", "n_features_in_"), required=True),
        "X_fit_": Fitted(shape=(None, "n_features_in_")),
        "embedding_": Fitted(shape=(None, "n_components_")),
    }

    params = (
        n_components_param(2, "Number of parts (columns of W, rows of H)."),
        Choice("loss", "frobenius",
               "The cost minimised: 'frobenius' (squared error) or 'kl' (Kullback-Leibler "
               "divergence, suited to counts).", choices=LOSSES),
        Choice("init", "nndsvda",
               "Starting point: 'nndsvda' (SVD-based, zeros filled with the mean; best for these "
               "updates), 'nndsvd' (SVD-based, sparse) or 'random'.",
               choices=("nndsvda", "nndsvd", "random")),
        max_iter_param(200, "Maximum number of iterations of the multiplicative updates."),
        tol_param(1e-4, "Stop when the error fell by less than this fraction of the initial error "
                        "over the last 10 iterations."),
        random_state_param("Seed of the initialisation (none: different every run)."),
    )
    accepts_sparse = True
    preserves_float32 = True
    float32_attributes = ("components_",)

    def _input_problems(self, p, n_samples, n_features):
        """The SVD-based starts need n_components ≤ min(n, d) (the form says it before Run)."""
        out = super()._input_problems(p, n_samples, n_features)
        k, init = p["n_components"], p["init"]
        if init != "random" and None not in (n_samples, n_features) and k > min(n_samples, n_features):
            out.append(f"init='{init}' needs n_components ≤ min(n_samples, n_features) = "
                       f"{min(n_samples, n_features)} (got {k}); use init='random' or fewer components.")
        return out

    def _fit(self, X, y, progress):
        check_non_negative(X)
        n, d = X.shape
        k, loss, max_iter, tol = (self._p[p] for p in ("n_components", "loss", "max_iter", "tol"))
        init = self._p["init"]
        progress.checkpoint(0.0, f"Initialising ({init})")
        W, H = initialize(X, k, init, self._p["random_state"])
        buf = np.empty((n, d)) if loss == "kl" and not is_sparse(X) else None
        err0 = previous = reconstruction_error(X, W, H, loss)
        pub = CurvePublisher(progress, f"NMF cost ({loss})", x_label="iteration", y_label="cost")
        iters, costs = [0], [0.5 * err0 ** 2]
        pub.add(0, cost=costs[-1])
        it = 0
        try:
            for it in range(1, max_iter + 1):
                progress.checkpoint(it / max_iter, f"Iteration {it}/{max_iter}")
                mu_step(X, W, H, loss, buf)
                if tol > 0 and it % 10 == 0:
                    error = reconstruction_error(X, W, H, loss)
                    iters.append(it)
                    costs.append(0.5 * error ** 2)
                    pub.add(it, cost=costs[-1])
                    if (previous - error) / err0 < tol:
                        break
                    previous = error
            else:
                if tol > 0:
                    self._warn(f"NMF reached max_iter={max_iter} before the error stopped falling "
                               f"(tol={tol:g}); increase max_iter.", ConvergenceWarning)
        except FitCancelled:
            self._stop_early(f"after {it - 1} of {max_iter} iterations")
            it -= 1
        self.embedding_, self.components_ = W, H
        # training rows are recognised by extend and keep their W row
        if is_sparse(X):
            self.training_row_digests_ = row_digests(X)
        else:
            self.X_fit_ = X
        self.n_components_ = k
        self.n_iter_ = it
        self.reconstruction_err_ = reconstruction_error(X, W, H, loss)
        if iters[-1] != it:
            iters.append(it)
            costs.append(0.5 * self.reconstruction_err_ ** 2)
            pub.add(it, cost=costs[-1])
        pub.flush()
        self.loss_iterations_ = np.asarray(iters, dtype=float)
        self.loss_curve_ = np.asarray(costs)

    def _extend(self, X):
        """W for new rows with H fixed; a training row gets its own row of W (so extending the
        training data gives ``embedding_``, as the spectral methods do), any other row is solved."""
        check_non_negative(X, "X_new")
        if is_sparse(X):   # densified a bounded block of rows at a time (the solvers are row-wise)
            step = max(1, _DENSE_BLOCK_ENTRIES // max(X.shape[1], 1))
            return np.concatenate([self._extend(X[i:i + step].toarray()) for i in range(0, X.shape[0], step)])
        X = np.ascontiguousarray(X, dtype=float)
        hit = self._training_rows(X)
        out = np.empty((X.shape[0], self.components_.shape[0]))
        known = hit >= 0
        out[known] = self.embedding_[hit[known]]
        rest = ~known
        if rest.any():
            if self.loss == "frobenius":
                out[rest] = coefficients_nnls(X[rest], self.components_)
            else:
                out[rest] = coefficients_kl(X[rest], self.components_, max_iter=self.max_iter, tol=self.tol)
        return out

    def _training_rows(self, X) -> np.ndarray:
        """For each row of X, the index of the identical training row, or -1."""
        fit = getattr(self, "X_fit_", None)
        if fit is None and getattr(self, "training_row_digests_", None) is not None:
            return self._training_rows_by_digest(X)
        if fit is None or fit.shape[1] != X.shape[1]:
            return np.full(X.shape[0], -1)
        index = _ROW_INDEX.get(self)  # kept outside the estimator: extend never changes its __dict__
        if index is None or index[0] is not fit:
            rows = np.ascontiguousarray(fit, dtype=float)
            index = _ROW_INDEX[self] = (fit, {r.tobytes(): i for i, r in enumerate(rows)})
        lookup = index[1]
        return np.fromiter((lookup.get(r.tobytes(), -1) for r in X), dtype=np.intp, count=X.shape[0])

    def _training_rows_by_digest(self, X) -> np.ndarray:
        digests = self.training_row_digests_
        index = _ROW_INDEX.get(self)
        if index is None or index[0] is not digests:
            index = _ROW_INDEX[self] = (digests, {r.tobytes(): i for i, r in enumerate(digests)})
        lookup = index[1]
        return np.fromiter((lookup.get(r.tobytes(), -1) for r in row_digests(X)), dtype=np.intp,
                           count=X.shape[0])

    def inverse_transform(self, W):
        """Rows rebuilt from their coefficients: W H."""
        self.check_is_fitted("inverse_transform")
        W_in = W
        W = np.atleast_2d(np.asarray(W, dtype=float))
        if W.shape[1] != self.n_components_:
            raise DataError(f"Coefficients have {W.shape[1]} columns; the model has "
                            f"{self.n_components_} components.")
        return self._in_precision_of(W @ self.components_, W_in)

    reconstruct = inverse_transform

    def training_curve(self):
        """The cost against iterations (TrainingCurve), or None before fit."""
        if not hasattr(self, "loss_curve_"):
            return None
        return TrainingCurve(f"NMF cost ({self.loss})", self.loss_iterations_, {"cost": self.loss_curve_},
                             "iteration", "cost", final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["reconstruction_err"] = round(float(self.reconstruction_err_), 6)
            out["n_iter"] = int(self.n_iter_)
        return out

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.positive_only = True
        return tags


@hookimpl
def register_algorithms():
    return [NMF]


__all__ = ["NMF", "check_non_negative"]
