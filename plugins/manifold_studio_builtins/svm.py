"""Support vector machine (seed 003: hard- and soft-margin SVM, the dual, kernels).

The soft-margin SVM minimises ½‖a‖² + C Σ ε_i subject to u_i (a·Φ(x_i) + b) ≥ 1 − ε_i,
ε_i ≥ 0; its dual (seed 003) is::

    max_α  Σ α_i − ½ Σ_ij α_i α_j u_i u_j k(x_i, x_j)    s.t.  0 ≤ α_i ≤ C,  Σ α_i u_i = 0

and the decision function is f(x) = Σ α_i u_i k(x_i, x) + b (the hard margin is C → ∞).
It is solved by SMO with second-order working-set selection and shrinking
(:mod:`manifold_studio.algorithms.smo`); for the linear, rbf, poly and sigmoid kernels on dense
data without probabilities, the kernel rows are formed only when SMO first needs them, as libsvm
does (:mod:`manifold_studio.algorithms.smo_steps`), otherwise the kernel matrix once. Kernels: linear, rbf, poly, sigmoid, the seed's
kernel on sets 2^|A∩A′| for 0/1 feature vectors, sums and products of these ("rbf+linear",
"rbf*poly"), or a precomputed kernel matrix. Several classes: one-vs-one with voting, as
libsvm; optional probabilities by Platt scaling (:mod:`manifold_studio.algorithms.platt`).
Attributes follow scikit-learn's SVC (``support_``, ``dual_coef_``, ``intercept_``, ...).
scipy.sparse input: the kernels are formed from sparse products (never a dense copy of X) and the
support vectors stay sparse. ``max_iter=-1`` bounds SMO at libsvm's max(10⁷, 100·n) steps per pair
with a ConvergenceWarning (an unscaled polynomial kernel can otherwise stall for ever).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms import AnyOf, Bool, Choice, ClassificationAlgorithm, Float, Int
from manifold_studio.algorithms.checks import check_data, check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.kernels import (
    SVM_KERNELS, check_precomputed, combined_kernel, parse_kernel, scale_gamma,
)
from manifold_studio.algorithms.params import random_state_param, tol_param
from manifold_studio.algorithms.platt import pairwise_coupling, sigmoid_predict, sigmoid_train
from manifold_studio.algorithms.smo import iteration_bound, solve_smo
from manifold_studio.algorithms.smo_steps import ROW_KERNELS, KernelRows
from manifold_studio.algorithms.sparse_input import SparseInput, is_sparse
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError
from manifold_studio.hookspecs import hookimpl

#: the dense kernel matrix is refused above this many training points (n² float64 = 2 GB)
MAX_DENSE = 16_000


@dataclass(frozen=True)
class KernelChoice(Choice):
    """A kernel name or a sum/product expression of kernels ("rbf+linear", "rbf*poly")."""

    def _check(self, value):
        if value == "precomputed":
            return value
        try:
            parse_kernel(value)
        except ValueError:
            super()._check("__invalid__" if value in self.choices else value)
        return value.replace(" ", "")

    def _describe(self):
        return super()._describe() + ", or sums (+) and products (*) of linear, rbf, poly, sigmoid, set"


class SVM(SparseInput, ClassificationAlgorithm):
    """Soft-margin support vector machine solved by SMO (libsvm's recipe).

    Parameters
    ----------
    C : float
        Penalty of the slacks (0 ≤ α ≤ C); large C approaches the hard margin.
    kernel : str
        "linear", "rbf", "poly", "sigmoid", "set" (2^|A∩A′| on 0/1 data), "precomputed"
        (X is the kernel matrix: (n, n) for fit, (m, n_train) for new points), or sums and
        products of kernels such as "rbf+linear" or "rbf*poly" (* before +).
    gamma : "scale", "auto" or float
        Kernel scale: "scale" = 1 / (d · Var(X)) (scikit-learn's default), "auto" = 1 / d.
    degree, coef0 : polynomial degree and constant term (poly, sigmoid).
    tol : float
        Stop when the maximal KKT violation is below tol.
    max_iter : int
        Limit of SMO steps per pair of classes; −1 (default): libsvm's bound max(10⁷, 100·n)
        (n: the points of the pair), as scikit-learn's SVC. A ConvergenceWarning when reached.
    shrinking : bool
        Shrink the active set as libsvm (same solution, faster).
    probability : bool
        Platt-scaled ``predict_proba`` (5-fold internal cross-validation per pair of classes).
    random_state : int or None
        Seed of the cross-validation folds of ``probability``.
    decision_function_shape : {"ovr", "ovo"}
        Multi-class scores: one per class (votes + confidence, scikit-learn's default) or one
        per pair of classes.

    Attributes
    ----------
    support_, support_vectors_, n_support_, dual_coef_, intercept_ : as scikit-learn's SVC
        (binary: positive decision means ``classes_[1]``).
    coef_ : linear kernel only, (1, d) for two classes, (n_pairs, d) otherwise.
    n_iter_ : (n_pairs,) SMO steps; converged_ : bool.
    curve_steps_, objective_curve_, kkt_violation_curve_ : after every SMO slice.
    probA_, probB_ : Platt parameters per pair (with ``probability``).

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> clf = ms.get_algorithm("svm", kernel="rbf", C=1.0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    id = "svm"
    name = "Support vector machine"
    help = ("Finds the separating boundary with the widest margin, allowing some points inside the "
            "margin or misclassified at a cost C each (soft margin; large C approaches the hard "
            "margin). The dual problem, solved by SMO, keeps only the support vectors; kernels give "
            "non-linear boundaries: Gaussian (rbf), polynomial, sigmoid, the kernel on sets "
            "2^|A∩A'| for 0/1 features, their sums and products, or a precomputed kernel matrix. "
            "Several classes are separated pair by pair (one-vs-one) and vote. Optional class "
            "probabilities by Platt scaling.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "classes_": Fitted(shape=("n_classes",), kinds="biufU", required=True),
        "support_vectors_": Fitted(shape=("n_support_vectors", "n_features_in_"), required=True),
        "dual_coef_": Fitted(shape=(None, "n_support_vectors"), required=True),
        "intercept_": Fitted(shape=(None,), required=True),
        "support_": Fitted(shape=("n_support_vectors",), kinds="iu"),
        "n_support_": Fitted(shape=("n_classes",), kinds="iu"),
    }

    params = (
        Float("C", 1.0, "Cost of each unit of margin violation; large C approaches the hard margin.",
              low=0.0, low_open=True, log=True),
        KernelChoice("kernel", "rbf", "Kernel k(x, x′): linear, rbf exp(−γ‖x − x′‖²), poly "
                     "(γ x·x′ + coef0)^degree, sigmoid tanh(γ x·x′ + coef0), set 2^|A∩A′| (0/1 data), "
                     "precomputed (X is the kernel matrix), or sums/products like 'rbf+linear'.",
                     choices=SVM_KERNELS + ("rbf+linear", "rbf*poly")),
        AnyOf("gamma", "scale", "Kernel scale γ: 'scale' = 1 / (d · variance of X), 'auto' = 1 / d, "
              "or a positive number.",
              options=(Choice("gamma", "scale", choices=("scale", "auto")),
                       Float("gamma", 1.0, low=0.0, low_open=True))),
        Int("degree", 3, "Degree of the polynomial kernel.", low=0),
        Float("coef0", 0.0, "Constant term of the poly and sigmoid kernels."),
        tol_param(1e-3, "Stop when the largest violation of the optimality (KKT) conditions is below this."),
        Int("max_iter", -1, "Limit of SMO steps per pair of classes (−1: libsvm's bound, the larger of "
            "10,000,000 and 100 x the number of points, as scikit-learn); a warning when reached.", low=-1),
        Bool("shrinking", True, "Shrink the set of active variables during SMO (same result, faster)."),
        Bool("probability", False, "Compute class probabilities by Platt scaling (fits extra "
             "models by 5-fold cross-validation)."),
        random_state_param("Seed of the cross-validation folds used for the probabilities."),
        Choice("decision_function_shape", "ovr", "Multi-class scores: one per class ('ovr', votes "
               "plus confidence) or one per pair of classes ('ovo').", choices=("ovr", "ovo")),
    )

    # -- kernels ----------------------------------------------------------------------------
    @property
    def _precomputed(self) -> bool:
        return self._p["kernel"] == "precomputed"

    def _kernel(self, X, Y, progress=None):
        p = self._p
        return combined_kernel(X, Y, p["kernel"], gamma=self.gamma_, degree=p["degree"],
                               coef0=p["coef0"], progress=progress)

    def _check_new_data(self, X, what: str = "extend"):
        if self.is_fitted and getattr(self, "_p", None) and self._precomputed:
            K = check_data(X, name="X_new", min_samples=1)
            n = int(self.n_features_in_)
            if K.shape[1] != n:   # scikit-learn's wording, then what a precomputed kernel needs
                raise DataError(f"X has {K.shape[1]} features, but {type(self).__name__} is expecting {n} "
                                f"features as input: kernel='precomputed' needs an (m, {n}) matrix for new "
                                f"points (their kernel values with the {n} training points).")
        return super()._check_new_data(X, what)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.pairwise = self.kernel == "precomputed"   # X is the (n, n) matrix of the training points
        tags.input_tags.sparse = self.kernel != "precomputed"
        return tags

    # -- fitting ------------------------------------------------------------------------------
    def _fit_classes(self, X, y_idx, progress):
        p = self._p
        n = X.shape[0]
        if n > MAX_DENSE:
            raise DataError(f"The SVM keeps the whole {n:,} × {n:,} kernel matrix in memory; this build "
                            f"accepts at most {MAX_DENSE:,} training points (subsample the data).")
        # rows grouped by class, so the kernel of a pair of classes is four contiguous blocks
        order = np.argsort(y_idx, kind="stable")
        # the usual kernels on dense points: each pair's kernel rows are formed when SMO needs
        # them (libsvm's way: most are never needed); otherwise the whole matrix, once
        by_rows = (not self._precomputed and not is_sparse(X) and not p["probability"]
                   and p["kernel"] in ROW_KERNELS)
        if by_rows:
            self.gamma_ = scale_gamma(p["gamma"], X)
            Xo = np.ascontiguousarray(X[order], dtype=float)
        elif self._precomputed:
            if is_sparse(X):
                raise DataError("kernel='precomputed' needs the kernel matrix as a dense array, not a "
                                "sparse matrix.")
            check_precomputed(X)
            self.gamma_ = 0.0
            K = np.ascontiguousarray(X[np.ix_(order, order)], dtype=float)
        else:
            self.gamma_ = scale_gamma(p["gamma"], X)
            K = self._kernel(X[order], None)
        k = len(self.classes_)
        start = np.searchsorted(y_idx[order], np.arange(k + 1))
        pairs = [(i, j) for i in range(k) for j in range(i + 1, k)]
        if by_rows and k > 2:   # one buffer for the kernel rows of every pair
            buffer = np.empty(int(np.sort(np.diff(start))[-2:].sum()) ** 2)
        pub = CurvePublisher(progress, "SVM: KKT violation and dual objective", x_label="SMO step",
                             y_label="value", log_y=True)
        steps, obj, viol = [], [], []
        offset = [0]
        first_slice = 10     # one curve for all pairs: its slices keep growing from pair to pair

        def on_slice(res):
            steps.append(offset[0] + res.n_iter)
            obj.append(res.objective[-1])
            viol.append(res.violation[-1])
            pub.add(steps[-1], **{"KKT violation": viol[-1], "−dual objective": -obj[-1]})

        alphas, rhos, n_iter, converged, bounds = [], [], [], True, []
        self.probA_, self.probB_ = np.zeros(len(pairs)), np.zeros(len(pairs))
        rng = check_random_state(p["random_state"]) if p["probability"] else None
        for q, (i, j) in enumerate(pairs):
            si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
            idx = np.concatenate([order[si], order[sj]])
            u = np.where(y_idx[idx] == j, 1.0, -1.0)
            if by_rows:
                Kq = (KernelRows(Xo, p["kernel"], self.gamma_, p["coef0"], p["degree"]) if len(pairs) == 1 else
                      KernelRows(np.concatenate([Xo[si], Xo[sj]]), p["kernel"], self.gamma_, p["coef0"],
                                 p["degree"], buffer=buffer))
            else:
                Kq = K if len(pairs) == 1 else np.block([[K[si, si], K[si, sj]], [K[sj, si], K[sj, sj]]])
            name = f"classes {self.classes_[i]} / {self.classes_[j]}"
            progress.checkpoint(q / len(pairs), f"SMO ({name}), pair {q + 1}/{len(pairs)}")
            res = solve_smo(Kq, u, p["C"], tol=p["tol"], shrinking=p["shrinking"], max_iter=p["max_iter"],
                            progress=progress, on_slice=on_slice, fraction=(q / len(pairs), (q + 1) / len(pairs)),
                            first_slice=first_slice, message=f"SMO ({name})" if k > 2 else "SMO")
            first_slice = res.last_slice
            offset[0] += res.n_iter
            alphas.append((idx, res.alpha * u))
            rhos.append(res.rho)
            n_iter.append(res.n_iter)
            converged &= res.converged
            if not res.converged:
                bounds.append(iteration_bound(p["max_iter"], idx.size))
            if p["probability"]:
                progress.checkpoint((q + 1) / len(pairs), f"Platt scaling ({name})")
                self.probA_[q], self.probB_[q] = self._platt(Kq, u, rng)
        pub.flush()
        self._set_model(X, y_idx, pairs, alphas, rhos)
        self.n_iter_ = np.asarray(n_iter, dtype=np.int64)
        self.converged_ = bool(converged)
        self.curve_steps_ = np.asarray(steps, dtype=float)
        self.objective_curve_ = np.asarray(obj, dtype=float)
        self.kkt_violation_curve_ = np.asarray(viol, dtype=float)
        if not p["probability"]:
            del self.probA_, self.probB_
        if not converged:
            what = (f"max_iter={p['max_iter']}" if p["max_iter"] >= 0 else
                    f"its iteration bound ({max(bounds):,} steps: max_iter=-1 means max(10,000,000, 100 x n) as libsvm)")
            self._warn(f"SMO reached {what} before the KKT violation fell below tol={p['tol']:g} "
                       f"({len(bounds)} of {len(pairs)} pair(s) of classes); the solution is approximate. "
                       "Standardising the features usually helps.", ConvergenceWarning)

    def _platt(self, K, u, rng, n_folds: int = 5):
        """Platt's A, B from decision values of 5-fold cross-validation (libsvm's procedure);
        oriented as libsvm: P(first class of the pair) = 1 / (1 + exp(A f + B)), f = −f_mine."""
        p = self._p
        n = u.shape[0]
        perm = rng.permutation(n)
        dec = np.zeros(n)
        for f in range(n_folds):
            test = perm[f * n // n_folds:(f + 1) * n // n_folds]
            train = np.setdiff1d(perm, test)
            ut = u[train]
            if np.all(ut > 0) or np.all(ut < 0):
                dec[test] = ut[0]
                continue
            res = solve_smo(K[np.ix_(train, train)], ut, p["C"], tol=p["tol"], shrinking=p["shrinking"],
                            max_iter=p["max_iter"])
            dec[test] = K[np.ix_(test, train)] @ (res.alpha * ut) - res.rho
        return sigmoid_train(-dec, u < 0)

    def _set_model(self, X, y_idx, pairs, alphas, rhos):
        """scikit-learn's SVC layout: support vectors grouped by class, dual_coef_ (k−1, n_SV)."""
        k, n = len(self.classes_), X.shape[0]
        is_sv = np.zeros(n, dtype=bool)
        for idx, a in alphas:
            is_sv[idx[a != 0]] = True
        self.support_ = np.concatenate([np.flatnonzero(is_sv & (y_idx == c)) for c in range(k)]).astype(np.int32)
        self.n_support_ = np.array([np.count_nonzero(is_sv & (y_idx == c)) for c in range(k)], dtype=np.int32)
        pos = np.full(n, -1)
        pos[self.support_] = np.arange(self.support_.size)
        dual = np.zeros((k - 1, self.support_.size))
        intercept = np.zeros(len(pairs))
        for q, ((i, j), (idx, a), rho) in enumerate(zip(pairs, alphas, rhos)):
            nz = idx[a != 0]
            coef = -a[a != 0]          # libsvm orientation: positive towards class i
            rows = np.where(y_idx[nz] == i, j - 1, i)
            dual[rows, pos[nz]] = coef
            intercept[q] = rho
        if k == 2:   # scikit-learn's binary orientation: positive towards classes_[1]
            dual, intercept = -dual, -intercept
        self.dual_coef_ = dual
        self.intercept_ = intercept
        self.support_vectors_ = (np.empty((0, X.shape[1])) if self._precomputed
                                 else X[self.support_] if is_sparse(X)    # sparse stays sparse
                                 else np.ascontiguousarray(X[self.support_]))
        if self._p["kernel"] == "linear":
            self.coef_ = self._pair_coefs(self.support_vectors_)

    def _pair_coefs(self, SV):
        """Per pair Σ coef · SV (the ovo decision of a linear kernel is coef·x + intercept)."""
        k = len(self.classes_)
        if k == 2:
            return np.asarray(self.dual_coef_ @ SV)
        start = np.concatenate([[0], np.cumsum(self.n_support_)])
        out = []
        for i in range(k):
            for j in range(i + 1, k):
                si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
                out.append(np.asarray(self.dual_coef_[j - 1, si] @ SV[si] + self.dual_coef_[i, sj] @ SV[sj]).ravel())
        return np.asarray(out)

    # -- scores ---------------------------------------------------------------------------------
    def _ovo(self, X):
        """(m, n_pairs) pair decisions, libsvm orientation (positive: the first class of the pair)."""
        Kx = X[:, self.support_] if self._precomputed else self._kernel(X, self.support_vectors_)
        k = len(self.classes_)
        if k == 2:
            return -(Kx @ self.dual_coef_[0] + self.intercept_[0])[:, None]
        start = np.concatenate([[0], np.cumsum(self.n_support_)])
        out = np.empty((X.shape[0], len(self.intercept_)))
        q = 0
        for i in range(k):
            for j in range(i + 1, k):
                si, sj = slice(start[i], start[i + 1]), slice(start[j], start[j + 1])
                out[:, q] = Kx[:, si] @ self.dual_coef_[j - 1, si] + Kx[:, sj] @ self.dual_coef_[i, sj] \
                    + self.intercept_[q]
                q += 1
        return out

    def _votes(self, dec):
        k = len(self.classes_)
        votes = np.zeros((dec.shape[0], k))
        conf = np.zeros((dec.shape[0], k))
        q = 0
        for i in range(k):
            for j in range(i + 1, k):
                votes[:, i] += dec[:, q] > 0
                votes[:, j] += dec[:, q] <= 0
                conf[:, i] += dec[:, q]
                conf[:, j] -= dec[:, q]
                q += 1
        return votes, conf

    def _decision(self, X):
        dec = self._ovo(X)
        if len(self.classes_) == 2:
            return -dec[:, 0]
        if self._p["decision_function_shape"] == "ovo":
            return dec
        votes, conf = self._votes(dec)
        return votes + conf / (3.0 * (np.abs(conf) + 1.0))

    def _extend(self, X):
        dec = self._ovo(X)
        if len(self.classes_) == 2:
            return self.classes_[(dec[:, 0] <= 0).astype(np.intp)]
        votes, _ = self._votes(dec)
        return self.classes_[np.argmax(votes, axis=1)]   # ties: the first class, as libsvm

    def _has_proba(self) -> bool:
        return bool(self.probability)

    def _proba(self, X):
        if not hasattr(self, "probA_"):
            raise DataError("This SVM was fitted with probability=False: refit with probability=True "
                            "to get predict_proba.")
        dec = self._ovo(X)
        k = len(self.classes_)
        r = np.clip(sigmoid_predict(dec, self.probA_, self.probB_), 1e-7, 1 - 1e-7)
        if k == 2:
            return np.column_stack([r[:, 0], 1.0 - r[:, 0]])
        R = np.zeros((X.shape[0], k, k))
        q = 0
        for i in range(k):
            for j in range(i + 1, k):
                R[:, i, j] = r[:, q]
                R[:, j, i] = 1.0 - r[:, q]
                q += 1
        return pairwise_coupling(R)

    def training_curve(self):
        if not hasattr(self, "kkt_violation_curve_"):
            return None
        return TrainingCurve("SVM: KKT violation and dual objective", self.curve_steps_,
                             {"KKT violation": self.kkt_violation_curve_,
                              "−dual objective": -self.objective_curve_},
                             x_label="SMO step", y_label="value", log_y=True, final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_support_vectors"] = int(self.support_.size)
            out["smo_steps"] = int(self.n_iter_.sum())
            out["converged"] = self.converged_
        return out


@hookimpl
def register_algorithms():
    return [SVM]
