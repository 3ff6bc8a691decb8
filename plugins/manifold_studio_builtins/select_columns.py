"""Preparation step ``select_columns``: keep columns by name, by pattern or by variance, or the k
numeric columns of highest variance or dispersion (highly variable genes)."""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.params import Choice, Float, Int, Text, TextList
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.errors import InvalidParameterError
from manifold_studio.hookspecs import hookimpl

try:  # Python 3.11+
    from re import _constants as _sre, _parser as _sre_parse
except ImportError:  # pragma: no cover - Python 3.10
    import sre_constants as _sre
    import sre_parse as _sre_parse

#: longest pattern, and longest column name a pattern is matched against
MAX_PATTERN, MAX_NAME = 500, 1000
#: at most this many unbounded repeats (``*``, ``+``, ``{n,}``) once bounded repeats are unrolled
MAX_REPEATS = 3
#: the bound on a search's work: sum over the names of (length + 1) ** (unbounded repeats + 1)
MAX_WORK = 2e8
_REPEATS = {_sre.MAX_REPEAT, _sre.MIN_REPEAT} | ({_sre.POSSESSIVE_REPEAT} if hasattr(_sre, "POSSESSIVE_REPEAT") else set())
_BOUNDED = 10  # a repeat of at most this many times counts as unrolled copies, not as unbounded


def _shape(items, inside: bool = False) -> tuple[str, int]:
    """(why the parsed pattern ``items`` may backtrack catastrophically, or ''; its number of
    unbounded repeats, bounded repeats unrolled). ``inside``: within an unbounded repeat."""
    count = 0

    def sub(body, inner_inside):
        why, n = _shape(body, inner_inside)
        if why:
            raise _Unsafe(why)
        return n

    try:
        for op, av in items:
            if op in _REPEATS:
                _low, high, body = av
                wide = high == _sre.MAXREPEAT or high > _BOUNDED
                if wide and inside:
                    return "a repeat inside a repeat (as in (a+)+)", count
                count += 1 + sub(body, True) if wide else max(high, 1) * sub(body, inside)
            elif op == _sre.BRANCH:
                if inside:
                    return "alternatives inside a repeat (as in (a|aa)+)", count
                count += max((sub(b, inside) for b in av[1]), default=0)
            elif op == _sre.SUBPATTERN:
                count += sub(av[-1], inside)
            elif op == getattr(_sre, "ATOMIC_GROUP", None):
                count += sub(av, inside)
            elif op in (_sre.ASSERT, _sre.ASSERT_NOT):
                count += sub(av[1], inside)
            elif op in (_sre.GROUPREF, _sre.GROUPREF_EXISTS):
                return "a back-reference", count
    except _Unsafe as exc:
        return str(exc), count
    return "", count


class _Unsafe(Exception):
    pass


def bounded_pattern(pattern: str, parameter: str = "pattern", names=()) -> "re.Pattern":
    """``pattern`` compiled, or InvalidParameterError naming it when it is not a regular
    expression or has a shape whose search time can explode (catastrophic backtracking): a
    repeat inside an unbounded repeat, alternatives inside one, a back-reference, more than
    MAX_REPEATS unbounded repeats, more than MAX_PATTERN characters; with ``names`` (the column
    names it will search), also when a name is longer than MAX_NAME or the search's worst-case
    work (see MAX_WORK) is too large. The check is on the pattern's structure and the names'
    lengths, so the verdict never depends on the machine's speed or load."""
    def refuse(why: str):
        raise InvalidParameterError(f"Parameter '{parameter}' {pattern!r} is refused: {why}. Use a simpler "
                                    "regular expression (no nested or alternating repeats), or name the "
                                    "columns with include / exclude.")

    if len(pattern) > MAX_PATTERN:
        refuse(f"it is longer than {MAX_PATTERN} characters")
    try:
        parsed = _sre_parse.parse(pattern)
        rx = re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise InvalidParameterError(f"Parameter '{parameter}' {pattern!r} is not a regular expression ({exc}).") from None
    why, count = _shape(list(parsed))
    if why:
        refuse(f"it has {why}, whose matching time can grow exponentially with the name's length")
    if count > MAX_REPEATS:
        refuse(f"it has {count} unbounded repeats (at most {MAX_REPEATS})")
    long = next((n for n in names if len(n) > MAX_NAME), None)
    if long is not None:
        refuse(f"column {long[:40]!r}... has a name of {len(long):,} characters, and patterns are matched "
               f"against names of at most {MAX_NAME:,}")
    if sum(float(len(n) + 1) ** (count + 1) for n in names) > MAX_WORK:
        refuse(f"with its {count} unbounded repeats, searching {len(names):,} column names this long could "
               "take too long")
    return rx


