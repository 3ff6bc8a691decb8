"""Explain a selection of the map (Qt-free): which features tell the selected rows from the rest
(or from a second selection), ranked.

- Numeric column: the standardized mean difference (Cohen's d: difference of the means over the
  pooled standard deviation, ``ddof=1``) and the two-sided Mann–Whitney U p-value
  (``scipy.stats.mannwhitneyu``, asymptotic with tie and continuity correction) or, with
  ``test='ks'``, the two-sample Kolmogorov–Smirnov p-value (``scipy.stats.ks_2samp``).
- Categorical column (text, booleans, the label column, a run's clusters or predicted classes): one row per category — its share in each group, the odds
  ratio of being in the category for the selection against the other group (0.5 added to every
  cell when one is empty, Haldane–Anscombe), and Fisher's exact p-value when a cell of the 2 × 2
  table expects fewer than 5 rows, the chi-square test (Yates-corrected) otherwise.
- All p-values are corrected together by Benjamini–Hochberg (``q``).

Rows are ranked by the absolute effect: d for numbers, and for categories the log odds ratio
converted to the same scale (``log OR · √3 / π``, Chinn 2000), so both kinds compare.

The means and shares use every row. The tests use at most :data:`TEST_ROWS` rows per group (a
seeded random sample beyond that): with 20,000 rows each they detect a standardized difference of
0.03 (far below any practical size), and 100,000 selected rows × 50 columns stay under a second.
Against the rest, the other group's mean and variance come from the column's totals minus the
selection's (one pass over the column, no copy of the other rows).

The per-column work (gathering the rows, the moments, the Mann–Whitney ranking) runs in compiled
loops that release the interpreter lock (:mod:`.explain_kernels`), so the window's event loop
keeps turning while a worker thread explains (the KS test and the categories stay scipy's).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.analysis.explain_kernels import (
    dev_sums, finite_values, mean_of, rank_sum_and_ties,
)
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.tables.dataset_columns import LABEL, RESULT
from manifold_studio.tables.search import factorize, is_numeric

#: rows per group used by the tests (a seeded random sample beyond)
TEST_ROWS = 20_000
#: categories of a column listed at most
MAX_CATEGORIES = 30
MANN_WHITNEY, KS = "mann-whitney", "ks"
#: result columns holding a run's labels (``#3 kmeans cluster``, ``#4 svm predicted``)
RESULT_LABEL_SUFFIXES = (" cluster", " predicted")
FISHER, CHI2 = "fisher", "chi-square"
_LOG_OR_TO_D = np.sqrt(3.0) / np.pi


@dataclass
class ExplainRow:
    feature: str
    kind: str            # "numeric" or "categorical"
    effect: float        # d, or the converted log odds ratio (ranking key: |effect|)
    p: float
    q: float = np.nan
    test: str = ""
    category: str = ""   # categorical rows: the category
    mean_a: float = np.nan   # numeric: means; categorical: shares of the category
    mean_b: float = np.nan
    odds_ratio: float = np.nan

    def describe(self) -> str:
        """'high proline' / 'low hue' / "class 'a' enriched"."""
        if self.kind == "numeric":
            return f"{'high' if self.effect > 0 else 'low'} {self.feature}"
        return f"{self.feature} {self.category!r} {'enriched' if self.effect > 0 else 'depleted'}"


@dataclass
class Explanation:
    rows: list[ExplainRow]
    n_a: int
    n_b: int
    against: str                      # "the rest" or "selection B"
    notes: list[str] = field(default_factory=list)

    def table(self) -> list[dict]:
        """The rows as plain dicts (export, report)."""
        return [{"feature": r.feature, "category": r.category, "kind": r.kind, "effect": r.effect,
                 "mean_selected": r.mean_a, "mean_other": r.mean_b, "odds_ratio": r.odds_ratio,
                 "test": r.test, "p": r.p, "q": r.q} for r in self.rows]


def benjamini_hochberg(p) -> np.ndarray:
    """Benjamini–Hochberg adjusted p-values (as ``scipy.stats.false_discovery_control``); NaN
    stays NaN and is not counted."""
    p = np.asarray(p, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.isfinite(p)
    m = int(ok.sum())
    if not m:
        return out
    pv = p[ok]
    order = np.argsort(pv)
    ranked = pv[order] * m / np.arange(1, m + 1)
    adj = np.minimum.accumulate(ranked[::-1])[::-1]
    res = np.empty(m)
    res[order] = np.minimum(adj, 1.0)
    out[ok] = res
    return out


def smd(a: np.ndarray, b: np.ndarray) -> float:
    """Cohen's d of ``a`` against ``b`` (finite values; pooled standard deviation, ddof=1); 0
    when both are constant and equal, ±inf when constant and different."""
    a, b = np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(b, dtype=float)
    if a.size < 1 or b.size < 1:
        return np.nan
    (mean_a, var_a), (mean_b, var_b) = _moments(a), _moments(b)
    return _smd_from(mean_a, var_a, a.size, mean_b, var_b, b.size)


def _moments(x: np.ndarray) -> tuple[float, float]:
    """(mean, variance with ddof=1, 0 for one value) of a non-empty array of finite values."""
    mean = mean_of(x)
    return mean, dev_sums(x, mean)[1] / (x.size - 1) if x.size > 1 else 0.0


def _numeric_effect(v: np.ndarray, rows_a, rows_b, rest: bool) -> tuple[float, float, float]:
    """(d, mean of a, mean of b) over the finite values; with ``rest`` (b = every row not in a)
    b's moments are the column's minus a's. Compiled loops (:mod:`.explain_kernels`): the
    worker thread holds the interpreter lock only between them."""
    a = finite_values(v, rows_a)
    if not rest:
        b = finite_values(v, rows_b)
        return smd(a, b), _mean(a), _mean(b)
    every = finite_values(v, None)
    n_b = every.size - a.size
    if a.size == 0 or n_b <= 0:
        return np.nan, _mean(a), np.nan
    centre = mean_of(every)
    dev_sum, dev_ss = dev_sums(every, centre)
    da_sum, da_ss = dev_sums(a, centre)
    sum_b = dev_sum - da_sum
    ss_b = dev_ss - da_ss
    mean_b = centre + sum_b / n_b
    var_b = max(ss_b - sum_b * sum_b / n_b, 0.0) / (n_b - 1) if n_b > 1 else 0.0
    mean_a, var_a = _moments(a)
    return _smd_from(mean_a, var_a, a.size, mean_b, var_b, n_b), mean_a, mean_b


def _mean(x: np.ndarray) -> float:
    return _moments(x)[0] if x.size else np.nan


def _smd_from(mean_a, var_a, na, mean_b, var_b, nb) -> float:
    diff = mean_a - mean_b
    dof = na + nb - 2
    pooled = np.sqrt(((na - 1) * var_a + (nb - 1) * var_b) / dof) if dof > 0 else 0.0
    if pooled == 0:
        return 0.0 if diff == 0 else float(np.sign(diff) * np.inf)
    return float(diff / pooled)


def _sample(rows: np.ndarray, rng) -> np.ndarray:
    return rows if rows.size <= TEST_ROWS else np.sort(rng.choice(rows, TEST_ROWS, replace=False))


def mann_whitney_p(a: np.ndarray, b: np.ndarray) -> float:
    """Two-sided Mann–Whitney U p-value, asymptotic with tie and continuity correction: scipy's
    ``mannwhitneyu(a, b, method="asymptotic")`` to the last bit (the same formula on the same
    exact rank sum and tie term), its ranking in one compiled loop without the interpreter lock."""
    r1, ties = rank_sum_and_ties(np.ascontiguousarray(a, dtype=float), np.ascontiguousarray(b, dtype=float))
    return mann_whitney_p_from(r1, ties, a.size, b.size)


def mann_whitney_p_from(r1: float, ties: float, n1: int, n2: int) -> float:
    """scipy's asymptotic two-sided Mann–Whitney p-value from the rank sum of the first group
    (``n1`` values) and the tie term Σ(t³ − t)."""
    from scipy import special  # lazy: kept off the start-up

    u1 = r1 - n1 * (n1 + 1) / 2
    u = max(u1, n1 * n2 - u1)
    n = n1 + n2
    s = np.sqrt(n1 * n2 / 12 * ((n + 1) - ties / (n * (n - 1))))
    with np.errstate(divide="ignore", invalid="ignore"):
        z = (u - n1 * n2 / 2 - 0.5) / s
    return float(np.clip(special.ndtr(-z) * 2, 0.0, 1.0))


def _numeric_p(a: np.ndarray, b: np.ndarray, test: str) -> float:
    if a.size < 1 or b.size < 1:
        return np.nan
    if test == KS:
        from scipy import stats  # lazy: kept off the start-up

        return float(stats.ks_2samp(a, b).pvalue)
    if min(a.min(), b.min()) == max(a.max(), b.max()):
        return 1.0
    return mann_whitney_p(a, b)


def is_categorical(col, values: np.ndarray) -> bool:
    """Text, booleans, label columns and a run's cluster / predicted class are categories."""
    if not is_numeric(values) or values.dtype.kind == "b":
        return True
    kind = getattr(col, "kind", "")
    return kind == LABEL or (kind == RESULT and str(col.name).endswith(RESULT_LABEL_SUFFIXES))


