"""Choosing the number of clusters k (seed 000 "Comment choisir le nombre de classes k ?", seed 001 §V.2.b).

The within-cluster inertia W cannot choose k: it keeps decreasing as k grows, even on a
validation set. Seed 000's remedy: build the Gaussian mixture corresponding to each partition
(weights = cluster proportions, means = centroids, covariances = within-cluster covariances)
and compare the **log-likelihood of held-out data** under it; it rises while clusters are
real and falls once they start splitting them. :func:`choose_k` does exactly that:

1. split the data at random into a training part and a validation part
   (``validation_fraction``);
2. for every k, fit the clustering method on the training part, then record
   W (within-cluster inertia of the training partition), the Davies–Bouldin index and the
   silhouette of that partition (seed 001), and the mean log-likelihood per validation point of
   the mixture built from it (optionally refined by a few EM steps on the training part);
3. suggest k from the validation log-likelihood: the smallest k whose value is within one
   standard error (of the mean over the validation points, at the best k) of the highest
   value. Past the true number of clusters the curve is nearly flat (a Gaussian split in two
   is still modelled well by two Gaussians), so the plain maximum (the seed's literal rule,
   reported as ``suggestions["validation_log_likelihood_max"]``) often lands one or two k too
   high by noise; the one-standard-error rule prefers the simpler partition in that case.
   The k each other criterion would pick is reported too.

Qt-free: runs in a worker thread with ``progress`` (checkpoints, cancel via FitCancelled,
and ``partial(row)`` after each k so a view can draw the curves as they come).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from manifold_studio import algorithm_class
from manifold_studio.algorithms.base import Algorithm
from manifold_studio.algorithms.checks import check_data, check_random_state
from manifold_studio.algorithms.params import Int
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.analysis.metrics import (
    UndefinedMetricError,
    davies_bouldin,
    inertia_decomposition,
    log_gaussian,
    logsumexp_rows,
    mixture_from_partition,
    mixture_from_responsibilities,
    mixture_log_likelihood,
    silhouette,
)
from manifold_studio.errors import DataError, InvalidParameterError

__all__ = ["ChooseKResult", "choose_k", "SUGGESTION_RULE", "cluster_count_param", "validation_split"]

SUGGESTION_RULE = ("smallest k whose validation log-likelihood (mean log p(x) of the held-out points "
                   "under the Gaussian mixture built from the training partition, seed 000) is within "
                   "one standard error of the highest one")

#: names of the parameter that sets the number of clusters, by preference
_K_PARAM_NAMES = ("n_clusters", "n_components")


@dataclass
class ChooseKResult:
    """Criteria per k (arrays aligned with ``k``; NaN where a criterion is undefined)."""

    k: np.ndarray                          #: the k values tried
    within: np.ndarray                     #: W of the training partition
    total: float                           #: T of the training part (W/T is the unexplained share)
    davies_bouldin: np.ndarray             #: DB of the training partition (NaN for k = 1)
    silhouette: np.ndarray                 #: mean silhouette (NaN for k = 1)
    validation_log_likelihood: np.ndarray  #: mean log p(x) per validation point
    validation_log_likelihood_se: np.ndarray  #: its standard error (std / sqrt(n_validation))
    train_log_likelihood: np.ndarray       #: mean log p(x) per training point (same mixture)
    n_clusters_found: np.ndarray           #: clusters actually formed (a method may form fewer)
    suggested_k: int                       #: see ``rule``
    rule: str = SUGGESTION_RULE            #: how suggested_k was chosen
    suggestions: dict = field(default_factory=dict)  #: criterion name -> the k it would pick
    algorithm: str = ""                    #: id of the clustering method
    params: dict = field(default_factory=dict)       #: its other parameters
    train_index: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    validation_index: np.ndarray = field(default_factory=lambda: np.empty(0, dtype=np.intp))
    labels: dict = field(default_factory=dict)       #: k -> labels of the training points

    def as_table(self) -> list[dict[str, Any]]:
        """One row per k (JSON-friendly), for a run log or a table view."""
        rows = []
        for i, k in enumerate(self.k):
            rows.append({"k": int(k), "within": float(self.within[i]),
                         "davies_bouldin": _nan_to_none(self.davies_bouldin[i]),
                         "silhouette": _nan_to_none(self.silhouette[i]),
                         "validation_log_likelihood": _nan_to_none(self.validation_log_likelihood[i]),
                         "validation_log_likelihood_se": _nan_to_none(self.validation_log_likelihood_se[i]),
                         "train_log_likelihood": _nan_to_none(self.train_log_likelihood[i]),
                         "n_clusters_found": int(self.n_clusters_found[i])})
        return rows


def _nan_to_none(v):
    v = float(v)
    return None if np.isnan(v) else v


def _resolve_algorithm(method) -> type[Algorithm]:
    if isinstance(method, str):
        return algorithm_class(method)
    if isinstance(method, type) and issubclass(method, Algorithm):
        return method
    if isinstance(method, Algorithm):
        return type(method)
    raise InvalidParameterError(f"Invalid clustering method {method!r}: give an algorithm id such as "
                                "'kmeans' or an algorithm class.")


def cluster_count_param(cls) -> str:
    """The name of the parameter of clustering algorithm ``cls`` that sets the number of clusters,
    read off its constraints: an integer ``n_clusters`` (or ``n_components``, a mixture's).
    Raises InvalidParameterError naming the algorithm when it has none."""
    if cls.kind != "clustering":
        raise InvalidParameterError(f"The algorithm '{cls.id or cls.__name__}' is not a clustering method "
                                    f"(it is a {cls.kind or 'generic'} method): choosing k needs one with "
                                    "an n_clusters or n_components parameter.")
    names = cls.param_constraints()
    for name in _K_PARAM_NAMES:
        if isinstance(names.get(name), Int):
            return name
    raise InvalidParameterError(f"The algorithm '{cls.id or cls.__name__}' has no n_clusters or "
                                "n_components parameter, so k cannot be varied.")


def validation_split(n: int, fraction: float, random_state=None) -> tuple[np.ndarray, np.ndarray]:
    """``(train rows, validation rows)``, both sorted: a seeded random share ``fraction`` of the
    ``n`` rows held out (at least 1 row, and at least 1 row kept for training)."""
    if not 0.0 < fraction < 1.0:
        raise InvalidParameterError(f"Invalid value {fraction!r} for 'validation_fraction': "
                                    "allowed a number in (0, 1).")
    rng = check_random_state(random_state)
    n_val = min(max(int(round(n * fraction)), 1), n - 1)
    perm = rng.permutation(n)
    return np.sort(perm[n_val:]), np.sort(perm[:n_val])


def _elbow(k, w):
    """The k after which W stops dropping fast: largest ratio of the drop before k to the drop after."""
    if len(k) < 3:
        return int(k[0])
    before = w[:-2] - w[1:-1]
    after = w[1:-1] - w[2:]
    scale = max(abs(w[0]), 1e-300)
    ratio = before / np.maximum(after, 1e-12 * scale)
    return int(k[1 + int(np.argmax(ratio))])


def choose_k(X, k_values=range(1, 11), method="kmeans", params: dict | None = None, *,
             validation_fraction: float = 0.25, covariance_type: str = "full", reg_covar: float = 1e-6,
             em_steps: int = 0, silhouette_max_points: int = 5000, random_state=None,
             progress=None, fit=None) -> ChooseKResult:
    """Run a clustering method for every k in ``k_values`` and compare the criteria.

    Parameters
    ----------
    X : (n, d) data.
    k_values : iterable of k >= 1 (e.g. ``range(1, 11)``).
    method : algorithm id (``"kmeans"``, ``"hierarchical"``, ``"gmm"``, ...) or an algorithm class
        with an ``n_clusters`` or ``n_components`` parameter.
    params : other parameters of the method (k is set by this function). If the method has a
        ``random_state`` parameter that is not given, ``random_state`` is used.
    validation_fraction : share of the points held out to score the mixtures, in (0, 1).
    covariance_type : "full", "diag" or "spherical" covariances of the mixtures built from the
        partitions; ``reg_covar`` is added to their diagonals (keeps them invertible).
    em_steps : EM iterations refining each mixture on the training part (0: the mixture of the
        partition itself, as in the seed; the seed mentions EM as an option).
    fit : ``fit(unfitted estimator, X, progress) -> labels``, if given, does each fit (the window
        fits a third-party method in a worker process this way); by default it runs here.
    silhouette_max_points : the silhouette (O(n²) work) is computed on at most this many training
        points, drawn at random.
    random_state : seed of the split and of the subsample.
    progress : optional object with ``checkpoint(fraction, message)`` (raises FitCancelled on
        cancel) and optionally ``partial(row)``, called after each k with that k's criteria.
    """
    X = check_data(X, name="X", min_samples=2)
    progress = as_progress(progress)
    publish = getattr(progress, "partial", None)
    cls = _resolve_algorithm(method)
    k_name = cluster_count_param(cls)
    params = dict(params or {})
    params.pop(k_name, None)
    if "random_state" in cls.param_constraints() and "random_state" not in params \
            and isinstance(random_state, (int, np.integer)):
        params["random_state"] = int(random_state)
    ks = np.asarray(sorted({int(k) for k in k_values}), dtype=int)
    if ks.size == 0 or ks[0] < 1:
        raise InvalidParameterError(f"Invalid k values {list(k_values)!r}: give integers >= 1.")
    if covariance_type not in ("full", "diag", "spherical"):
        raise InvalidParameterError(f"Invalid value {covariance_type!r} for 'covariance_type': allowed "
                                    "'full', 'diag' or 'spherical'.")
    rng = check_random_state(random_state)
    n = X.shape[0]
    train_idx, val_idx = validation_split(n, validation_fraction, rng)
    n_val = val_idx.shape[0]
    X_train, X_val = X[train_idx], X[val_idx]
    if ks[-1] > X_train.shape[0]:
        raise DataError(f"k = {ks[-1]} is larger than the {X_train.shape[0]} training points "
                        f"({n} points minus {n_val} held out for validation): try smaller k values.")
    sil_idx = (rng.choice(X_train.shape[0], silhouette_max_points, replace=False)
               if X_train.shape[0] > silhouette_max_points else None)

    m = len(ks)
    within, db, sil = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    val_ll, train_ll, val_se = np.full(m, np.nan), np.full(m, np.nan), np.full(m, np.nan)
    found = np.zeros(m, dtype=int)
    all_labels = {}
    total = float(inertia_decomposition(X_train, np.zeros(X_train.shape[0], int)).total)
    for i, k in enumerate(ks):
        lo, hi = i / m, (i + 1) / m
        progress.checkpoint(lo, f"k = {k}: clustering {X_train.shape[0]:,} training points")
        est = cls(**{**params, k_name: int(k)})
        sub = _NoPartial(SubProgress(progress, lo, lo + 0.7 * (hi - lo), f"k = {k}: "))
        if fit is None:
            est.fit(X_train, progress=sub)
            labels = np.asarray(est.labels_)
        else:
            labels = np.asarray(fit(est, X_train, sub))
        all_labels[int(k)] = labels
        found[i] = np.unique(labels).shape[0]
        progress.checkpoint(lo + 0.7 * (hi - lo), f"k = {k}: quality measures")
        within[i] = inertia_decomposition(X_train, labels).within
        try:
            db[i] = davies_bouldin(X_train, labels)
        except UndefinedMetricError:
            pass
        try:
            if sil_idx is None:
                sil[i] = silhouette(X_train, labels)
            else:
                sil[i] = silhouette(X_train[sil_idx], labels[sil_idx])
        except UndefinedMetricError:
            pass
        progress.checkpoint(lo + 0.85 * (hi - lo), f"k = {k}: validation log-likelihood")
        mixture = mixture_from_partition(X_train, labels, covariance_type, reg_covar)
        for _ in range(int(em_steps)):
            wlp = log_gaussian(X_train, mixture.means, mixture.precisions_cholesky, covariance_type) \
                + np.log(mixture.weights)
            resp = np.exp(wlp - logsumexp_rows(wlp)[:, None])
            mixture = mixture_from_responsibilities(X_train, resp, covariance_type, reg_covar)
        train_ll[i] = float(mixture_log_likelihood(X_train, mixture).mean())
        ll_points = mixture_log_likelihood(X_val, mixture)
        val_ll[i] = float(ll_points.mean())
        val_se[i] = float(ll_points.std(ddof=1) / np.sqrt(ll_points.shape[0])) if ll_points.shape[0] > 1 else 0.0
        if publish is not None:
            publish({"step": "choose_k", "k": int(k), "within": within[i], "davies_bouldin": db[i],
                     "silhouette": sil[i], "validation_log_likelihood": val_ll[i],
                     "train_log_likelihood": train_ll[i]})
    progress.checkpoint(1.0, "Choosing k: done")

    best = int(np.nanargmax(val_ll))
    within_one_se = np.flatnonzero(val_ll >= val_ll[best] - val_se[best])
    suggestions = {"validation_log_likelihood": int(ks[within_one_se[0]]),
                   "validation_log_likelihood_max": int(ks[best])}
    if np.any(np.isfinite(sil)):
        suggestions["silhouette"] = int(ks[int(np.nanargmax(sil))])
    if np.any(np.isfinite(db)):
        suggestions["davies_bouldin"] = int(ks[int(np.nanargmin(db))])
    suggestions["within_elbow"] = _elbow(ks.astype(float), within)
    return ChooseKResult(k=ks, within=within, total=total, davies_bouldin=db, silhouette=sil,
                         validation_log_likelihood=val_ll, validation_log_likelihood_se=val_se,
                         train_log_likelihood=train_ll,
                         n_clusters_found=found, suggested_k=suggestions["validation_log_likelihood"],
                         suggestions=suggestions, algorithm=cls.id, params=params,
                         train_index=train_idx, validation_index=val_idx, labels=all_labels)


class _NoPartial:
    """Passes checkpoints through; drops the clustering method's partial results."""

    def __init__(self, inner):
        self.inner = inner

    def checkpoint(self, fraction, message=""):
        self.inner.checkpoint(fraction, message)