@dataclass(frozen=True)
class Pattern(Text):
    """A regular expression with a bounded matching time (:func:`bounded_pattern`)."""

    def _check(self, value):
        value = super()._check(value)
        bounded_pattern(value, self.name)
        return value

    def to_dict(self) -> dict:
        return {**super().to_dict(), "type": "Text"}


class SelectColumns(Preprocessor):
    id = "select_columns"
    name = "Select columns"
    handles_categorical = True
    accepts_sparse = True
    help = ("Keeps the columns named in include (all when none), that match pattern (a regular expression "
            "searched in the name), minus those named in exclude; then, with variance_threshold, only the "
            "numeric columns whose training variance is above it (as scikit-learn's VarianceThreshold). "
            "With top_k, only the top_k numeric columns of highest training variance, or dispersion "
            "(variance / mean, rank_by=dispersion; a column of mean 0 ranks last), are kept among those: the "
            "highly variable genes of count data (ties go to the earlier column). "
            "A name that is not a column is refused, naming it. The kept columns stay in their order.")
    params = (
        TextList("include", None, "Columns to keep (comma-separated names); none for all.", allow_none=True),
        TextList("exclude", None, "Columns to leave out (comma-separated names).", allow_none=True),
        Pattern("pattern", None, "A regular expression: keep the columns whose name it matches (no nested "
                "or alternating repeats: their matching time can explode).", allow_none=True),
        Float("variance_threshold", None, "Keep only the numeric columns whose variance is above this.",
              low=0.0, allow_none=True),
        Int("top_k", None, "Keep only this many numeric columns: those of highest variance or dispersion "
            "(rank_by); empty for no limit.", low=1, allow_none=True),
        Choice("rank_by", "variance", "What top_k ranks the numeric columns by: their variance, or their "
               "dispersion (variance / mean).", choices=("variance", "dispersion")),
    )

    def _fit(self, X):
        p = self._p
        names = self.columns_in_
        keep = np.ones(len(names), dtype=bool)
        if p["include"] is not None:
            keep[:] = False
            keep[self.positions_of(p["include"], "include")] = True
        if p["exclude"] is not None:
            keep[self.positions_of(p["exclude"], "exclude")] = False
        if p["pattern"] is not None:
            try:
                rx = bounded_pattern(p["pattern"], names=names)
            except InvalidParameterError as exc:
                raise self._error(str(exc)) from None
            keep &= np.asarray([rx.search(n) is not None for n in names], dtype=bool)
        if p["variance_threshold"] is not None:
            with np.errstate(all="ignore"):
                var = column_scores(X, "variance") if is_sparse(X) else np.nanvar(X, axis=0)
            numeric = np.asarray([n not in self.categories_in_ for n in names])
            keep &= ~numeric | (np.nan_to_num(var, nan=0.0) > p["variance_threshold"])
        if p["top_k"] is not None:
            keep &= top_columns(X, keep, np.asarray([n not in self.categories_in_ for n in names]), p["top_k"],
                                p["rank_by"])
        if not keep.any():
            raise self._error(f"no column is left (the columns are {', '.join(repr(n) for n in names)}).")
        self.keep_ = np.flatnonzero(keep)
        self.columns_out_ = [names[j] for j in self.keep_]
        self.categories_out_ = {c: v for c, v in self.categories_in_.items() if c in self.columns_out_}

    def _transform(self, X):
        if len(self.keep_) == X.shape[1]:   # every column kept: no copy
            return X
        return X[:, np.asarray(self.keep_, dtype=np.intp)]


def column_scores(X, by: str) -> np.ndarray:
    """The training variance (ddof 0) of every column, or its dispersion (variance / mean; -inf
    for a column of mean 0 or below, which then ranks last); NaN cells are left out."""
    with np.errstate(all="ignore"):
        if is_sparse(X):   # E[x²] - E[x]², the zeros included
            mean = np.asarray(X.mean(axis=0)).ravel()
            var = np.maximum(np.asarray(X.multiply(X).mean(axis=0)).ravel() - mean * mean, 0.0)
        else:
            mean = np.nanmean(X, axis=0)
            var = np.nan_to_num(np.nanvar(X, axis=0), nan=0.0)
        if by == "variance":
            return var
        return np.where(mean > 0, var / np.where(mean > 0, mean, 1.0), -np.inf)


def top_columns(X, keep: np.ndarray, numeric: np.ndarray, k: int, by: str) -> np.ndarray:
    """A mask of the columns kept: the ``k`` numeric columns among ``keep`` with the highest
    score (ties to the earlier column), and every non-numeric one."""
    candidates = np.flatnonzero(keep & numeric)
    scores = column_scores(X if candidates.size == X.shape[1] else X[:, candidates], by)
    order = candidates[np.argsort(-scores, kind="stable")][:k]
    mask = ~numeric.copy()
    mask[order] = True
    return mask


@hookimpl
def register_preprocessors():
    return [SelectColumns]
