"""The perceptron (seed 003, "Apprentissage de séparation linéaire : le perceptron").

The seed's algorithm, exactly, by default::

    a ← (0, …, 0); b ← 0
    repeat
        for each example (x, u) in data order, u = ±1:
            if (a·x + b)·u ≤ 0:  a ← a + τ u x;  b ← b + τ u
    until an epoch makes no mistake

It converges when the data are linearly separable and never otherwise; it then stops after
``max_epochs`` epochs with ``converged_ = False`` and a warning in the run's log. Several
classes are learned one-vs-rest (:mod:`manifold_studio.algorithms.one_vs_rest`). With a
``kernel``, the seed's remark a = Σ α_x x (α_x = τ N(x) u, N(x) the number of mistakes on x)
gives the kernel perceptron: the same loop on k(x, x′) instead of x·x′.
The epoch loops are compiled (:mod:`manifold_studio.algorithms.linear_loops`); scipy.sparse
input runs the same loops on the stored values only (:mod:`~manifold_studio.algorithms.sparse_loops`),
with the same result as the dense data.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Bool, Choice, ClassificationAlgorithm, Float, Int
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.kernels import kernel_matrix, resolve_gamma
from manifold_studio.algorithms.linear_loops import (
    as_order, epoch_slices, kernel_perceptron_epoch, perceptron_epoch,
)
from manifold_studio.algorithms.one_vs_rest import binary_problems, fit_one_vs_rest, ovr_scores
from manifold_studio.algorithms.params import random_state_param
from manifold_studio.algorithms.sparse_input import SparseInput, is_sparse
from manifold_studio.algorithms.sparse_loops import perceptron_epoch_csr
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError, FitCancelled
from manifold_studio.hookspecs import hookimpl

PERCEPTRON_KERNELS = ("linear", "rbf", "poly")
#: the kernel perceptron keeps the n x n training kernel in memory: at most this many rows (2 GB)
MAX_KERNEL_ROWS = 16_000


class Perceptron(SparseInput, ClassificationAlgorithm):
    """The perceptron of seed 003 (Rosenblatt's rule), optionally with a kernel.

    Parameters
    ----------
    tau : float
        Step τ > 0 of the update a ← a + τ u x, b ← b + τ u.
    max_epochs : int
        Maximum number of passes over the data (the loop stops earlier after an epoch
        without a mistake).
    shuffle : bool
        Visit the examples in a new random order at each epoch (False: data order, the seed).
    random_state : int or None
        Seed of the shuffling (used only when ``shuffle``).
    kernel : {None, "linear", "rbf", "poly"}
        None: the primal perceptron on a, b. Otherwise the kernel perceptron
        (a = Σ α_x x with x·x′ replaced by k(x, x′)).
    gamma, degree, coef0 : kernel parameters (see ``manifold_studio.algorithms.kernels``).

    Attributes
    ----------
    coef_ : (1, d) for two classes, (K, d) for K > 2 (one-vs-rest). For a kernel other than
        linear there is no ``coef_``; see ``support_vectors_`` and ``dual_coef_``.
    intercept_ : (1,) or (K,).
    n_epochs_ : int, epochs run (the largest over the one-vs-rest problems).
    converged_ : bool, whether every problem ended with an epoch without a mistake.
    mistakes_ : (n_epochs_,) mistakes per epoch, summed over the problems.
    mistakes_per_class_ : (P, n_epochs_) mistakes per epoch of each problem (0 after it stopped).
    n_epochs_per_class_ : (P,) epochs run by each problem.
    stopped_early_ : True when Cancel was pressed after at least one complete epoch: the fit
        then keeps the current hyperplane(s) instead of raising (problems not reached keep
        a = 0, b = 0 and are named in ``fit_warnings_``).
    support_vectors_, dual_coef_, mistake_counts_ : kernel perceptron only — the training rows
        with a mistake in some problem, τ·N(x)·u for each problem (P, n_sv), and N(x) (P, n_sv).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> X, y = X[y != "virginica"], y[y != "virginica"]
    >>> clf = ms.get_algorithm("perceptron").fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    preserves_float32 = True
    float32_attributes = ('coef_',)
    id = "perceptron"
    name = "Perceptron"
    help = ("Learns a separating hyperplane a·x + b = 0 by Rosenblatt's rule, as in the seed: start "
            "from a = 0, b = 0, visit the examples in order and, on every misclassified example "
            "(x, u), move the hyperplane towards it (a ← a + τ u x, b ← b + τ u); stop after an "
            "epoch without a mistake. It converges when the classes are linearly separable and "
            "otherwise stops at the epoch limit with a warning. Several classes are learned "
            "one-vs-rest. A kernel gives the kernel perceptron (non-linear boundaries).")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "classes_": Fitted(shape=(None,), kinds="biufU", required=True),
        "coef_": Fitted(shape=("n_outputs", "n_features_in_")),  # linear kernel only: the others keep dual_coef_
        "intercept_": Fitted(shape=("n_outputs",), required=True),
    }

    params = (
        Float("tau", 1.0, "Step τ of the update a ← a + τ u x, b ← b + τ u.", low=0.0, low_open=True,
              log=True),
        Int("max_epochs", 1000, "Maximum number of passes over the data; the loop stops earlier "
            "after an epoch without a mistake.", low=1, log=True),
        Bool("shuffle", False, "Visit the examples in a new random order at every epoch (off: "
             "data order, as in the seed)."),
        random_state_param("Seed of the shuffling, used only when shuffle is on (empty: a "
                           "different order every run)."),
        Choice("kernel", None, "Empty: the linear perceptron on a, b (the seed). 'linear', 'rbf' "
               "or 'poly': the kernel perceptron a = Σ α_x x with the dot product replaced by the "
               "kernel (keeps the training examples with mistakes).", choices=PERCEPTRON_KERNELS,
               allow_none=True),
        Float("gamma", None, "Kernel width/scale γ (rbf: exp(−γ‖x − x′‖²); poly: (γ x·x′ + coef0)^degree); "
              "empty: 1 / number of features.", low=0.0, low_open=True, allow_none=True, log=True),
        Int("degree", 3, "Degree of the polynomial kernel.", low=1),
        Float("coef0", 1.0, "Constant term of the polynomial kernel."),
    )

    # -- fitting ------------------------------------------------------------------------
    def _fit_classes(self, X, y_idx, progress):
        p = self._p
        if not is_sparse(X):
            X = np.ascontiguousarray(X, dtype=float)
        rng = check_random_state(p["random_state"]) if p["shuffle"] else None
        kernel = p["kernel"]
        if kernel is None:
            data = X
        else:
            if X.shape[0] > MAX_KERNEL_ROWS:
                raise DataError(
                    f"The kernel perceptron (kernel={kernel!r}) keeps the {X.shape[0]:,} x {X.shape[0]:,} "
                    f"kernel matrix in memory ({X.shape[0] ** 2 * 8 / 1e9:.1f} GB); it accepts at most "
                    f"{MAX_KERNEL_ROWS:,} training rows. Fit on a sample, or use the linear perceptron "
                    "(kernel empty).")
            self.gamma_ = resolve_gamma(p["gamma"], X.shape[1])
            data = kernel_matrix(X, X, kernel, gamma=self.gamma_, degree=p["degree"], coef0=p["coef0"])
        self._cancelled_at = None       # (problem title, epochs done) once Cancel was pressed
        self._epochs_done = 0           # complete epochs over all problems so far
        results = fit_one_vs_rest(y_idx, self.classes_,
                                  lambda u, sub, k, title: self._fit_binary(data, u, sub, title, rng),
                                  progress)
        weights = np.array([r[0] for r in results], dtype=float)     # (P, d) or (P, n) counts
        self.intercept_ = np.array([r[1] for r in results], dtype=float)
        per = [np.asarray(r[2], dtype=np.int64) for r in results]
        self.n_epochs_per_class_ = np.array([len(m) for m in per], dtype=np.int64)
        self.n_epochs_ = int(self.n_epochs_per_class_.max())
        self.mistakes_per_class_ = np.zeros((len(per), self.n_epochs_), dtype=np.int64)
        for j, m in enumerate(per):
            self.mistakes_per_class_[j, :len(m)] = m
        self.mistakes_ = self.mistakes_per_class_.sum(axis=0)
        self.converged_ = bool(all(r[3] for r in results))
        if kernel is None:
            self.coef_ = weights
        else:
            self._set_dual(X, y_idx, weights.astype(np.int64), p["tau"])
        if self._cancelled_at is not None:
            untrained = [self._problem_name(j) for j, r in enumerate(results) if not r[2]]
            title, done = self._cancelled_at
            self._stop_early(f"after {done} of at most {p['max_epochs']} epochs"
                             + (f" of {title}" if title else "")
                             + (f"; not trained: {', '.join(untrained)}" if untrained else ""))
        elif not self.converged_:
            bad = [self._problem_name(j) for j, r in enumerate(results) if not r[3]]
            self._warn(f"The perceptron did not converge in {p['max_epochs']} epochs"
                       f"{' (' + ', '.join(bad) + ')' if len(results) > 1 else ''}: the data are "
                       f"probably not linearly separable ({int(self.mistakes_[-1])} mistakes in the "
                       "last epoch). The last hyperplane is kept.", ConvergenceWarning)

    def _problem_name(self, j: int) -> str:
        return f"class '{self.classes_[j]}' vs rest"

    def _fit_binary(self, data, u, progress, title, rng):
        """One ±1 problem; returns (weights, b, mistakes per epoch, converged)."""
        p = self._p
        tau, max_epochs = p["tau"], p["max_epochs"]
        n = data.shape[0]
        kernel = p["kernel"] is not None
        if kernel:
            weights = np.zeros(n, dtype=np.int64)   # α: mistakes on each example
            f = np.zeros(n, dtype=float)            # Σ_j τ α_j u_j k(x_j, x_i)
            slices = epoch_slices(n, n)
        else:
            weights = np.zeros(data.shape[1], dtype=float)
            slices = epoch_slices(n, data.shape[1])
        b = 0.0
        mistakes: list[int] = []
        pub = CurvePublisher(progress, "Mistakes per epoch" + (f" ({title})" if title else ""),
                             x_label="epoch", y_label="mistakes")
        converged = False
        order = as_order(n)
        if self._cancelled_at is not None:          # Cancel pressed during an earlier problem
            return weights, b, mistakes, converged
        try:
            for epoch in range(max_epochs):
                if rng is not None:
                    order = as_order(n, rng)
                count = 0
                for start, stop in slices:
                    progress.checkpoint((epoch + start / n) / max_epochs,
                                        f"epoch {epoch + 1}/{max_epochs}, {sum(mistakes[-1:])} mistakes in the last")
                    if kernel:
                        b, c = kernel_perceptron_epoch(data, u, weights, f, b, tau, order, start, stop)
                    elif is_sparse(data):
                        b, c = perceptron_epoch_csr(data.data, data.indices, data.indptr, u, weights, b,
                                                    tau, order, start, stop)
                    else:
                        b, c = perceptron_epoch(data, u, weights, b, tau, order, start, stop)
                    count += int(c)
                mistakes.append(count)
                self._epochs_done += 1
                pub.add(epoch + 1, mistakes=count)
                if count == 0:
                    converged = True
                    break
            progress.checkpoint(1.0, f"{len(mistakes)} epochs" + (", converged" if converged else ", not converged"))
        except FitCancelled:
            # Cancel keeps the current hyperplane once some epoch has been completed (otherwise
            # there is nothing to keep and the fit is really cancelled)
            if self._epochs_done == 0:
                raise
            self._cancelled_at = (title, len(mistakes))
        pub.flush()
        return weights, float(b), mistakes, converged

    def _set_dual(self, X, y_idx, counts, tau):
        """Keep the training rows with a mistake in some problem, α = τ N(x) u per problem."""
        keep = np.flatnonzero(counts.any(axis=0))
        self.support_ = keep
        self.support_vectors_ = X[keep].copy()
        self.mistake_counts_ = counts[:, keep]
        k_plus = binary_problems(len(self.classes_))
        u = np.array([np.where(y_idx[keep] == k, 1.0, -1.0) for k in k_plus]).reshape(len(k_plus), -1)
        self.dual_coef_ = tau * self.mistake_counts_ * u
        if self._p["kernel"] == "linear":
            self.coef_ = np.asarray(self.dual_coef_ @ self.support_vectors_)

    # -- scores ---------------------------------------------------------------------------
    def _decision(self, X):
        if self._p["kernel"] is None:
            Z = X @ self.coef_.T + self.intercept_
        else:
            Kx = kernel_matrix(X, self.support_vectors_, self._p["kernel"], gamma=self.gamma_,
                               degree=self._p["degree"], coef0=self._p["coef0"])
            Z = Kx @ self.dual_coef_.T + self.intercept_
        return ovr_scores(Z)

    def training_curve(self):
        if not hasattr(self, "mistakes_"):
            return None
        series = {"mistakes": self.mistakes_}
        if self.mistakes_per_class_.shape[0] > 1:
            for j in range(self.mistakes_per_class_.shape[0]):
                series[self._problem_name(j)] = self.mistakes_per_class_[j]
        return TrainingCurve("Mistakes per epoch", np.arange(1, self.n_epochs_ + 1), series,
                             x_label="epoch", y_label="mistakes", final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_epochs"] = self.n_epochs_
            out["converged"] = self.converged_
            out["mistakes_last_epoch"] = int(self.mistakes_[-1])
            if hasattr(self, "support_"):
                out["n_support"] = int(self.support_.shape[0])
        return out


@hookimpl
def register_algorithms():
    return [Perceptron]