def _category_rows(name, values, rows_a, rows_b, factors) -> list[ExplainRow]:
    codes = factors.codes
    ca, cb = codes[rows_a], codes[rows_b]
    ca, cb = ca[ca >= 0], cb[cb >= 0]
    k = len(factors.texts)
    count_a = np.bincount(ca, minlength=k)
    count_b = np.bincount(cb, minlength=k)
    na, nb = ca.size, cb.size
    out = []
    if na == 0 or nb == 0:
        return out
    for c in np.argsort(-(count_a / na - count_b / nb) ** 2)[:MAX_CATEGORIES]:
        a1, b1 = int(count_a[c]), int(count_b[c])
        a0, b0 = na - a1, nb - b1
        table = np.array([[a1, a0], [b1, b0]])
        cells = table.astype(float) + (0.5 if (table == 0).any() else 0.0)
        odds = cells[0, 0] * cells[1, 1] / (cells[0, 1] * cells[1, 0])
        expected = np.outer(table.sum(axis=1), table.sum(axis=0)) / table.sum()
        from scipy import stats

        if (expected < 5).any():
            p, test = float(stats.fisher_exact(table).pvalue), FISHER
        else:
            p, test = float(stats.chi2_contingency(table, correction=True).pvalue), CHI2
        out.append(ExplainRow(name, "categorical", float(np.log(odds) * _LOG_OR_TO_D), p, test=test,
                              category=factors.texts[c], mean_a=a1 / na, mean_b=b1 / nb,
                              odds_ratio=float(odds)))
    return out


