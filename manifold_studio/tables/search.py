"""Sorting, searching and formatting the rows of a data table (Qt-free).

The data table (``gui/data_table.py``) shows a data set's columns
(:func:`manifold_studio.tables.dataset_columns.dataset_columns`) through a permutation of its rows. This
module computes that permutation (a stable numpy ``argsort``, missing values last, text sorted as
text), formats one cell, and answers the Projector-style search box:

- ``12`` — row 12 of the data set; ``10-20`` (or ``10..20``) — rows 10 to 20 inclusive;
- ``petal_length > 5`` — a condition on a column: a column name, one of ``< <= > >= == != =``
  and a number (or, for a text column, ``==`` / ``!=`` and a word); parsed, never ``eval``-ed;
- anything else — a case-insensitive substring of the label column or of any text column.

Everything is vectorised over the rows, so a million rows sort and search in well under a
second; a text column is factorised once (unique values + integer codes) and the factorisation
can be cached by the caller (:class:`Factors`).
"""
from __future__ import annotations

import math
import operator
import re
from dataclasses import dataclass

import numpy as np

from manifold_studio.errors import InvalidParameterError
from manifold_studio.tables.dataset_columns import LABEL

ROW_COLUMN = "row"

_OPS = {"<": operator.lt, "<=": operator.le, ">": operator.gt, ">=": operator.ge,
        "==": operator.eq, "=": operator.eq, "!=": operator.ne}
_ROW_RE = re.compile(r"^\s*(\d+)\s*$")
_RANGE_RE = re.compile(r"^\s*(\d+)\s*(?:-|\.\.|:|to)\s*(\d+)\s*$", re.IGNORECASE)
_COND_RE = re.compile(r"^\s*(?P<col>\S.*?)\s*(?P<op><=|>=|==|!=|<|>|=)\s*(?P<val>\S.*?)\s*$")
_NUMBER_RE = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$|^[-+]?(inf|nan)$", re.IGNORECASE)


class SearchError(InvalidParameterError):
    """The search text cannot be used (the message says why and what is possible)."""


# -- formatting ------------------------------------------------------------------------------------
def format_value(value) -> str:
    """One cell as text: ~6 significant digits, integral floats as integers, NaN / None as ""."""
    if value is None:
        return ""
    if isinstance(value, (float, np.floating)):
        v = float(value)
        if math.isnan(v):
            return ""
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        return f"{v:.6g}"
    if isinstance(value, (bool, np.bool_)):
        return "true" if value else "false"
    return str(value)


def is_numeric(values: np.ndarray) -> bool:
    return np.asarray(values).dtype.kind in "fiub"


# -- factorisation (text columns) ----------------------------------------------------------------
@dataclass
class Factors:
    """A column as codes into its distinct values: ``texts[codes[i]]`` is row i's text;
    ``codes`` are ranks of the texts in text order, -1 for a missing value ("", None, NaN)."""

    texts: list[str]
    codes: np.ndarray


def factorize(values: np.ndarray) -> Factors:
    """The distinct values of a column (as text, sorted as text) and each row's code."""
    values = np.asarray(values)
    if is_numeric(values):
        uniq, inverse = np.unique(values, return_inverse=True)
        texts = [format_value(u) for u in uniq.tolist()]
    else:
        seen: dict = {}
        inverse = np.fromiter((seen.setdefault(v, len(seen)) for v in values.tolist()),
                              dtype=np.intp, count=values.shape[0])
        texts = [format_value(u) for u in seen]
    inverse = np.asarray(inverse, dtype=np.intp).ravel()
    # rank the distinct texts (several values may print alike: they share a rank)
    ordered = sorted(set(texts) - {""}, key=lambda t: (t.casefold(), t))
    rank = {t: i for i, t in enumerate(ordered)}
    remap = np.array([rank.get(t, -1) for t in texts], dtype=np.intp)
    codes = remap[inverse] if inverse.size else np.zeros(0, dtype=np.intp)
    return Factors(ordered, codes)


