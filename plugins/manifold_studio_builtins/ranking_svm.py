"""Ranking SVM (Joachims 2002; seed 003, "Ranking SVM").

Rows are documents d of queries q, described by features Φ(q, d) and a relevance label.
The Ranking SVM learns a weight vector a with::

    a·(Φ(q, d_i) − Φ(q, d_j)) ≥ 1 − ε_ij,  ε_ij ≥ 0   for every pair with d_i more relevant than d_j
    minimising ½‖a‖² + C Σ ε_ij

which is a linear SVM without bias on the pair differences z = Φ_i − Φ_j. It is solved by the
project's SMO (:mod:`manifold_studio.algorithms.smo`) on the symmetric set {(z, +1), (−z, −1)}:
by symmetry the optimal bias is 0, and each pair counted twice takes cost C/2, so the solution
is exactly that of the problem above. The score of a document is a·Φ(q, d) (extend returns it,
shape (m, 1)); :func:`ranking_quality` measures pairwise accuracy and Kendall's τ per query.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import EmbeddingAlgorithm, Float, Int
from manifold_studio.algorithms.checks import label_vector
from manifold_studio.algorithms.curves import CurvePublisher, TrainingCurve
from manifold_studio.algorithms.params import tol_param
from manifold_studio.algorithms.smo import solve_smo
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError
from manifold_studio.hookspecs import hookimpl

#: most ordered pairs accepted (the SMO keeps the dense 2P × 2P Gram matrix of differences: 2 GB)
MAX_PAIRS = 8_000


def _split(X: np.ndarray, query_column):
    """(query ids, features) of the rows of X."""
    if query_column is None:
        return np.zeros(X.shape[0]), X
    if query_column >= X.shape[1]:
        raise DataError(f"query_column={query_column} is out of range: X has {X.shape[1]} columns "
                        f"(0 to {X.shape[1] - 1}).")
    return X[:, query_column], np.delete(X, query_column, axis=1)


def _relevance(y, n: int) -> np.ndarray:
    if y is None:
        raise DataError("y is missing: the Ranking SVM requires y to be passed, but the target y is None. "
                        "Give one relevance label per row (larger = more relevant).")
    y = label_vector(y)
    if y.shape[0] != n:
        raise DataError(f"y has {y.shape[0]} relevance labels for {n} rows.")
    try:
        rel = y.astype(float)
    except (TypeError, ValueError):
        raise DataError("The Ranking SVM needs numeric relevance labels y (larger = more relevant).") from None
    if not np.all(np.isfinite(rel)):
        raise DataError("The relevance labels y contain NaN or infinite values.")
    return rel


def ordered_pairs(queries: np.ndarray, relevance: np.ndarray) -> np.ndarray:
    """(P, 2) row indices (i, j) of the same query with relevance[i] > relevance[j]."""
    out = []
    for q in np.unique(queries):
        idx = np.flatnonzero(queries == q)
        r = relevance[idx]
        i, j = np.nonzero(r[:, None] > r[None, :])
        out.append(np.column_stack([idx[i], idx[j]]))
    return np.concatenate(out) if out else np.empty((0, 2), dtype=np.intp)


def ranking_quality(scores, relevance, queries=None) -> dict:
    """Pairwise accuracy (fraction of the ordered pairs of the same query scored in the right
    order; equal scores count as wrong) and Kendall's τ-b of scores vs relevance per query."""
    from scipy.stats import kendalltau

    scores = np.asarray(scores, dtype=float).ravel()
    relevance = np.asarray(relevance, dtype=float).ravel()
    queries = np.zeros(scores.shape[0]) if queries is None else np.asarray(queries).ravel()
    pairs = ordered_pairs(queries, relevance)
    acc = float(np.mean(scores[pairs[:, 0]] > scores[pairs[:, 1]])) if len(pairs) else float("nan")
    taus = {}
    for q in np.unique(queries):
        idx = queries == q
        if np.unique(relevance[idx]).size > 1:
            taus[q.item() if hasattr(q, "item") else q] = float(kendalltau(scores[idx], relevance[idx]).statistic)
    return {"pairwise_accuracy": acc, "n_pairs": int(len(pairs)), "kendall_tau": taus,
            "mean_kendall_tau": float(np.mean(list(taus.values()))) if taus else float("nan")}


