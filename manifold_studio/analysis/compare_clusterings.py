"""Comparing clusterings (Qt-free): several clustering methods over a range of k, with every
measure of seed 001 side by side, and seed 000's validation log-likelihood.

For every method and every k, :func:`compare_clusterings` fits the method with that number of
clusters on **all rows** (the partition a run with these settings gives; its labels are kept)
and measures that partition with :mod:`manifold_studio.analysis.metrics`:

* W — within-cluster inertia, B — between-cluster inertia (T = W + B, König–Huygens);
* H — homogeneity (mean distance to the centroid, averaged over the clusters; lower is better);
* S — separability (mean distance between two centroids; higher is better);
* Davies–Bouldin (lower is better) and the mean silhouette (higher is better), the silhouette on
  at most ``silhouette_max_points`` rows drawn with the seed (O(n²) work);
* the validation log-likelihood (seed 000): the rows are split once, with the seed, into a
  training part and a held-out share ``validation``; the method is fitted again on the training
  part, and the figure is the mean log p(x) of the held-out rows. A probabilistic method (one with
  ``score_samples``, e.g. the Gaussian mixture) is scored by its own density; for any other method
  the density is the Gaussian mixture built from its training partition as seed 000 prescribes
  (weights = cluster shares, means = centroids, covariances = within-cluster covariances + a small
  ``reg_covar`` on the diagonal, :func:`~manifold_studio.analysis.metrics.mixture_from_partition`).

A measure that is undefined (Davies–Bouldin of one cluster, two clusters with one centroid, a
method that failed at that k, ...) is NaN with its reason in the row's ``notes``. A method that
cannot be fitted at one k is reported (``row.error`` names the method and k) and the other
(method, k) pairs are computed. The number-of-clusters parameter of each method is found in its
constraints (:func:`~manifold_studio.analysis.choose_k.cluster_count_param`). A method with a
``random_state`` parameter left empty gets ``seed``, so the same seed gives the same numbers.

::

    from manifold_studio.evaluation import compare_clusterings
    cmp = compare_clusterings(["kmeans", ("gmm", {"covariance_type": "diag"}), "hierarchical"],
                              X, range(2, 9), seed=0)
    print(cmp.format_table())
    cmp.values("kmeans", "silhouette")          # (len(k),) one curve
    cmp.row("gmm", 3).labels                    # the partition of all rows
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.checks import check_data, check_random_state
from manifold_studio.algorithms.pipeline import make_pipeline
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.analysis.choose_k import _NoPartial, cluster_count_param, validation_split
from manifold_studio.analysis.metrics import (
    UndefinedMetricError,
    davies_bouldin,
    homogeneity,
    inertia_decomposition,
    mixture_from_partition,
    mixture_log_likelihood,
    separability,
    silhouette,
)
from manifold_studio.errors import DataError, FitCancelled, InvalidParameterError, error_message
from manifold_studio.plugins.host import get_host

__all__ = ["MEASURES", "TITLES", "LOWER_IS_BETTER", "ClusteringRow", "ClusteringComparison",
           "compare_clusterings", "compare_on_dataset", "cluster_count_methods", "parse_k_range"]

MEASURES = ("within", "between", "homogeneity", "separability", "davies_bouldin", "silhouette",
            "validation_log_likelihood")
TITLES = {"within": "W", "between": "B", "homogeneity": "H", "separability": "S",
          "davies_bouldin": "Davies–Bouldin", "silhouette": "Silhouette",
          "validation_log_likelihood": "Validation log-lik."}
LONG_TITLES = {"within": "W, within-cluster inertia (lower is better)",
               "between": "B, between-cluster inertia (higher is better)",
               "homogeneity": "H, homogeneity (lower is better)",
               "separability": "S, separability (higher is better)",
               "davies_bouldin": "Davies–Bouldin index (lower is better)",
               "silhouette": "mean silhouette (higher is better)",
               "validation_log_likelihood": "validation log-likelihood per held-out row (higher is better)"}
LOWER_IS_BETTER = frozenset({"within", "homogeneity", "davies_bouldin"})
SILHOUETTE_MAX_POINTS = 5000


@dataclass
class ClusteringRow:
    """One (method, k): the measures of its partition of all rows, and that partition."""

    method: str                      #: display name (the algorithm id, numbered when repeated)
    algorithm: str                   #: algorithm id
    k: int                           #: the number of clusters asked for
    params: dict                     #: every parameter given to the method (k and the seed included)
    measures: dict                   #: measure -> value (NaN where not available)
    notes: dict = field(default_factory=dict)  #: measure -> why it is not available
    labels: np.ndarray | None = None  #: (n,) cluster of every row (None when the fit failed)
    n_clusters_found: int = 0        #: clusters the method actually formed
    validation_how: str = ""         #: "model density" or "mixture of the partition" (seed 000)
    fit_time: float = float("nan")   #: seconds of the fit on all rows
    error: str = ""                  #: why the method could not be fitted at this k, or ""

    def value(self, measure: str) -> float:
        return float(self.measures.get(measure, float("nan")))


@dataclass
class ClusteringComparison:
    """Every (method, k) of a comparison, method by method, k ascending."""

    k_values: list                   #: the k tried
    methods: list                    #: display names, in the order given
    rows: list                       #: [ClusteringRow], method-major
    seed: int | None
    validation: float | None         #: held-out share (None: no validation log-likelihood)
    train_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    validation_index: np.ndarray = field(default_factory=lambda: np.zeros(0, np.intp))
    n_samples: int = 0
    total: float = float("nan")      #: T, the inertia of all rows (W + B of every row)

    def row(self, method: str, k: int) -> ClusteringRow:
        for r in self.rows:
            if r.method == method and r.k == int(k):
                return r
        raise KeyError(f"no row for method '{method}' and k = {k}")

    def method_rows(self, method: str) -> list[ClusteringRow]:
        return [r for r in self.rows if r.method == method]

    def values(self, method: str, measure: str) -> np.ndarray:
        """(len(k_values),) the measure of ``method`` for each k (NaN where not available)."""
        return np.array([self.row(method, k).value(measure) for k in self.k_values], dtype=float)

    def best(self, method: str, measure: str) -> int | None:
        """The k the measure prefers for ``method`` (None when it is nowhere available). W and B
        always prefer the largest k and say nothing about the right one."""
        v = self.values(method, measure)
        if not np.isfinite(v).any():
            return None
        v = np.where(np.isfinite(v), v, np.inf if measure in LOWER_IS_BETTER else -np.inf)
        i = int(np.argmin(v) if measure in LOWER_IS_BETTER else np.argmax(v))
        return int(self.k_values[i])

    @property
    def failures(self) -> list[str]:
        return [r.error for r in self.rows if r.error]

    def table(self) -> list[dict]:
        """One dict per row: method, k, clusters found, every measure (NaN where n/a), notes."""
        return [{"method": r.method, "k": r.k, "n_clusters_found": r.n_clusters_found,
                 **{m: r.value(m) for m in MEASURES},
                 "notes": "; ".join(f"{TITLES[m]}: {why}" for m, why in r.notes.items())} for r in self.rows]

    def format_table(self, measures=MEASURES) -> str:
        head = ["Method", "k"] + [TITLES[m] for m in measures]
        body = [[r.method, str(r.k)] + [format_value(r.value(m), m) for m in measures] for r in self.rows]
        widths = [max(len(row[c]) for row in [head] + body) for c in range(len(head))]
        return "\n".join("  ".join(t.ljust(w) if c == 0 else t.rjust(w) for c, (t, w) in enumerate(zip(row, widths)))
                         .rstrip() for row in [head] + body)


def format_value(v: float, measure: str) -> str:
    """The table's text of a measure value ("n/a" where it is not available)."""
    if not np.isfinite(v):
        return "n/a"
    if measure in ("within", "between"):
        return f"{v:.6g}"
    return f"{v:.4f}"


