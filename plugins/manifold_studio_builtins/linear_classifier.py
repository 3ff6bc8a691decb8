"""Linear classifiers trained by minimising a loss (seed 003, "Descente en gradient" and
"C'est un problème d'optimisation").

h(x) = a·x + b, labels u = ±1. Two losses of the seed:

* ``squared``  ½ (a·x + b − u)²  — the seed's empirical error E(a, b); its per-example
  gradient step is the Widrow–Hoff rule a ← a + τ (u − (a·x + b)) x, b ← b + τ (u − (a·x + b));
* ``logistic`` log(1 + e^(−u (a·x + b))).

With L2 regularisation in scikit-learn's convention: minimise ½‖a‖² + C Σ loss (b not
penalised). Solvers: ``lbfgs`` (scipy's L-BFGS-B with the analytic gradient; the squared loss
has a closed form, the ridge normal equations, used instead) and ``seed`` (the seed's
per-example rule, compiled in :mod:`manifold_studio.algorithms.linear_loops`). scipy.sparse
input is used through products only (L-BFGS), the normal equations with implicit centring
(ridge: the squared loss with lbfgs solves a dense d × d system, so it suits up to a few thousand
features), or the per-example rule on the stored values (:mod:`~manifold_studio.algorithms.sparse_loops`).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Bool, Choice, ClassificationAlgorithm, Float
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.kmeans_core import blas_single_thread
from manifold_studio.algorithms.linear_loops import (
    LOSS_CODES, as_order, epoch_slices, gradient_epoch, softmax_epoch,
)
from manifold_studio.algorithms.one_vs_rest import binary_problems, fit_one_vs_rest, ovr_proba, ovr_scores
from manifold_studio.algorithms.params import max_iter_param, random_state_param, tol_param
from manifold_studio.algorithms.sparse_input import SparseInput, is_sparse, row_sq_norms
from manifold_studio.algorithms.sparse_loops import gradient_epoch_csr, softmax_epoch_csr
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, FitCancelled, InvalidParameterError
from manifold_studio.hookspecs import hookimpl


def _penalty(a: np.ndarray, C: float, n: int) -> float:
    return 0.0 if np.isinf(C) else float(np.dot(a.ravel(), a.ravel())) / (2.0 * C * n)


def binary_objective(a, b, X, u, loss: str, C: float) -> float:
    """(½‖a‖² + C Σ loss) / (C n): the mean loss plus ‖a‖² / (2 C n)."""
    z = X @ a + b
    if loss == "squared":
        value = 0.5 * np.mean((z - u) ** 2)
    else:
        value = np.mean(np.logaddexp(0.0, -u * z))
    return float(value) + _penalty(a, C, X.shape[0])


def _logistic_fun_grad(w, X, u, inv_cn):
    a, b = w[:-1], w[-1]
    z = X @ a
    z += b
    m = u * z
    value = np.mean(np.logaddexp(0.0, -m)) + 0.5 * inv_cn * np.dot(a, a)
    from scipy.special import expit  # lazy: kept off the start-up

    r = expit(-m)
    r *= -u
    r /= X.shape[0]
    grad = np.empty_like(w)
    grad[:-1] = X.T @ r + inv_cn * a
    grad[-1] = r.sum()
    return value, grad


def _multinomial_fun_grad(w, X, Yt, inv_cn, K):
    """Softmax loss and gradient; scores kept as (K, n) so the reductions over the classes run
    along contiguous rows (numpy's axis-1 reductions over 3 columns are several times slower)."""
    d = X.shape[1]
    W = w[:K * d].reshape(K, d)
    Zt = W @ X.T
    Zt += w[K * d:, None]
    n = X.shape[0]
    Zt -= Zt.max(axis=0)                         # log Σ_k e^(z_k) − z_y is shift-invariant
    Pt = np.exp(Zt)
    s = Pt.sum(axis=0)
    value = (np.log(s).sum() - np.einsum("ij,ij->", Zt, Yt)) / n + 0.5 * inv_cn * np.dot(w[:K * d], w[:K * d])
    Pt /= s
    Pt -= Yt
    Pt /= n
    grad = np.empty_like(w)
    grad[:K * d] = (Pt @ X + inv_cn * W).ravel()
    grad[K * d:] = Pt.sum(axis=1)
    return value, grad


class LinearClassifier(SparseInput, ClassificationAlgorithm):
    """Linear classifier minimising a squared (Widrow–Hoff) or logistic loss with L2 penalty.

    Objective (scikit-learn's convention for C, the intercept b not penalised)::

        ½‖a‖² + C Σ_(x,u) loss(u, a·x + b)

    The seed writes the regularised problem as Σ loss + C′‖a, b‖ with C′ the *strength* of
    the penalty. Dividing ours by C gives Σ loss + (1/C)·½‖a‖²: our C is the inverse of the
    seed's constant (C′ ↔ 1/(2C) with the penalty taken squared), the bias is left out of
    the norm (penalising b would make the result depend on where the origin is), and
    ``C = inf`` is the seed's unregularised error. ``loss_curve_`` records that objective
    divided by C·n (the mean loss plus ‖a‖²/(2Cn)), as scikit-learn's solvers do.

    Parameters
    ----------
    loss : {"squared", "logistic"}
        ½(a·x + b − u)² (the seed's error E, Widrow–Hoff) or log(1 + e^(−u(a·x + b))).
    C : float
        Inverse regularisation strength (> 0; ``inf``: no regularisation).
    solver : {"lbfgs", "seed"}
        "lbfgs": scipy's L-BFGS-B on the objective with its analytic gradient (the squared
        loss: the exact ridge solution of the normal equations). "seed": the seed's
        per-example gradient rule from a = 0, b = 0, examples in data order, one pass per
        epoch: a ← (1 − τ/(C n))·a − τ ∂loss/∂z·x, b ← b − τ ∂loss/∂z (for the squared loss
        and C = inf, exactly Widrow–Hoff).
    learning_rate : float or None
        Step τ of the seed rule; None: 1 / (1 + max ‖x‖²) (each Widrow–Hoff update then shrinks
        the residual of its example, so the rule cannot diverge).
    max_iter : int
        Iterations of L-BFGS, or epochs of the seed rule.
    tol : float
        L-BFGS: tolerance on the projected gradient (as scikit-learn). Seed rule: stop when an
        epoch lowers the objective by less than ``tol`` times its value (0: run max_iter).
    multi_class : {"auto", "ovr", "multinomial"}
        More than two classes: one-vs-rest problems, or the multinomial (softmax) logistic
        loss, one output per class (with either solver). "auto": multinomial for the logistic
        loss, one-vs-rest for the squared loss.
    shuffle : bool
        Seed rule: visit the examples in a new random order at every epoch.
    random_state : int or None
        Seed of the shuffling.

    Attributes
    ----------
    coef_ : (1, d) for two classes, (K, d) otherwise.
    intercept_ : (1,) or (K,).
    n_iter_ : iterations (or epochs) run, the largest over one-vs-rest problems.
    n_iter_per_class_ : (P,) iterations of each problem.
    loss_curve_ : (n_iter_,) objective / (C n) after each iteration (summed over the problems).
    learning_rate_ : the step τ used by the seed rule (solver="seed").
    multinomial_ : whether the softmax (one output per class) was fitted.
    stopped_early_ : True when Cancel was pressed after at least one complete iteration: the
        current coefficients are kept (problems not reached keep a = 0, b = 0 and are named in
        ``fit_warnings_``).
    converged_ : bool.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> clf = ms.get_algorithm("linear_classifier", loss="logistic").fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    preserves_float32 = True
    float32_attributes = ('coef_', 'intercept_')
    id = "linear_classifier"
    name = "Linear classifier (squared / logistic loss)"
    help = ("Finds the hyperplane a·x + b that minimises a loss over the training examples plus an "
            "L2 penalty on a: the squared error ½(a·x + b − u)² of the seed (whose per-example "
            "gradient step is the Widrow–Hoff rule) or the logistic loss log(1 + e^(−u(a·x+b))), "
            "which also gives class probabilities. Unlike the perceptron it converges when the "
            "classes overlap. C is the inverse of the penalty's strength (large C: fit the data "
            "closely). Several classes: one-vs-rest, or multinomial (softmax) for the logistic loss.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "classes_": Fitted(shape=(None,), kinds="biufU", required=True),
        "coef_": Fitted(shape=("n_outputs", "n_features_in_"), required=True),
        "intercept_": Fitted(shape=("n_outputs",), required=True),
    }

    params = (
        Choice("loss", "squared", "'squared': the seed's error ½(a·x + b − u)² (Widrow–Hoff); "
               "'logistic': log(1 + e^(−u(a·x + b))), with class probabilities.",
               choices=("squared", "logistic")),
        Float("C", 1.0, "Inverse regularisation strength: minimise ½‖a‖² + C Σ loss (b is not "
              "penalised). Smaller C: stronger penalty, smoother boundary; inf: no penalty.",
              low=0.0, low_open=True, log=True),
        Choice("solver", "lbfgs", "'lbfgs': a quasi-Newton method that converges in few iterations "
               "(the squared loss is solved exactly); 'seed': the seed's per-example gradient rule "
               "with step learning_rate, one pass per epoch.", choices=("lbfgs", "seed")),
        Float("learning_rate", None, "Step τ of the seed rule (solver='seed'); too large a step "
              "makes it diverge. Empty: 1 / (1 + max ‖x‖²), a step at which every update is "
              "stable.", low=0.0, low_open=True, log=True, allow_none=True),
        max_iter_param(100, "Maximum iterations of L-BFGS, or epochs of the seed rule."),
        tol_param(1e-4, "Stopping tolerance: on the gradient for L-BFGS, on the relative decrease "
                  "of the objective per epoch for the seed rule (0: run max_iter epochs)."),
        Choice("multi_class", "auto", "More than two classes: 'ovr' (one binary problem per class), "
               "'multinomial' (softmax, logistic loss only) or 'auto' (multinomial for the logistic "
               "loss, one-vs-rest for the squared loss).", choices=("auto", "ovr", "multinomial")),
        Bool("shuffle", False, "Seed rule: visit the examples in a new random order at every epoch "
             "(off: data order)."),
        random_state_param("Seed of the shuffling (solver='seed' with shuffle on)."),
    )

    def _has_proba(self) -> bool:
        return getattr(self, "loss", None) == "logistic"

    def _multinomial(self) -> bool:
        p = self._p
        if p["multi_class"] == "multinomial" and p["loss"] != "logistic":
            raise InvalidParameterError(
                f"multi_class='multinomial' needs loss='logistic' (got loss={p['loss']!r}); use "
                "multi_class='ovr' or 'auto' for the squared loss.")
        return p["multi_class"] != "ovr" and p["loss"] == "logistic" and len(self.classes_) > 2

    # -- fitting ------------------------------------------------------------------------
    def _fit_classes(self, X, y_idx, progress):
        p = self._p
        if not is_sparse(X):
            X = np.ascontiguousarray(X, dtype=float)
        self.multinomial_ = self._multinomial()
        self._cancelled_at = None       # (problem title, iterations done) once Cancel was pressed
        self._iters_done = 0            # complete iterations / epochs over all problems so far
        if p["solver"] == "seed":
            self.learning_rate_ = (1.0 / (1.0 + float(np.max(row_sq_norms(X))))
                                   if p["learning_rate"] is None else p["learning_rate"])
        rng = check_random_state(p["random_state"]) if p["shuffle"] and p["solver"] == "seed" else None
        if self.multinomial_:
            fit = self._fit_multinomial_seed if p["solver"] == "seed" else self._fit_multinomial
            results = [fit(X, y_idx, progress, rng)]
            coef, intercept = results[0][0], results[0][1]
        elif p["loss"] == "squared" and p["solver"] == "lbfgs":
            coef, intercept, results = self._fit_ridge(X, y_idx, progress)
        else:
            fit = self._fit_seed if p["solver"] == "seed" else self._fit_logistic
            results = fit_one_vs_rest(y_idx, self.classes_,
                                      lambda u, sub, k, title: fit(X, u, sub, title, rng), progress)
            coef = np.array([r[0] for r in results])
            intercept = np.array([r[1] for r in results], dtype=float)
        self.coef_, self.intercept_ = np.asarray(coef, dtype=float), np.asarray(intercept, dtype=float)
        curves = [np.asarray(r[2], dtype=float) for r in results]
        self.n_iter_per_class_ = np.array([len(c) for c in curves], dtype=np.int64)
        self.n_iter_ = int(self.n_iter_per_class_.max())
        padded = [np.concatenate([c, np.full(self.n_iter_ - len(c), c[-1] if len(c) else 0.0)]) for c in curves]
        self.loss_curve_ = np.sum(padded, axis=0)
        self.converged_ = bool(all(r[3] for r in results))
        if self._cancelled_at is not None:
            title, done = self._cancelled_at
            untrained = [f"class '{self.classes_[j]}' vs rest" for j, c in enumerate(curves) if not len(c)]
            self._stop_early(f"after {done} of at most {p['max_iter']} "
                             + ("epochs" if p["solver"] == "seed" else "L-BFGS iterations")
                             + (f" of {title}" if title else "")
                             + (f"; not trained (a = 0, b = 0): {', '.join(untrained)}" if untrained else ""))
        elif not self.converged_:
            what = "epochs of the seed rule" if p["solver"] == "seed" else "L-BFGS iterations"
            self._warn(f"The linear classifier did not converge in {p['max_iter']} {what}; "
                       "increase max_iter" + (" or learning_rate" if p["solver"] == "seed" else "")
                       + " (the last coefficients are kept).", ConvergenceWarning)

    def _fit_ridge(self, X, y_idx, progress):
        """Squared loss, exactly: (Xcᵀ Xc + I/C) a = Xcᵀ uc, b = ū − x̄·a (one solve for all
        one-vs-rest problems)."""
        C = self._p["C"]
        progress.checkpoint(0.0, "normal equations")
        k_plus = binary_problems(len(self.classes_))
        U = np.column_stack([np.where(y_idx == k, 1.0, -1.0) for k in k_plus])
        x_mean, u_mean = np.asarray(X.mean(axis=0)).ravel(), U.mean(axis=0)
        with blas_single_thread():   # thin products: a second BLAS thread only waits on a busy machine
            if is_sparse(X):        # implicit centring: Xcᵀ Xc = Xᵀ X − n x̄ x̄ᵀ, Xcᵀ (U − ū) = Xᵀ (U − ū)
                A = (X.T @ X).toarray() - X.shape[0] * np.outer(x_mean, x_mean)
                rhs = np.asarray(X.T @ (U - u_mean))
            else:
                Xc = X - x_mean
                A = Xc.T @ Xc
                rhs = Xc.T @ (U - u_mean)
        if np.isinf(C):
            coef = np.linalg.lstsq(A, rhs, rcond=None)[0]
        else:
            A[np.diag_indices_from(A)] += 1.0 / C
            coef = np.linalg.solve(A, rhs)
        coef = coef.T
        intercept = u_mean - coef @ x_mean
        progress.checkpoint(1.0, "normal equations solved")
        results = [(None, None, [binary_objective(coef[j], intercept[j], X, U[:, j], "squared", C)], True)
                   for j in range(len(k_plus))]
        for r, k in zip(results, k_plus):
            pub = CurvePublisher(progress, self._curve_title(k), x_label="iteration", y_label="objective")
            pub.add(1, train=r[2][0])
            pub.flush()
        return coef, intercept, results

    def _curve_title(self, k=None) -> str:
        title = "Objective per " + ("epoch" if self._p["solver"] == "seed" else "iteration")
        return title if k is None or len(self.classes_) == 2 else f"{title} (class '{self.classes_[k]}' vs rest)"

    def _lbfgs(self, fun, w0, progress, title):
        """L-BFGS-B with scikit-learn's options; returns (w, objective per iteration, converged)."""
        p = self._p
        pub = CurvePublisher(progress, "Objective per iteration" + (f" ({title})" if title else ""),
                             x_label="iteration", y_label="objective")
        curve: list[float] = []
        last = [w0]
        if self._cancelled_at is not None:          # Cancel pressed during an earlier problem
            return w0, curve, False

        def callback(intermediate_result):
            last[0] = np.array(intermediate_result.x, copy=True)
            self._iters_done += 1
            curve.append(float(intermediate_result.fun))
            pub.add(len(curve), train=curve[-1])
            progress.checkpoint(len(curve) / p["max_iter"], f"iteration {len(curve)}, objective {curve[-1]:.6g}")

        try:
            progress.checkpoint(0.0, "L-BFGS")
            with blas_single_thread():   # thin products: a second BLAS thread only waits on a busy machine
                from scipy.optimize import minimize  # lazy: kept off the start-up
                res = minimize(fun, w0, method="L-BFGS-B", jac=True, callback=callback,
                               options={"maxiter": p["max_iter"], "maxls": 50, "gtol": p["tol"],
                                        "ftol": 64 * np.finfo(float).eps})
        except FitCancelled:
            # Cancel keeps the last iterate once an iteration has been completed
            if self._iters_done == 0:
                raise
            self._cancelled_at = (title, len(curve))
            pub.flush()
            return last[0], curve, False
        if not curve:
            curve.append(float(res.fun))
        pub.flush()
        converged = bool(res.success) or res.nit < p["max_iter"]
        return res.x, curve, converged

    def _inv_cn(self, n: int) -> float:
        C = self._p["C"]
        return 0.0 if np.isinf(C) else 1.0 / (C * n)

    def _fit_logistic(self, X, u, progress, title, rng):
        w, curve, ok = self._lbfgs(lambda w: _logistic_fun_grad(w, X, u, self._inv_cn(X.shape[0])),
                                   np.zeros(X.shape[1] + 1), progress, title)
        return w[:-1], float(w[-1]), curve, ok

    def _fit_multinomial(self, X, y_idx, progress, rng=None):
        K, d = len(self.classes_), X.shape[1]
        Yt = np.zeros((K, X.shape[0]))
        Yt[y_idx, np.arange(X.shape[0])] = 1.0
        inv_cn = self._inv_cn(X.shape[0])
        w, curve, ok = self._lbfgs(lambda w: _multinomial_fun_grad(w, X, Yt, inv_cn, K),
                                   np.zeros(K * (d + 1)), progress, "")
        return w[:K * d].reshape(K, d), w[K * d:], curve, ok

    def _fit_seed(self, X, u, progress, title, rng):
        """The seed's per-example rule on one ±1 problem."""
        p = self._p
        C, tau = p["C"], self.learning_rate_
        shrink = 1.0 if np.isinf(C) else 1.0 - tau / (C * X.shape[0])
        a, b = np.zeros(X.shape[1]), np.zeros(1)
        code = LOSS_CODES[p["loss"]]

        def run(order, start, stop):
            if is_sparse(X):
                b[0] = gradient_epoch_csr(X.data, X.indices, X.indptr, u, a, b[0], tau, shrink, code,
                                          order, start, stop)[0]
            else:
                b[0] = gradient_epoch(X, u, a, b[0], tau, shrink, code, order, start, stop)[0]

        curve, converged = self._seed_epochs(X, run, lambda: binary_objective(a, b[0], X, u, p["loss"], C),
                                             progress, title, rng)
        return a, float(b[0]), curve, converged

    def _fit_multinomial_seed(self, X, y_idx, progress, rng):
        """The seed's per-example rule on the softmax loss (one output per class)."""
        C, tau = self._p["C"], self.learning_rate_
        n, d, K = X.shape[0], X.shape[1], len(self.classes_)
        shrink = 1.0 if np.isinf(C) else 1.0 - tau / (C * n)
        W, b, z = np.zeros((K, d)), np.zeros(K), np.zeros(K)
        y64 = y_idx.astype(np.int64)
        Yt = np.zeros((K, n))
        Yt[y_idx, np.arange(n)] = 1.0
        inv_cn = self._inv_cn(n)

        def objective():
            return _multinomial_fun_grad(np.concatenate([W.ravel(), b]), X, Yt, inv_cn, K)[0]

        def run(order, start, stop):
            if is_sparse(X):
                softmax_epoch_csr(X.data, X.indices, X.indptr, y64, W, b, tau, shrink, order, start, stop, z)
            else:
                softmax_epoch(X, y64, W, b, tau, shrink, order, start, stop, z)

        curve, converged = self._seed_epochs(X, run, objective, progress, "", rng)
        return W, b, curve, converged

    def _seed_epochs(self, X, run, objective, progress, title, rng):
        """Epochs of a compiled per-example rule ``run(order, start, stop)`` (in slices, with
        checkpoints), the objective after each, until it decreases by less than tol.
        Returns (objective per epoch, converged)."""
        pub = CurvePublisher(progress, self._curve_title() + (f" ({title})" if title else ""),
                             x_label="epoch", y_label="objective")
        curve: list[float] = []
        if self._cancelled_at is not None:          # Cancel pressed during an earlier problem
            return curve, False
        try:
            converged = self._run_epochs(X, run, objective, progress, rng, pub, curve)
        except FitCancelled:
            # Cancel keeps the current coefficients once an epoch has been completed
            if self._iters_done == 0:
                raise
            self._cancelled_at = (title, len(curve))
            converged = False
        pub.flush()
        return curve, converged

    def _run_epochs(self, X, run, objective, progress, rng, pub, curve) -> bool:
        p = self._p
        n, d = X.shape
        max_iter, tol, tau = p["max_iter"], p["tol"], self.learning_rate_
        order = as_order(n)
        slices = epoch_slices(n, d)
        converged = tol == 0.0
        for epoch in range(max_iter):
            if rng is not None:
                order = as_order(n, rng)
            for start, stop in slices:
                progress.checkpoint((epoch + start / n) / max_iter, f"epoch {epoch + 1}/{max_iter}")
                run(order, start, stop)
            self._iters_done += 1
            value = objective()
            if not np.isfinite(value):
                bound = 1.0 / float(np.max(row_sq_norms(X)) + 1.0)
                raise InvalidParameterError(
                    f"The seed rule diverged at epoch {epoch + 1} with learning_rate={tau:g}: the "
                    f"step is too large for these data; try learning_rate below {bound:.3g} "
                    "(1 / (1 + max ‖x‖²), the automatic step when learning_rate is empty) or standardise "
                    "the features.")
            curve.append(value)
            pub.add(epoch + 1, train=value)
            if tol > 0 and len(curve) > 1 and curve[-2] - curve[-1] <= tol * abs(curve[-1]):
                converged = True
                break
        return converged

    # -- scores ---------------------------------------------------------------------------
    def _decision(self, X):
        return ovr_scores(X @ self.coef_.T + self.intercept_)

    def _proba(self, X):
        Z = X @ self.coef_.T + self.intercept_
        if self.multinomial_:
            Z -= Z.max(axis=1, keepdims=True)
            P = np.exp(Z)
            return P / P.sum(axis=1, keepdims=True)
        return ovr_proba(Z)

    def training_curve(self):
        if not hasattr(self, "loss_curve_"):
            return None
        return TrainingCurve(self._curve_title(), np.arange(1, self.n_iter_ + 1), {"train": self.loss_curve_},
                             x_label="epoch" if self._p["solver"] == "seed" else "iteration",
                             y_label="objective / (C n)", final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_iter"] = self.n_iter_
            out["converged"] = self.converged_
            out["objective"] = round(float(self.loss_curve_[-1]), 8)
        return out


@hookimpl
def register_algorithms():
    return [LinearClassifier]