class RankingSVM(EmbeddingAlgorithm):
    """Ranking SVM: a linear score a·Φ(q, d) that orders the documents of each query.

    Parameters
    ----------
    query_column : int or None
        Index of the column of X holding the query id (the other columns are the features
        Φ(q, d)); None: all rows belong to one query.
    C : float
        Cost of each violated pair constraint.
    tol, max_iter : SMO stopping rule and step limit (−1: none).

    Attributes
    ----------
    coef_ : (1, d_features) the weight vector a (features without the query column).
    embedding_ : (n, 1) scores of the training rows.
    n_pairs_ : number of ordered pairs; n_iter_, converged_; curve_steps_, kkt_violation_curve_.

    Examples
    --------
    >>> import numpy as np
    >>> import manifold_studio as ms
    >>> F = np.random.default_rng(0).normal(size=(40, 3))
    >>> relevance = (F @ [1.0, -0.5, 0.2] > 0).astype(int)
    >>> est = ms.get_algorithm("ranking_svm", C=1.0).fit(F, relevance)
    >>> scores = est.embedding_[:, 0]
    >>> est.embedding_.shape
    (40, 1)
    >>> bool(scores[relevance == 1].mean() > scores[relevance == 0].mean())
    True
    """

    id = "ranking_svm"
    name = "Ranking SVM"
    help = ("Learns to rank (Joachims): rows are documents of queries (a query id column) with a "
            "relevance label; the method finds a weight vector a such that, within each query, a "
            "more relevant document gets a higher score a·x, with a margin and a cost C per "
            "violated pair — a linear SVM on the differences of the features of ordered pairs. "
            "The result is one score per row (a 1-D map); new rows are scored the same way.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "coef_": Fitted(shape=(1, "n_features_in_"), required=True),
    }

    params = (
        Int("query_column", None, "Index of the column holding the query id (the other columns are "
            "the features); empty: all rows belong to one query.", low=0, allow_none=True),
        Float("C", 1.0, "Cost of each pair ordered against its relevance.", low=0.0, low_open=True, log=True),
        tol_param(1e-3, "Stop SMO when the largest KKT violation is below this."),
        Int("max_iter", -1, "Limit of SMO steps (−1: no limit).", low=-1),
    )
    requires_labels = True

    def _check_labels(self, y, n: int):
        return _relevance(y, n)

    def _fit(self, X, y, progress):
        p = self._p
        queries, F = _split(X, p["query_column"])
        pairs = ordered_pairs(queries, y)
        if len(pairs) == 0:
            raise DataError("No pair to learn from: within every query all rows have the same relevance "
                            "(the Ranking SVM needs at least one query with two different relevance labels).")
        if len(pairs) > MAX_PAIRS:
            raise DataError(f"{len(pairs):,} ordered pairs: this solver keeps their dense Gram matrix and "
                            f"accepts at most {MAX_PAIRS:,} (use fewer documents per query).")
        progress.checkpoint(0.0, f"Ranking SVM: {len(pairs):,} ordered pairs")
        Z = F[pairs[:, 0]] - F[pairs[:, 1]]
        Zs = np.vstack([Z, -Z])
        u = np.r_[np.ones(len(Z)), -np.ones(len(Z))]
        pub = CurvePublisher(progress, "Ranking SVM: KKT violation", x_label="SMO step",
                             y_label="KKT violation", log_y=True)
        res = solve_smo(Zs @ Zs.T, u, p["C"] / 2.0, tol=p["tol"], max_iter=p["max_iter"], progress=progress,
                        on_slice=lambda r: pub.add(r.n_iter, **{"KKT violation": r.violation[-1]}),
                        message="Ranking SVM")
        pub.flush()
        self.coef_ = ((res.alpha * u) @ Zs)[None, :]
        self.embedding_ = F @ self.coef_.T
        self.n_pairs_ = int(len(pairs))
        self.n_iter_ = int(res.n_iter)
        self.converged_ = bool(res.converged)
        self.curve_steps_ = np.asarray(res.iterations, dtype=float)
        self.kkt_violation_curve_ = np.asarray(res.violation, dtype=float)
        if not res.converged:
            self._warn(f"SMO reached max_iter={p['max_iter']} before convergence; the ranking is "
                       "approximate.", ConvergenceWarning)

    def _extend(self, X):
        return _split(X, self._p["query_column"])[1] @ self.coef_.T

    def ranking_quality(self, X, y) -> dict:
        """Pairwise accuracy and Kendall's τ per query of this model's scores on (X, y)."""
        X = self._check_new_data(X, "ranking_quality")
        queries, _ = _split(X, self._p["query_column"])
        return ranking_quality(self.extend(X)[:, 0], _relevance(y, X.shape[0]), queries)

    def training_curve(self):
        if not hasattr(self, "kkt_violation_curve_"):
            return None
        return TrainingCurve("Ranking SVM: KKT violation", self.curve_steps_,
                             {"KKT violation": self.kkt_violation_curve_}, x_label="SMO step",
                             y_label="KKT violation", log_y=True, final=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_pairs"] = self.n_pairs_
            out["smo_steps"] = self.n_iter_
        return out


@hookimpl
def register_algorithms():
    return [RankingSVM]
