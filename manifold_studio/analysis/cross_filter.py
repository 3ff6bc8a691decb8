"""Cross-filters for the map (Qt-free): linked histograms (numeric columns) and bar charts
(categorical columns) whose brushes filter the rows together.

:class:`CrossFilter` holds the charted columns of one data set, each binned once
(:class:`Chart`: a numeric column's bin of every row on :data:`BINS` equal bins, a categorical
column's category code). A filter is a closed value range on a numeric chart or a set of
categories on a categorical one; filters combine with *and*. As in every cross-filter, each chart
shows the counts of the rows that pass the *other* charts' filters (so its own brush does not
empty it), and :meth:`CrossFilter.passing` is the rows that pass all of them. One update costs a
few passes over the rows (a million rows: tens of milliseconds).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.tables.search import factorize, is_numeric

BINS = 40
#: a categorical chart shows at most this many categories (the most frequent; the rest as "other")
MAX_BARS = 30


@dataclass
class Chart:
    name: str
    kind: str                   # "numeric" or "categorical"
    codes: np.ndarray           # (n,) bin / category of each row, -1 = missing
    labels: list                # bin edges (numeric: BINS + 1 floats) or category texts
    values: np.ndarray | None = None   # numeric: the values (for exact range filters)
    filter: object = None       # (lo, hi) or frozenset of category indices; None = no filter

    @property
    def n_bars(self) -> int:
        return len(self.labels) - 1 if self.kind == "numeric" else len(self.labels)

    def mask(self) -> np.ndarray | None:
        """The rows this chart's filter lets through (None: all)."""
        if self.filter is None:
            return None
        if self.kind == "numeric":
            lo, hi = self.filter
            with np.errstate(invalid="ignore"):
                return (self.values >= lo) & (self.values <= hi)
        allowed = np.zeros(self.n_bars + 1, dtype=bool)   # the last entry: missing (-1)
        allowed[list(self.filter)] = True
        return allowed[self.codes]


def make_chart(name: str, values, bins: int = BINS, categorical: bool | None = None) -> Chart:
    """A chart of one column: numeric (bins of equal width over its finite range) unless the
    column holds text or ``categorical`` says so (a label column of numbers)."""
    values = np.asarray(values)
    if values.ndim != 1:
        raise DataError(f"Cross-filter: column '{name}' must be one value per row.")
    if categorical is None:
        categorical = not is_numeric(values) or values.dtype.kind == "b"
    if not categorical:
        v = values.astype(float, copy=False)
        finite = np.isfinite(v)
        if not finite.any():
            raise DataError(f"Cross-filter: column '{name}' has no value to chart (all missing).")
        lo, hi = float(v[finite].min()), float(v[finite].max())
        if hi == lo:
            hi = lo + 1.0
        edges = np.linspace(lo, hi, bins + 1)
        codes = np.full(v.size, -1, dtype=np.intp)
        # bin i holds edges[i] <= v < edges[i + 1], the last bin also its upper edge (numpy.histogram)
        codes[finite] = np.minimum(np.searchsorted(edges, v[finite], side="right") - 1, bins - 1)
        return Chart(name, "numeric", codes, edges.tolist(), v)
    f = factorize(values)
    counts = np.bincount(f.codes[f.codes >= 0], minlength=len(f.texts))
    if len(f.texts) > MAX_BARS:   # the most frequent categories, the rest in "other"
        keep = np.sort(np.argsort(-counts, kind="stable")[:MAX_BARS - 1])
        remap = np.full(len(f.texts) + 1, MAX_BARS - 1, dtype=np.intp)
        remap[keep] = np.arange(keep.size)
        remap[-1] = -1
        codes = remap[f.codes]
        labels = [f.texts[k] for k in keep] + ["other"]
    else:
        codes, labels = f.codes, list(f.texts)
    return Chart(name, "categorical", np.asarray(codes, dtype=np.intp), labels)


