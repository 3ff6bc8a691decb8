"""Parameter constraints: the single source for validation, CLI parsing and GUI forms.

Each algorithm declares a tuple of :class:`Param` objects. A constraint knows its
name, default, help text and allowed values; it validates a value (raising
:class:`~manifold_studio.errors.InvalidParameterError` with a message naming the
parameter and what is allowed), parses a value from text (command line, text
fields) and describes itself for a generated settings form.
"""
from __future__ import annotations

import math
import numbers
from dataclasses import dataclass, field
from typing import Any, Sequence

from manifold_studio.errors import InvalidParameterError

_NONE_WORDS = {"none", "null", ""}


def _fail(name: str, value: Any, allowed: str):
    raise InvalidParameterError(f"Invalid value {value!r} for parameter '{name}': allowed {allowed}.")


@dataclass(frozen=True)
class Param:
    """Base constraint. Subclasses implement :meth:`_check` and :meth:`_parse`."""

    name: str
    default: Any
    help: str = ""
    allow_none: bool = False
    label: str = ""  # display label; derived from name when empty

    # -- public API -------------------------------------------------------------
    @property
    def display_name(self) -> str:
        return self.label or self.name.replace("_", " ").capitalize()

    def validate(self, value: Any) -> Any:
        """Return the normalised value or raise InvalidParameterError."""
        if value is None:
            if self.allow_none:
                return None
            _fail(self.name, value, self.describe())
        return self._check(value)

    def parse(self, text: str) -> Any:
        """Parse a value from text (command line, form field) and validate it."""
        if isinstance(text, str):
            stripped = text.strip()
            if self.allow_none and stripped.lower() in _NONE_WORDS:
                return None
            try:
                value = self._parse(stripped)
            except InvalidParameterError:
                raise
            except (TypeError, ValueError):
                _fail(self.name, text, self.describe())
            return self.validate(value)
        return self.validate(text)

    def format(self, value: Any) -> str:
        """Text form of a value, the inverse of :meth:`parse`."""
        return "none" if value is None else str(value)

    def describe(self) -> str:
        """Human description of the allowed values."""
        text = self._describe()
        return text + (" or none" if self.allow_none else "")

    def to_dict(self) -> dict:
        """JSON-friendly description (for forms, docs and `manifold-studio list`)."""
        return {"name": self.name, "type": type(self).__name__, "default": self.default,
                "help": self.help, "allowed": self.describe(), "allow_none": self.allow_none}

    # -- to override --------------------------------------------------------------
    def _check(self, value):  # pragma: no cover - abstract
        raise NotImplementedError

    def _parse(self, text: str):  # pragma: no cover - abstract
        raise NotImplementedError

    def _describe(self) -> str:  # pragma: no cover - abstract
        raise NotImplementedError


def _range_text(low, high, low_open, high_open) -> str:
    if low is None and high is None:
        return "any value"
    if high is None:
        return f"{'>' if low_open else '>='} {low}"
    if low is None:
        return f"{'<' if high_open else '<='} {high}"
    left = "(" if low_open else "["
    right = ")" if high_open else "]"
    return f"in {left}{low}, {high}{right}"


def _in_range(v, low, high, low_open, high_open) -> bool:
    if low is not None and (v < low or (low_open and v == low)):
        return False
    if high is not None and (v > high or (high_open and v == high)):
        return False
    return True


@dataclass(frozen=True)
class Int(Param):
    """An integer in [low, high] (either bound may be None)."""

    low: int | None = None
    high: int | None = None
    log: bool = False  # hint for forms: values span orders of magnitude

    def _check(self, value):
        if isinstance(value, bool):
            _fail(self.name, value, "an integer " + self.describe())
        if not isinstance(value, numbers.Integral):
            if isinstance(value, numbers.Real) and float(value).is_integer():
                value = int(value)
            else:
                _fail(self.name, value, "an integer " + self.describe())
        value = int(value)
        if not _in_range(value, self.low, self.high, False, False):
            _fail(self.name, value, "an integer " + self.describe())
        return value

    def _parse(self, text):
        return int(float(text)) if float(text).is_integer() else float(text)

    def _describe(self):
        return _range_text(self.low, self.high, False, False)


@dataclass(frozen=True)
class Float(Param):
    """A real number; bounds may be open or closed; `log` hints a log-scale widget."""

    low: float | None = None
    high: float | None = None
    low_open: bool = False
    high_open: bool = False
    log: bool = False

    def _check(self, value):
        if isinstance(value, bool) or not isinstance(value, numbers.Real):
            _fail(self.name, value, "a number " + self.describe())
        value = float(value)
        if math.isnan(value) or not _in_range(value, self.low, self.high, self.low_open, self.high_open):
            _fail(self.name, value, "a number " + self.describe())
        return value

    def _parse(self, text):
        return float(text)

    def _describe(self):
        return _range_text(self.low, self.high, self.low_open, self.high_open)


@dataclass(frozen=True)
class Bool(Param):
    """True or False."""

    def _check(self, value):
        if isinstance(value, (bool,)) or (isinstance(value, numbers.Integral) and value in (0, 1)):
            return bool(value)
        _fail(self.name, value, self.describe())

    def _parse(self, text):
        low = text.lower()
        if low in {"true", "yes", "1", "on"}:
            return True
        if low in {"false", "no", "0", "off"}:
            return False
        raise ValueError(text)

    def _describe(self):
        return "true or false"