def cluster_count_methods(algorithms: dict) -> list[str]:
    """The ids of ``{id: class}`` whose constraints have a number-of-clusters parameter, sorted."""
    out = []
    for algo_id, cls in algorithms.items():
        try:
            cluster_count_param(cls)
        except InvalidParameterError:
            continue
        out.append(algo_id)
    return sorted(out)


def parse_k_range(text: str) -> list[int]:
    """``"2:8"`` (inclusive) or ``"2,3,5"`` as a list of k."""
    text = str(text).strip()
    try:
        if ":" in text:
            lo, _, hi = text.partition(":")
            return list(range(int(lo), int(hi) + 1))
        return [int(t) for t in text.split(",") if t.strip()]
    except ValueError:
        raise InvalidParameterError(f"Invalid k range '{text}': give FROM:TO (both included) such as 2:8, "
                                    "or a list such as 2,3,5.") from None


def _method_specs(methods, names, seed):
    """``[(name, class, k parameter, params)]`` of the methods, checked."""
    host = get_host()
    specs = []
    for m in methods:
        what, params = (m if isinstance(m, tuple) else (m, {}))
        if not isinstance(params, dict):
            raise InvalidParameterError("A method given as a tuple must be (algorithm id or class, params dict).")
        cls = host.algorithm_class(what) if isinstance(what, str) else what
        k_name = cluster_count_param(cls)
        params = {k: v for k, v in params.items() if k != k_name}
        for pname, v in params.items():
            if isinstance(v, str) and v == "precomputed":
                raise InvalidParameterError(
                    f"{cls.id}: {pname}='precomputed' reads X as distances, but the measures of a clustering "
                    "(W, B, silhouette, ...) need X as coordinates: compare with coordinates.")
        if "random_state" in cls.param_constraints() and params.get("random_state") is None and seed is not None:
            params["random_state"] = int(seed)
        cls(**params).validate_params()
        specs.append((cls, k_name, params))
    if names is None:
        ids = [cls.id for cls, _, _ in specs]
        names = [a if ids.count(a) == 1 else f"{a} #{ids[:i + 1].count(a)}" for i, a in enumerate(ids)]
    names = [str(n) for n in names]
    if len(names) != len(specs) or len(set(names)) != len(names):
        raise InvalidParameterError("names: give one distinct name per method.")
    return [(n, *s) for n, s in zip(names, specs)]