@dataclass
class CrossFilter:
    n: int
    charts: list = field(default_factory=list)

    def add(self, name: str, values, categorical: bool | None = None) -> Chart:
        if any(c.name == name for c in self.charts):
            raise InvalidParameterError(f"Cross-filter: column '{name}' is charted already.")
        chart = make_chart(name, values, categorical=categorical)
        if chart.codes.size != self.n:
            raise DataError(f"Cross-filter: column '{name}' has {chart.codes.size} values for {self.n} rows.")
        self.charts.append(chart)
        return chart

    def snapshot(self) -> "CrossFilter":
        """A copy whose filters change independently of this one's (the binned rows are shared):
        what a worker thread counts while the user keeps brushing."""
        return CrossFilter(self.n, [replace(c) for c in self.charts])

    def remove(self, name: str) -> None:
        self.charts = [c for c in self.charts if c.name != name]

    def chart(self, name: str) -> Chart:
        for c in self.charts:
            if c.name == name:
                return c
        raise InvalidParameterError(f"Cross-filter: no chart of column '{name}'; charted: "
                                    f"{', '.join(c.name for c in self.charts) or 'none'}.")

    def set_range(self, name: str, lo: float, hi: float) -> None:
        chart = self.chart(name)
        if chart.kind != "numeric":
            raise InvalidParameterError(f"Cross-filter: '{name}' is categorical: filter it by categories.")
        lo, hi = float(lo), float(hi)
        chart.filter = (min(lo, hi), max(lo, hi))

    def set_categories(self, name: str, categories) -> None:
        chart = self.chart(name)
        if chart.kind != "categorical":
            raise InvalidParameterError(f"Cross-filter: '{name}' is numeric: filter it by a range.")
        cats = frozenset(int(c) for c in categories)
        bad = [c for c in cats if not 0 <= c < chart.n_bars]
        if bad:
            raise InvalidParameterError(f"Cross-filter: '{name}' has categories 0 to {chart.n_bars - 1}, not {bad}.")
        chart.filter = cats or None

    def toggle_category(self, name: str, index: int) -> None:
        chart = self.chart(name)
        current = set(chart.filter or ())
        current ^= {int(index)}
        self.set_categories(name, current)

    def clear(self, name: str | None = None) -> None:
        for c in self.charts:
            if name is None or c.name == name:
                c.filter = None

    @property
    def active(self) -> bool:
        return any(c.filter is not None for c in self.charts)

    def passing(self) -> np.ndarray:
        """The rows that pass every filter."""
        out = np.ones(self.n, dtype=bool)
        for c in self.charts:
            m = c.mask()
            if m is not None:
                out &= m
        return out

    def counts(self) -> tuple[list[np.ndarray], list[np.ndarray], np.ndarray]:
        """(all counts per chart, counts of the rows passing the *other* charts' filters per chart,
        the rows passing every filter)."""
        masks = [c.mask() for c in self.charts]
        k = len(self.charts)
        # prefix / suffix ands: "all but chart j" in O(k) passes
        prefix = [None] * (k + 1)
        suffix = [None] * (k + 1)
        for j in range(k):
            prefix[j + 1] = _and(prefix[j], masks[j])
        for j in range(k - 1, -1, -1):
            suffix[j] = _and(suffix[j + 1], masks[j])
        totals, filtered = [], []
        for j, c in enumerate(self.charts):
            valid = c.codes >= 0
            totals.append(np.bincount(c.codes[valid], minlength=c.n_bars))
            others = _and(prefix[j], suffix[j + 1])
            sel = valid if others is None else valid & others
            filtered.append(np.bincount(c.codes[sel], minlength=c.n_bars))
        every = prefix[k]
        return totals, filtered, (np.ones(self.n, dtype=bool) if every is None else every)


def _and(a, b):
    if a is None:
        return b
    if b is None:
        return a
    return a & b