@dataclass(frozen=True)
class Choice(Param):
    """One of a fixed set of strings."""

    choices: tuple = ()

    def _check(self, value):
        if value not in self.choices:
            _fail(self.name, value, self.describe())
        return value

    def _parse(self, text):
        return text

    def _describe(self):
        return "one of " + ", ".join(repr(c) for c in self.choices)

    def to_dict(self):
        d = super().to_dict()
        d["choices"] = list(self.choices)
        return d


@dataclass(frozen=True)
class IntTuple(Param):
    """A non-empty tuple of integers each in [low, high] (e.g. hidden layer sizes)."""

    low: int | None = 1
    high: int | None = None
    min_length: int = 1
    max_length: int | None = None

    def _check(self, value):
        if isinstance(value, numbers.Integral) and not isinstance(value, bool):
            value = (value,)
        try:
            items = tuple(value)
        except TypeError:
            _fail(self.name, value, self.describe())
        ok = len(items) >= self.min_length and (self.max_length is None or len(items) <= self.max_length)
        ok = ok and all(isinstance(i, numbers.Integral) and not isinstance(i, bool)
                        and _in_range(int(i), self.low, self.high, False, False) for i in items)
        if not ok:
            _fail(self.name, value, self.describe())
        return tuple(int(i) for i in items)

    def _parse(self, text):
        parts = [p for p in text.replace("(", "").replace(")", "").replace(";", ",").replace(" ", ",").split(",") if p]
        return tuple(int(p) for p in parts)

    def format(self, value):
        return "none" if value is None else ", ".join(str(v) for v in value)

    def _describe(self):
        if self.max_length is None:
            length = "" if self.min_length <= 0 else f" (at least {self.min_length} item{'s' if self.min_length > 1 else ''})"
        else:
            length = f" ({self.min_length} to {self.max_length} items)"
        return f"a comma-separated list{length} of integers {_range_text(self.low, self.high, False, False)}"


@dataclass(frozen=True)
class AnyOf(Param):
    """A value accepted by any of several constraints (e.g. a count or a fraction).

    The sub-constraints' names and defaults are ignored; the first that accepts the
    value wins (integers are tried before reals, so ``2`` is a count and ``0.95`` a fraction).
    """

    options: tuple = ()

    def _check(self, value):
        for opt in self.options:
            try:
                return opt.validate(value)
            except InvalidParameterError:
                continue
        _fail(self.name, value, self.describe())

    def _parse(self, text):
        for opt in self.options:
            try:
                return opt.parse(text)
            except InvalidParameterError:
                continue
        raise ValueError(text)

    def _describe(self):
        parts = []
        for opt in self.options:
            kind = {"Int": "an integer ", "Float": "a number "}.get(type(opt).__name__, "")
            parts.append(kind + opt._describe())
        return " or ".join(parts)


@dataclass(frozen=True)
class Text(Param):
    """A non-empty string (a column name, a pattern, a fill value)."""

    def _check(self, value):
        if not isinstance(value, str) or not value.strip():
            _fail(self.name, value, self.describe())
        return value.strip()

    def _parse(self, text):
        return text

    def _describe(self):
        return "a non-empty text"


@dataclass(frozen=True)
class TextList(Param):
    """A tuple of non-empty strings (column names); text is split at commas."""

    def _check(self, value):
        if isinstance(value, str):
            value = self._parse(value)
        try:
            items = tuple(value)
        except TypeError:
            _fail(self.name, value, self.describe())
        if not items or not all(isinstance(i, str) and i.strip() for i in items):
            _fail(self.name, value, self.describe())
        return tuple(i.strip() for i in items)

    def _parse(self, text):
        return tuple(p.strip() for p in text.split(",") if p.strip())

    def format(self, value):
        return "none" if value is None else ", ".join(value)

    def _describe(self):
        return "a comma-separated list of names"


def validate_params(constraints: Sequence[Param], values: dict) -> dict:
    """Validate a full parameter dict against constraints; return normalised values."""
    by_name = {p.name: p for p in constraints}
    unknown = sorted(set(values) - set(by_name))
    if unknown:
        raise InvalidParameterError(
            f"Unknown parameter(s) {', '.join(unknown)}: allowed are {', '.join(by_name) or 'none'}.")
    return {name: by_name[name].validate(v) for name, v in values.items()}


# -- parameters many algorithms declare --------------------------------------------------
# One definition of each common parameter's name, type and allowed range; each algorithm
# gives its own default and help text (what the parameter means for that method).

def n_components_param(default: int = 2, help: str = "Number of output dimensions.") -> Int:
    """``n_components``: a positive number of output dimensions (or of mixture components)."""
    return Int("n_components", default, help, low=1)


def n_neighbors_param(help: str, default: int = 10) -> Int:
    """``n_neighbors``: a positive number of nearest neighbours."""
    return Int("n_neighbors", default, help, low=1)


def n_clusters_param(default: int, help: str, *, allow_none: bool = False) -> Int:
    """``n_clusters``: a positive number of clusters (``allow_none`` where another rule decides)."""
    return Int("n_clusters", default, help, low=1, allow_none=allow_none)


def n_init_param(default: int, help: str) -> Int:
    """``n_init``: a positive number of runs from different starts, the best kept."""
    return Int("n_init", default, help, low=1)


def max_iter_param(default: int, help: str) -> Int:
    """``max_iter``: a positive iteration budget."""
    return Int("max_iter", default, help, low=1)


def tol_param(default: float, help: str) -> Float:
    """``tol``: a non-negative stopping tolerance (log-scale in forms)."""
    return Float("tol", default, help, low=0.0, log=True)


def random_state_param(help: str) -> Int:
    """``random_state``: a seed (a non-negative integer) or None for a different seed every run."""
    return Int("random_state", None, help, low=0, allow_none=True)