def _check_k(k_range, n: int) -> list[int]:
    try:
        ks = sorted({int(k) for k in k_range})
    except (TypeError, ValueError):
        raise InvalidParameterError(f"Invalid k range {k_range!r}: give whole numbers.") from None
    if not ks:
        raise InvalidParameterError("The k range is empty: give at least one k.")
    if ks[0] < 2:
        raise InvalidParameterError(f"k = {ks[0]} is below 2: the measures compare clusters with each other, so "
                                    f"k runs from 2 to n − 1 = {n - 1}.")
    if ks[-1] > n - 1:
        raise DataError(f"k = {ks[-1]} is above n − 1 = {n - 1} (the data have {n} rows): the silhouette needs "
                        f"at most n − 1 clusters; choose k from 2 to {n - 1}.")
    return ks


def _measure(row: ClusteringRow, key: str, fn) -> None:
    try:
        row.measures[key] = float(fn())
    except UndefinedMetricError as exc:
        row.notes[key] = error_message(exc)


def _partition_measures(row, X, labels, sil_idx, progress=None):
    found = int(np.unique(labels).shape[0])
    row.n_clusters_found = found
    parts = inertia_decomposition(X, labels)
    row.measures["within"], row.measures["between"] = parts.within, parts.between
    row.measures["homogeneity"] = homogeneity(X, labels).overall
    _measure(row, "separability", lambda: separability(X, labels))
    _measure(row, "davies_bouldin", lambda: davies_bouldin(X, labels))
    if sil_idx is None:
        _measure(row, "silhouette", lambda: silhouette(X, labels, progress=progress))
    else:
        _measure(row, "silhouette", lambda: silhouette(X[sil_idx], labels[sil_idx], progress=progress))
        if "silhouette" in row.measures:
            row.notes.setdefault("silhouette", f"on {sil_idx.size:,} rows drawn at random (O(n²) work)")


def _validation_ll(row, est, X_train, X_val, reg_covar):
    """Mean log p(x) of the held-out rows: the model's own density, or seed 000's mixture."""
    if hasattr(est, "score_samples"):
        ll = np.asarray(est.score_samples(X_val), dtype=float)
        row.validation_how = "model density"
    else:
        mixture = mixture_from_partition(X_train, np.asarray(est.labels_), "full", reg_covar)
        ll = mixture_log_likelihood(X_val, mixture)
        row.validation_how = "mixture of the partition"
    row.measures["validation_log_likelihood"] = float(np.mean(ll))