# -- sorting ---------------------------------------------------------------------------------------
def _stable_argsort(key: np.ndarray) -> np.ndarray:
    """``np.argsort(key, kind="stable")`` (NaN last, ties in row order), faster on continuous
    values: an introsort, then the NaN rows (and ties, if any) put back in row order. A column
    with many ties (clusters, counts: seen on a sample) goes to numpy's stable sort directly,
    which is fast on them."""
    n = key.size
    sample = key[::max(1, n // 2000)]
    if np.unique(sample).size < 0.9 * sample.size:
        return np.argsort(key, kind="stable")
    perm = np.argsort(key)
    sk = key[perm]
    valid = n - int(np.count_nonzero(np.isnan(sk))) if key.dtype.kind == "f" else n
    perm[valid:].sort()  # the NaN rows, last, in row order
    if valid < 2:
        return perm
    head = sk[:valid]
    new = np.empty(valid, dtype=bool)
    new[0] = True
    np.not_equal(head[1:], head[:-1], out=new[1:])
    n_distinct = int(np.count_nonzero(new))
    if n_distinct == valid:  # no ties: the introsort is already stable
        return perm
    if n_distinct < 65535:
        ranks = np.empty(n, dtype=np.uint16)
        ranks[perm[:valid]] = np.cumsum(new, dtype=np.uint16) - 1
        ranks[perm[valid:]] = n_distinct  # NaN last
        return np.argsort(ranks, kind="stable")  # radix sort
    return np.argsort(key, kind="stable")


def sort_permutation(values: np.ndarray, descending: bool = False, factors: Factors | None = None) -> np.ndarray:
    """Row order that sorts ``values`` (stable: ties keep their row order; missing values last,
    in either direction; text sorted as text, case-insensitively)."""
    values = np.asarray(values)
    if values.dtype.kind in "iub":
        key = values.astype(np.int64, copy=False)
        return _stable_argsort(-key if descending else key)
    if values.dtype.kind == "f":
        return _stable_argsort(-values if descending else values)
    codes = (factors or factorize(values)).codes
    top = int(codes.max()) + 1 if codes.size else 0
    key = np.where(codes < 0, top, top - 1 - codes if descending else codes)  # missing last
    return np.argsort(key.astype(np.uint16) if top < 65535 else key, kind="stable")


# -- search ----------------------------------------------------------------------------------------
@dataclass
class SearchResult:
    mask: np.ndarray   # (n_rows,) bool: the matching data-set rows
    description: str   # what was matched, e.g. "label 'species' contains 'set'"

    @property
    def count(self) -> int:
        return int(self.mask.sum())


def _parse_number(text: str) -> float | None:
    return float(text) if _NUMBER_RE.match(text.strip()) else None


def _find_column(columns, name: str):
    for col in columns:
        if col.name == name:
            return col
    folded = name.casefold()
    for col in columns:
        if col.name.casefold() == folded:
            return col
    return None


def _column_list(columns) -> str:
    return ", ".join([ROW_COLUMN] + [c.name for c in columns])


def _condition(columns, n: int, col_name: str, op: str, value_text: str) -> SearchResult:
    if col_name.casefold() == ROW_COLUMN:
        values, numeric, shown = np.arange(n), True, ROW_COLUMN
    else:
        col = _find_column(columns, col_name)
        if col is None:
            raise SearchError(f"Unknown column '{col_name}'. Columns: {_column_list(columns)}.")
        values, numeric, shown = col.values, is_numeric(col.values), col.name
    number = _parse_number(value_text)
    if numeric:
        if number is None:
            raise SearchError(f"Column '{shown}' is numeric: compare it with a number "
                              f"(e.g. {shown} {op} 5), not '{value_text}'.")
        with np.errstate(invalid="ignore"):
            mask = _OPS[op](values.astype(np.float64, copy=False), number)
        if op == "!=":
            mask &= ~np.isnan(values.astype(np.float64, copy=False))  # a missing value is not "!= 5"
        return SearchResult(np.asarray(mask, dtype=bool), f"{shown} {op} {format_value(number)}")
    if op not in ("==", "=", "!="):
        raise SearchError(f"Column '{shown}' holds text: only == and != apply to it "
                          f"(e.g. {shown} == {value_text}).")
    word = value_text.strip().strip("'\"").casefold()
    factors = factorize(values)
    hit = np.array([t.casefold() == word for t in factors.texts] + [False], dtype=bool)
    mask = hit[factors.codes]  # code -1 (missing) reads the trailing False
    if op == "!=":
        mask = ~mask & (factors.codes >= 0)
    return SearchResult(mask, f"{shown} {op} '{value_text.strip()}'")


def _text_search(columns, n: int, text: str, factors_of) -> SearchResult:
    searched = [c for c in columns if c.kind == LABEL or not is_numeric(c.values)]
    if not searched:
        raise SearchError(f"'{text}' is not a row, a range or a condition, and this data set has no label or "
                          f"text column to search. Type a row (12), a range (10-20) or a condition such as "
                          f"'{columns[0].name if columns else 'x1'} > 0'.")
    needle = text.strip().casefold()
    mask = np.zeros(n, dtype=bool)
    for col in searched:
        factors = factors_of(col)
        hit = np.array([needle in t.casefold() for t in factors.texts] + [False], dtype=bool)
        if hit.any():
            mask |= hit[factors.codes]
    where = ", ".join(f"'{c.name}'" for c in searched)
    return SearchResult(mask, f"{where} contains '{text.strip()}'")


_OR_RE = re.compile(r"\s+(?:or|\|\|?)\s+", re.IGNORECASE)
_AND_RE = re.compile(r"\s+(?:and|&&?)\s+", re.IGNORECASE)


def _is_structured(text: str, columns) -> bool:
    """A row, a range, or a condition on a known column (not free text)."""
    if _ROW_RE.match(text) or _RANGE_RE.match(text):
        return True
    m = _COND_RE.match(text)
    return bool(m) and (m.group("col").casefold() == ROW_COLUMN or _find_column(columns, m.group("col")) is not None)


def _combined(text: str, columns, n: int, factors_of) -> SearchResult | None:
    """``a > 1 and b < 2 or c == x``: conditions (rows, ranges) joined by and / or (``&``, ``|``),
    'and' binding tighter; None when the text is not such a combination (a label may contain
    the word 'and')."""
    groups = [_AND_RE.split(part) for part in _OR_RE.split(text)]
    atoms = [a.strip() for g in groups for a in g]
    if len(atoms) < 2 or not all(_is_structured(a, columns) for a in atoms):
        return None
    mask, shown = np.zeros(n, dtype=bool), []
    for group in groups:
        results = [search_rows(a.strip(), columns, n, factors_of) for a in group]
        g_mask = np.logical_and.reduce([r.mask for r in results])
        mask |= g_mask
        shown.append(" and ".join(r.description for r in results))
    return SearchResult(mask, " or ".join(f"({d})" if " and " in d and len(shown) > 1 else d for d in shown))


def search_rows(query: str, columns, n: int, factors_of=None) -> SearchResult:
    """The rows of an ``n``-row data set matched by ``query`` (see the module docstring).

    ``columns``: :class:`~manifold_studio.tables.dataset_columns.Column` objects; ``factors_of(col)``
    may return a cached :func:`factorize` of a column. Raises :class:`SearchError` with a
    message for the user when the query cannot be used (empty, a row out of range, an unknown
    column — the message lists the columns —, a condition that does not fit the column)."""
    factors_of = factors_of or (lambda col: factorize(col.values))
    text = (query or "").strip()
    if not text:
        raise SearchError("Type a label text, a row (12), a range of rows (10-20) or a condition "
                          "(petal_length > 5), then press Enter.")
    if n == 0:
        raise SearchError("The data set has no rows to search.")
    combined = _combined(text, columns, n, factors_of)
    if combined is not None:
        return combined
    m = _ROW_RE.match(text)
    if m:
        row = int(m.group(1))
        if row >= n:
            raise SearchError(f"Row {row} does not exist: the rows are 0 to {n - 1}.")
        mask = np.zeros(n, dtype=bool)
        mask[row] = True
        return SearchResult(mask, f"row {row}")
    m = _RANGE_RE.match(text)
    if m:
        a, b = sorted((int(m.group(1)), int(m.group(2))))
        if a >= n:
            raise SearchError(f"Rows {a}-{b} do not exist: the rows are 0 to {n - 1}.")
        mask = np.zeros(n, dtype=bool)
        mask[a:min(b, n - 1) + 1] = True
        return SearchResult(mask, f"rows {a}-{min(b, n - 1)}")
    m = _COND_RE.match(text)
    if m:
        col_name = m.group("col")
        known = col_name.casefold() == ROW_COLUMN or _find_column(columns, col_name) is not None
        if known:
            return _condition(columns, n, col_name, m.group("op"), m.group("val"))
        # maybe a label that contains an operator character; otherwise name the columns
        try:
            result = _text_search(columns, n, text, factors_of)
        except SearchError:
            result = None
        if result is not None and result.count:
            return result
        raise SearchError(f"Unknown column '{col_name}'. Columns: {_column_list(columns)}.")
    return _text_search(columns, n, text, factors_of)