def _rows(chosen, n: int, what: str) -> np.ndarray:
    """Sorted distinct row indices of a boolean mask or of row indices (a mask over the n rows,
    not ``np.unique``: its sort holds the GIL for 60-120 ms at a million rows, stalling the window
    while explain runs on a worker thread)."""
    chosen = np.asarray(chosen)
    if chosen.dtype == bool:
        return np.flatnonzero(chosen)
    chosen = chosen.astype(np.intp, copy=False).ravel()
    if chosen.size and (chosen.min() < 0 or chosen.max() >= n):
        raise DataError(f"Explain: {what} has a row outside the {n} rows of the data set.")
    mask = np.zeros(n, dtype=bool)
    mask[chosen] = True
    return np.flatnonzero(mask)


def selection_groups(selected, other, n: int) -> tuple[np.ndarray, np.ndarray, str]:
    """(rows of the selection, rows of the other group, "the rest" or "selection B"), each sorted
    and distinct; refuses an empty selection, a selection of every row and two equal ones."""
    a = _rows(selected, n, "the selection")
    if a.size == 0:
        raise DataError("Explain needs a selection: no row is selected.")
    if other is None:
        mask = np.ones(n, dtype=bool)
        mask[a] = False
        b = np.flatnonzero(mask)
        if b.size == 0:
            raise DataError(f"Explain compares the selection with the rest, but all {n} rows are selected: "
                            "select fewer rows, or compare with a second selection.")
        return a, b, "the rest"
    b = _rows(other, n, "the second selection")
    if b.size == 0:
        raise DataError("Explain against a second selection: the second selection is empty.")
    if np.array_equal(a, b):
        raise DataError("Explain: the two selections are the same rows; there is nothing to compare.")
    return a, b, "selection B"