def compare_clusterings(methods, X, k_range, *, seed=0, validation: float | None = 0.25,
                        reg_covar: float = 1e-6, silhouette_max_points: int = SILHOUETTE_MAX_POINTS,
                        names=None, progress=None) -> ClusteringComparison:
    """Fit every method for every k and measure the partitions; see the module docstring.

    Parameters
    ----------
    methods : algorithm ids, ``(id, params)`` or ``(class, params)`` of clustering methods with a
        number-of-clusters parameter (k is set by this function).
    X : (n, d) data (the coordinates the measures are computed on).
    k_range : the k to try (e.g. ``range(2, 9)``), each from 2 to n − 1.
    seed : seed of the held-out split, of the silhouette subsample, and the ``random_state`` of
        every method that has one left empty.
    validation : share of the rows held out for the validation log-likelihood, in (0, 1);
        None (or 0) leaves that measure out.
    reg_covar : added to the diagonal of the covariances of seed 000's mixtures.
    names : display names of the methods (default: the ids, numbered when repeated).
    progress : object with ``checkpoint(fraction, message)`` (cancel raises FitCancelled there)
        and optionally ``partial(row)``, called with each finished :class:`ClusteringRow`.
    """
    progress = as_progress(progress)
    publish = getattr(progress, "partial", None)
    X = check_data(X, name="X", min_samples=3)
    n = X.shape[0]
    methods = list(methods) if not isinstance(methods, (str, tuple)) else [methods]
    if not methods:
        raise InvalidParameterError("compare_clusterings needs at least one clustering method.")
    ks = _check_k(k_range, n)
    specs = _method_specs(methods, names, seed)
    rng = check_random_state(seed)
    if validation:
        train_idx, val_idx = validation_split(n, float(validation), rng)
    else:
        train_idx, val_idx = np.arange(n), np.zeros(0, np.intp)
    sil_idx = (np.sort(rng.choice(n, silhouette_max_points, replace=False)) if n > silhouette_max_points else None)
    X_train, X_val = X[train_idx], X[val_idx]
    total = len(specs) * len(ks)
    rows = []
    for i, (name, cls, k_name, params) in enumerate(specs):
        for j, k in enumerate(ks):
            step = i * len(ks) + j
            lo, hi = step / total, (step + 1) / total
            at = lambda f: lo + f * (hi - lo)  # noqa: E731 - a fraction of this (method, k)
            progress.checkpoint(lo, f"{name}, k = {k}: fitting {n:,} rows")
            row = ClusteringRow(name, cls.id, int(k), {**params, k_name: int(k)}, {})
            _one(row, cls, X, X_train, X_val, sil_idx, reg_covar, validation,
                 lambda a, b, msg: SubProgress(progress, at(a), at(b), f"{name}, k = {k}: {msg}"))
            rows.append(row)
            if publish is not None:
                publish(row)
    progress.checkpoint(1.0, "Comparing clusterings: done")
    T = float(inertia_decomposition(X, np.zeros(n, int)).total)
    return ClusteringComparison(ks, [s[0] for s in specs], rows, None if seed is None else int(seed),
                                float(validation) if validation else None, train_idx, val_idx, n, T)


def _one(row, cls, X, X_train, X_val, sil_idx, reg_covar, validation, sub):
    """Fit, measure and score one (method, k) into ``row``; failures become the row's error."""
    where = f"{row.method} at k = {row.k}"
    t0 = time.perf_counter()
    try:
        est = cls(**row.params)
        est.fit(X, progress=_NoPartial(sub(0.0, 0.45, "")))
        labels = np.asarray(est.labels_)
    except FitCancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - this (method, k) only: the others are computed
        row.error = f"{where}: the fit failed: {error_message(exc)}"
        row.notes = {m: "the fit failed" for m in MEASURES}
        return
    row.fit_time = time.perf_counter() - t0
    row.labels = labels
    _partition_measures(row, X, labels, sil_idx, sub(0.45, 0.6, "measures: "))
    if not validation:
        row.notes["validation_log_likelihood"] = "no rows were held out (validation share 0)"
        return
    if row.k > X_train.shape[0]:
        row.notes["validation_log_likelihood"] = (f"k = {row.k} is more than the {X_train.shape[0]} training rows "
                                                  "left after holding out the validation rows")
        return
    try:
        est = cls(**row.params)
        est.fit(X_train, progress=_NoPartial(sub(0.6, 0.95, "training part: ")))
        sub(0.95, 1.0, "").checkpoint(0.0, "validation log-likelihood")
        _validation_ll(row, est, X_train, X_val, reg_covar)
    except FitCancelled:
        raise
    except Exception as exc:  # noqa: BLE001 - this figure only
        row.notes["validation_log_likelihood"] = f"on the training part: {error_message(exc)}"


def compare_on_dataset(methods, dataset, k_range, *, chain=(), progress=None, **kwargs) -> ClusteringComparison:
    """:func:`compare_clusterings` on a data set's features after the preparation ``chain``
    (``[(step id, params)]``, fitted on all rows, as a run with that chain fits it), so that a
    run of a row's method and k gives the row's partition."""
    X = dataset.X
    if chain:
        X = make_pipeline(*[(s, dict(p)) for s, p in chain]).fit_transform(dataset)
    return compare_clusterings(methods, X, k_range, progress=progress, **kwargs)
