"""Statistics of a data set's columns, for the feature views (Qt-free).

- :func:`distribution` — one column per class: a histogram on shared bin edges
  (``numpy.histogram``), a Gaussian kernel density per class (Scott's bandwidth, as
  ``scipy.stats.gaussian_kde``), the box-plot statistics (quartiles as ``numpy.percentile``,
  whiskers at the farthest values within 1.5 IQR of the box, the rest outliers) and a violin
  density per class;
- :func:`correlations` — Pearson or Spearman correlation matrix (equal to
  ``scipy.stats.pearsonr`` / ``spearmanr`` pair by pair) on the rows with no missing value,
  its columns ordered by average-linkage hierarchical clustering of 1 − |r|;
- :func:`pca_loadings` — loadings (``components_ × sqrt(explained_variance_)``, the correlation
  of each feature with each component for standardised data) and biplot coordinates, from the
  ``pca`` plugin;
- :func:`feature_ranking` — ANOVA F (``scipy.stats.f_oneway``), mutual information with the
  label (see :func:`mutual_information`), variance and missing share of each feature, sortable.

NaN is "missing" everywhere: a column's missing values are left out of its own statistics.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio import get_algorithm
from manifold_studio.errors import DataError

PEARSON, SPEARMAN = "pearson", "spearman"
#: equal-frequency bins of a feature for the mutual information
MI_BINS = 10
DENSITY_POINTS = 200
#: a kernel density is exact up to this many values, binned above (see :func:`kde`)
KDE_EXACT = 20_000
KDE_BINS = 2048


# -- groups ---------------------------------------------------------------------------------------
def class_groups(values, labels=None) -> tuple[list[str], list[np.ndarray], list[np.ndarray]]:
    """(class names, values, rows) per class of ``labels`` (sorted classes; one group "all"
    without labels), each keeping only the finite values."""
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    if labels is None:
        rows = np.flatnonzero(ok)
        return ["all"], [values[rows]], [rows]
    classes, codes = label_codes(labels)
    key = np.where(ok, codes, len(classes))  # rows without a value sort last, in no class
    order = np.argsort(key, kind="stable")
    bounds = np.searchsorted(key[order], np.arange(len(classes) + 1))
    row_sets = [np.sort(order[bounds[c]:bounds[c + 1]]) for c in range(len(classes))]
    return [str(c) for c in classes], [values[r] for r in row_sets], row_sets


def label_codes(labels) -> tuple[np.ndarray, np.ndarray]:
    """(sorted classes, class index of each row) of ``labels`` (text labels compared as text)."""
    labels = np.asarray(labels)
    text = labels.astype(str) if labels.dtype.kind in "OUS" else labels
    classes, codes = np.unique(text, return_inverse=True)
    return classes, codes.ravel()


def kde(values: np.ndarray, grid: np.ndarray) -> np.ndarray | None:
    """Gaussian kernel density of ``values`` on ``grid`` with Scott's bandwidth
    (σ · n^(-1/5), σ the sample standard deviation), as ``scipy.stats.gaussian_kde``; None with
    fewer than two distinct values. Exact up to :data:`KDE_EXACT` values; above, the values are
    first linearly binned onto :data:`KDE_BINS` points (the usual binned KDE: its error is far
    below a pixel at that many points) so that a million rows cost milliseconds."""
    values = np.asarray(values, dtype=float)
    if values.size < 2 or np.ptp(values) == 0:
        return None
    n = values.size
    bw = values.std(ddof=1) * n ** (-1.0 / 5.0)
    grid = np.asarray(grid, dtype=float)
    if n > KDE_EXACT:
        lo, hi = float(values.min()), float(values.max())
        centres = np.linspace(lo, hi, KDE_BINS)
        pos = (values - lo) / (hi - lo) * (KDE_BINS - 1)
        left = np.minimum(np.floor(pos).astype(np.intp), KDE_BINS - 2)
        frac = pos - left
        weights = np.bincount(left, 1.0 - frac, KDE_BINS) + np.bincount(left + 1, frac, KDE_BINS)
        values, w = centres, weights
    else:
        w = None
    out = np.zeros(grid.size)
    for start in range(0, grid.size, 64):  # at most 64 × n at a time
        z = (grid[start:start + 64, None] - values[None, :]) / bw
        k = np.exp(-0.5 * z * z)
        out[start:start + 64] = k.sum(axis=1) if w is None else k @ w
    return out / (n * bw * np.sqrt(2.0 * np.pi))


# -- distribution ---------------------------------------------------------------------------------
@dataclass
class BoxStats:
    q1: float
    median: float
    q3: float
    whisker_low: float
    whisker_high: float
    outliers: np.ndarray
    mean: float


def box_stats(values) -> BoxStats | None:
    """Quartiles (``numpy.percentile``, linear), whiskers at the farthest values within 1.5 IQR
    of the box, and the values beyond them; None for no value."""
    v = np.asarray(values, dtype=float)
    v = v[np.isfinite(v)]
    if not v.size:
        return None
    q1, med, q3 = np.percentile(v, [25, 50, 75])
    iqr = q3 - q1
    inside = v[(v >= q1 - 1.5 * iqr) & (v <= q3 + 1.5 * iqr)]
    return BoxStats(float(q1), float(med), float(q3), float(inside.min()), float(inside.max()),
                    np.sort(v[(v < inside.min()) | (v > inside.max())]), float(v.mean()))


@dataclass
class Distribution:
    """One column per class: histogram, density curves, box statistics and violins."""

    column: str
    classes: list[str]
    rows: list[np.ndarray]          # data-set rows of each class's finite values
    edges: np.ndarray               # shared bin edges (numpy.histogram)
    counts: np.ndarray              # (n_classes, n_bins)
    grid: np.ndarray                # where the densities are evaluated
    densities: list                 # per class: density on ``grid`` (or None)
    boxes: list                     # per class: BoxStats (or None)
    violins: list = field(default_factory=list)  # per class: (y grid, density) or None
    n_missing: int = 0

    def curve_counts(self, i: int) -> np.ndarray | None:
        """Class ``i``'s density scaled to its histogram (count per bin width)."""
        d = self.densities[i]
        width = float(np.mean(np.diff(self.edges))) if len(self.edges) > 1 else 1.0
        return None if d is None else d * len(self.rows[i]) * width