def explain(columns, selected, other=None, *, test: str = MANN_WHITNEY, random_state: int = 0,
            factors_of=None, progress=None, features=None) -> Explanation:
    """Rank the ``columns`` (objects with ``name`` and ``values`` over n rows, such as
    :class:`~manifold_studio.tables.dataset_columns.Column`) by how the ``selected`` rows
    (a boolean mask or row indices) differ from ``other`` (default: every other row).
    ``features``: a block of numeric columns ranked with them, such as a sparse matrix's
    (:class:`~manifold_studio.analysis.explain_sparse.SparseFeatures`: ``names``, ``n_rows`` and
    ``rows(rows_a, rows_b, sample_a, sample_b, test, checkpoint)`` giving ExplainRows).
    Refuses an empty selection and a selection of every row, with the reason."""
    if test not in (MANN_WHITNEY, KS):
        raise InvalidParameterError(f"test={test!r}: use '{MANN_WHITNEY}' or '{KS}'.")
    columns = list(columns)
    if not columns and features is None:
        raise DataError("Explain needs at least one column.")
    n = len(columns[0].values) if columns else features.n_rows
    rows_a, rows_b, against = selection_groups(selected, other, n)
    if rows_a.max() >= n or (rows_b.size and rows_b.max() >= n):
        raise DataError(f"Explain: a selected row is beyond the {n} rows of the data set.")
    rng = np.random.default_rng(random_state)
    sa, sb = _sample(rows_a, rng), _sample(rows_b, rng)
    factors_of = factors_of or (lambda col: factorize(col.values))
    progress = as_progress(progress)
    out: list[ExplainRow] = []
    total = len(columns) + (len(features.names) if features is not None else 0)
    if features is not None:
        out.extend(features.rows(rows_a, rows_b, sa, sb, test,
                                 lambda j, name: progress.checkpoint(j / total, f"Explain: {name}")))
    for j, col in enumerate(columns, start=total - len(columns)):
        progress.checkpoint(j / total, f"Explain: {col.name}")
        values = np.asarray(col.values)
        if not is_categorical(col, values):
            v = values.astype(float, copy=False)
            p = _numeric_p(finite_values(v, sa), finite_values(v, sb), test)
            d, mean_a, mean_b = _numeric_effect(v, rows_a, rows_b, against == "the rest")
            out.append(ExplainRow(col.name, "numeric", d, p, test=test, mean_a=mean_a, mean_b=mean_b))
        else:
            out.extend(_category_rows(col.name, values, rows_a, rows_b, factors_of(col)))
    q = benjamini_hochberg([r.p for r in out])
    for r, qi in zip(out, q):
        r.q = float(qi)
    out.sort(key=lambda r: (np.inf if np.isnan(r.effect) else -abs(r.effect), r.feature))
    notes = []
    if rows_a.size > TEST_ROWS or rows_b.size > TEST_ROWS:
        notes.append(f"p-values from a random sample of at most {TEST_ROWS:,} rows per group "
                     "(means and shares from every row).")
    return Explanation(out, int(rows_a.size), int(rows_b.size), against, notes)


def distinguishing_features(explanation: Explanation, count: int = 3, q_max: float = 0.05) -> list[str]:
    """The phrases of the ``count`` strongest significant rows ('high proline', 'low hue')."""
    good = [r for r in explanation.rows if np.isfinite(r.q) and r.q <= q_max and r.effect != 0]
    return [r.describe() for r in good[:count]]