def distribution(values, labels=None, *, bins="auto", column: str = "") -> Distribution:
    """:class:`Distribution` of one numeric column split by ``labels`` (None: one group)."""
    values = np.asarray(values, dtype=float)
    if values.ndim != 1:
        raise DataError(f"Column '{column}': expected one column of numbers, got shape {values.shape}.")
    finite = values[np.isfinite(values)]
    if not finite.size:
        raise DataError(f"Column '{column}' has no value to draw: every value is missing.")
    classes, groups, rows = class_groups(values, labels)
    edges = np.histogram_bin_edges(finite, bins=bins)
    counts = np.array([np.histogram(g, bins=edges)[0] for g in groups], dtype=np.int64)
    lo, hi = float(finite.min()), float(finite.max())
    pad = 0.1 * (hi - lo) if hi > lo else 0.5
    grid = np.linspace(lo - pad, hi + pad, DENSITY_POINTS)
    densities = [kde(g, grid) for g in groups]
    violins = []
    for g in groups:
        if g.size < 2 or np.ptp(g) == 0:
            violins.append(None)
        else:
            y = np.linspace(g.min(), g.max(), DENSITY_POINTS // 2)
            violins.append((y, kde(g, y)))
    return Distribution(column, classes, rows, edges, counts, grid, densities,
                        [box_stats(g) for g in groups], violins, int(values.size - finite.size))


# -- correlations ---------------------------------------------------------------------------------
@dataclass
class Correlations:
    method: str
    names: list[str]                # in display (clustered) order
    r: np.ndarray                   # (d, d) in display order
    order: np.ndarray               # display position -> original column
    n_rows: int                     # complete rows used


def correlation_matrix(X, method: str = PEARSON) -> np.ndarray:
    """Pearson or Spearman (Pearson of average ranks) correlations between columns of ``X``
    (no missing values); a constant column gives NaN."""
    X = np.asarray(X, dtype=float)
    if method == SPEARMAN:
        from scipy import stats  # lazy (as below): scipy.stats costs ~0.4 s at start-up

        X = stats.rankdata(X, axis=0)
    elif method != PEARSON:
        raise ValueError(f"method={method!r}: use '{PEARSON}' or '{SPEARMAN}'.")
    Xc = X - X.mean(axis=0)
    norm = np.sqrt((Xc * Xc).sum(axis=0))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (Xc.T @ Xc) / np.outer(norm, norm)
    r = np.clip(r, -1.0, 1.0)
    np.fill_diagonal(r, np.where(norm > 0, 1.0, np.nan))
    return r


def cluster_order(r: np.ndarray) -> np.ndarray:
    """Leaf order of average-linkage clustering on the distance 1 − |r| (NaN counts as r = 0)."""
    d = r.shape[0]
    if d < 3:
        return np.arange(d)
    dist = 1.0 - np.abs(np.nan_to_num(r, nan=0.0))
    dist = (dist + dist.T) / 2.0
    np.fill_diagonal(dist, 0.0)
    from scipy.cluster import hierarchy
    from scipy.spatial.distance import squareform

    Z = hierarchy.linkage(squareform(np.clip(dist, 0.0, None), checks=False), method="average")
    return hierarchy.leaves_list(Z)


def correlations(X, names=None, method: str = PEARSON) -> Correlations:
    """:class:`Correlations` of the columns of ``X`` on its rows without a missing value."""
    X = np.asarray(X, dtype=float)
    names = list(names) if names is not None else [f"x{j + 1}" for j in range(X.shape[1])]
    complete = X[np.isfinite(X).all(axis=1)]
    if complete.shape[0] < 3 or X.shape[1] < 2:
        raise DataError(f"Correlations need at least two columns and three rows without a missing "
                        f"value; this data set has {X.shape[1]} column(s) and {complete.shape[0]} such row(s).")
    r = correlation_matrix(complete, method)
    order = cluster_order(r)
    return Correlations(method, [names[j] for j in order], r[np.ix_(order, order)], order, complete.shape[0])


# -- PCA ------------------------------------------------------------------------------------------
@dataclass
class PcaLoadings:
    names: list[str]
    loadings: np.ndarray            # (d, k): components_.T * sqrt(explained_variance_)
    scores: np.ndarray              # (n_rows, k): the PCA map of ``rows``
    rows: np.ndarray                # the data-set rows (complete cases)
    explained_variance_ratio: np.ndarray
    arrow_scale: float              # biplot: arrows = loadings * arrow_scale

    @property
    def arrows(self) -> np.ndarray:
        return self.loadings * self.arrow_scale


def fit_pca(X, n_components: int = 2):
    """The ``pca`` plugin fitted on ``X`` (found through the plugin host, never imported)."""
    return get_algorithm("pca", n_components=n_components).fit(np.asarray(X, dtype=float))


def pca_map(X, n_components: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """(coordinates, explained variance ratios) of every row of ``X`` on its PCA map: the ``pca``
    plugin fitted on the rows without a missing value (``min(n_components, d)`` axes); rows with a
    missing value get NaN. What a clustering of the raw data is drawn on when it has no map."""
    X = np.asarray(X, dtype=float)
    ok = np.isfinite(X).all(axis=1)
    k = int(min(n_components, X.shape[1], max(int(ok.sum()) - 1, 1)))
    if ok.sum() < 2:
        raise DataError("A PCA map needs at least two rows without a missing value.")
    est = fit_pca(X[ok], k)
    out = np.full((X.shape[0], est.embedding_.shape[1]), np.nan)
    out[ok] = est.embedding_
    return out, np.asarray(est.explained_variance_ratio_)


def pca_loadings(X, names=None, n_components: int = 2) -> PcaLoadings:
    """Loadings and biplot coordinates of a PCA of ``X`` on its rows without a missing value."""
    X = np.asarray(X, dtype=float)
    rows = np.flatnonzero(np.isfinite(X).all(axis=1))
    k = int(min(n_components, X.shape[1], max(len(rows), 1)))
    if len(rows) < 2 or k < 1:
        raise DataError("PCA loadings need at least two rows without a missing value.")
    est = fit_pca(X[rows], k)
    loadings = est.components_.T * np.sqrt(est.explained_variance_)
    scores = np.asarray(est.embedding_, dtype=float)
    top = float(np.abs(loadings).max()) if loadings.size else 0.0
    scale = float(np.abs(scores).max()) / top * 0.8 if top > 0 else 1.0
    names = list(names) if names is not None else [f"x{j + 1}" for j in range(X.shape[1])]
    return PcaLoadings(names, loadings, scores, rows, np.asarray(est.explained_variance_ratio_), scale)


# -- ranking --------------------------------------------------------------------------------------
def mutual_information(values, labels, bins: int = MI_BINS) -> float:
    """Mutual information (nats) between a feature and the label, estimated by discretising the
    feature into at most ``bins`` equal-frequency bins (quantile edges; tied edges merged) and
    taking the plug-in estimate ``Σ p(x, y) log(p(x, y) / (p(x) p(y)))`` of the contingency table
    of bins × classes over the rows where the feature is present. 0 for a constant feature."""
    return _mutual_information(values, label_codes(labels)[1], bins)


def _mutual_information(values, codes: np.ndarray, bins: int) -> float:
    values = np.asarray(values, dtype=float)
    ok = np.isfinite(values)
    v, yc = values[ok], codes[ok]
    if v.size == 0:
        return float("nan")
    edges = np.unique(np.quantile(v, np.linspace(0.0, 1.0, bins + 1)))
    xb = np.searchsorted(edges[1:-1], v, side="right")
    n_y = int(codes.max()) + 1
    table = np.bincount(xb * n_y + yc, minlength=(int(xb.max()) + 1) * n_y).reshape(-1, n_y).astype(float)
    p = table / table.sum()
    px, py = p.sum(axis=1, keepdims=True), p.sum(axis=0, keepdims=True)
    nz = p > 0
    return float(np.sum(p[nz] * np.log(p[nz] / (px @ py)[nz])))


def _split(values: np.ndarray, codes: np.ndarray) -> list[np.ndarray]:
    """``values`` split by class code (one sort)."""
    order = np.argsort(codes, kind="stable")
    cuts = np.searchsorted(codes[order], np.arange(1, int(codes.max(initial=0)) + 1))
    return np.split(values[order], cuts)


RANKING_COLUMNS = ("anova_f", "anova_p", "mutual_info", "variance", "missing_share")


@dataclass
class FeatureRanking:
    names: list[str]
    anova_f: np.ndarray             # NaN without labels or with fewer than two classes
    anova_p: np.ndarray
    mutual_info: np.ndarray
    variance: np.ndarray            # sample variance (ddof=1) of the present values
    missing_share: np.ndarray

    def column(self, key: str) -> np.ndarray:
        if key not in RANKING_COLUMNS:
            raise ValueError(f"Unknown ranking column {key!r}; use one of {', '.join(RANKING_COLUMNS)}.")
        return getattr(self, key)

    def order(self, key: str, descending: bool = True) -> np.ndarray:
        """Feature indices sorted by ``key`` (NaN last, ties by name order)."""
        v = self.column(key).astype(float)
        keyed = np.where(np.isnan(v), np.inf, -v if descending else v)
        return np.argsort(keyed, kind="stable")

    def top(self, key: str, k: int) -> np.ndarray:
        """Indices of the ``k`` best features by ``key`` (largest first; smallest for the
        p-value and the missing share)."""
        if k < 1:
            raise ValueError(f"k={k}: keep at least one column.")
        return self.order(key, descending=key not in ("anova_p", "missing_share"))[:k]


#: a sparse matrix is densified for the ranking up to this many values (rows × columns)
MAX_DENSE_RANKING_CELLS = 20_000_000


def _dense_for_ranking(X) -> np.ndarray:
    if hasattr(X, "toarray") and hasattr(X, "nnz"):  # scipy.sparse
        n, d = X.shape
        if n * d > MAX_DENSE_RANKING_CELLS:
            raise DataError(f"The feature ranking of a sparse {n:,} × {d:,} matrix would need it dense "
                            f"({n * d:,} values, more than {MAX_DENSE_RANKING_CELLS:,}): keep fewer columns first.")
        return np.asarray(X.toarray(), dtype=float)
    return np.asarray(X, dtype=float)


def feature_ranking(X, labels=None, names=None) -> FeatureRanking:
    """:class:`FeatureRanking` of the columns of ``X`` against ``labels`` (may be None). A sparse
    ``X`` is ranked when its dense copy stays under :data:`MAX_DENSE_RANKING_CELLS` values."""
    X = _dense_for_ranking(X)
    d = X.shape[1]
    names = list(names) if names is not None else [f"x{j + 1}" for j in range(d)]
    f, p, mi = np.full(d, np.nan), np.full(d, np.nan), np.full(d, np.nan)
    var = np.full(d, np.nan)
    missing = (~np.isfinite(X)).mean(axis=0) if X.shape[0] else np.zeros(d)
    codes = label_codes(labels)[1] if labels is not None else None
    for j in range(d):
        col = X[:, j]
        ok = np.isfinite(col)
        present = col[ok]
        if present.size > 1:
            var[j] = present.var(ddof=1)
        if codes is None:
            continue
        groups = [g for g in _split(present, codes[ok]) if g.size]
        if len(groups) >= 2 and sum(g.size for g in groups) > len(groups):
            from scipy import stats

            with np.errstate(all="ignore"):
                res = stats.f_oneway(*groups)
            f[j], p[j] = float(res.statistic), float(res.pvalue)
        mi[j] = _mutual_information(col, codes, MI_BINS)
    return FeatureRanking(names, f, p, mi, var, missing)
