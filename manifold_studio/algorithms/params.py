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


#: the sizes a :class:`DataLimit` can refer to: what each is called in messages
_SIZES = {"n_samples": ("n", "the number of samples"), "n_features": ("n_features", "the number of features"),
          "min": ("min(n, n_features)", "the smaller of the numbers of samples and features")}


@dataclass(frozen=True)
class DataLimit:
    """An upper bound of a numeric parameter set by the data's shape: ``value < size + offset``
    (``strict``) or ``value <= size + offset``, where ``size`` is ``"n_samples"``,
    ``"n_features"`` or ``"min"`` (the smaller of the two). Declared on the parameter
    (``Float("perplexity", 30.0, ..., limit=DataLimit("n_samples", strict=True))``), checked by
    ``Algorithm.check_params_vs_input`` before each fit and by the settings form before Run."""

    of: str = "n_samples"
    strict: bool = False
    offset: int = 0
    why: str = ""   #: the reason, said after the rule

    def __post_init__(self):
        if self.of not in _SIZES:
            raise ValueError(f"DataLimit.of must be one of {', '.join(_SIZES)}, not {self.of!r}")

    def bound(self, n_samples: int | None, n_features: int | None) -> int | None:
        """The bound for data of this shape; None when a size it needs is unknown (None)."""
        sizes = {"n_samples": n_samples, "n_features": n_features}
        size = sizes.get(self.of) if self.of in sizes else (
            None if None in (n_samples, n_features) else min(n_samples, n_features))
        return None if size is None else int(size) + self.offset

    def problem(self, name: str, value, n_samples: int | None, n_features: int | None) -> str:
        bound = self.bound(n_samples, n_features)
        if bound is None or value < bound or (not self.strict and value == bound):
            return ""
        symbol, meaning = _SIZES[self.of]
        size = bound - self.offset
        meaning += "" if self.of == "min" else " of the data"
        if self.of == "min":
            symbol = f"min(n, n_features) = min({n_samples}, {n_features})"
        if self.offset:   # "n - 2 = 8 (n = 10, the number of samples of the data)"
            where, meaning = f"{symbol} {'+' if self.offset > 0 else '-'} {abs(self.offset)} = {bound}", \
                f"{symbol} = {size}, {meaning}"
        else:
            where = f"{symbol} = {size}"
        text = f"{value:g}" if isinstance(value, float) else str(value)
        return (f"{name}={text} is too large: {name} must be {'below' if self.strict else 'at most'} "
                f"{where} ({meaning})" + (f": {self.why}." if self.why else "."))

    def describe(self) -> str:
        symbol = _SIZES[self.of][0] + (f" {'+' if self.offset > 0 else '-'} {abs(self.offset)}" if self.offset else "")
        return f"{'<' if self.strict else '<='} {symbol}"


@dataclass(frozen=True)
class Param:
    """Base constraint. Subclasses implement :meth:`_check` and :meth:`_parse`."""

    name: str
    default: Any
    help: str = ""
    allow_none: bool = False
    label: str = ""  # display label; derived from name when empty
    #: a bound set by the data's shape (perplexity below n, n_clusters at most n...), checked by
    #: :meth:`data_problem` before a fit and shown by forms before Run
    limit: "DataLimit | None" = None

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

    def data_problem(self, value: Any, n_samples: int, n_features: int) -> str:
        """Why ``value`` cannot be used on data of this shape ("" when it can, or when the
        parameter has no :attr:`limit`)."""
        if self.limit is None or value is None or isinstance(value, bool) or not isinstance(value, numbers.Real):
            return ""
        return self.limit.problem(self.name, value, n_samples, n_features)

    def to_dict(self) -> dict:
        """JSON-friendly description (for forms, docs and `manifold-studio list`)."""
        d = {"name": self.name, "type": type(self).__name__, "default": self.default,
             "help": self.help, "allowed": self.describe(), "allow_none": self.allow_none}
        if self.limit is not None:
            d["limit"] = self.limit.describe()
        return d

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

    def data_problem(self, value, n_samples, n_features):
        """Only a count is bounded by the data (a fraction such as 0.95 is not)."""
        if isinstance(value, float) and not value.is_integer():
            return ""
        return super().data_problem(value, n_samples, n_features)

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


def data_problems(constraints: Sequence[Param], values: dict, n_samples: int | None,
                  n_features: int | None) -> list[str]:
    """The :class:`DataLimit` problems of (validated) ``values`` on data of shape
    (n_samples, n_features): one message per parameter out of bounds, empty when all fit. A size
    given as None is unknown (a form before a preparation chain has run): its limits are skipped."""
    return [msg for p in constraints if (msg := p.data_problem(values.get(p.name), n_samples, n_features))]


# -- parameters many algorithms declare --------------------------------------------------
# One definition of each common parameter's name, type and allowed range; each algorithm
# gives its own default and help text (what the parameter means for that method).

def n_components_param(default: int = 2, help: str = "Number of output dimensions.", *,
                       limit: DataLimit | None = None) -> Int:
    """``n_components``: a positive number of output dimensions (or of mixture components);
    ``limit``: its bound by the data (e.g. ``DataLimit("n_features")``)."""
    return Int("n_components", default, help, low=1, limit=limit)


def n_neighbors_param(help: str, default: int = 10, *, limit: DataLimit | None = None) -> Int:
    """``n_neighbors``: a positive number of nearest neighbours (``limit``: its bound by the data)."""
    return Int("n_neighbors", default, help, low=1, limit=limit)


#: at most one cluster per sample
AT_MOST_N = DataLimit("n_samples")
#: neighbours of a point among the n - 1 others
BELOW_N = DataLimit("n_samples", strict=True, why="a point has only n - 1 other points")
#: output dimensions of a spectral method that discards the constant eigenvector (LLE, eigenmaps)
SPECTRAL_SKIP_ONE = DataLimit("n_samples", offset=-2, why="the constant eigenvector is discarded and "
                                                          "at most n - 1 eigenvectors are usable")


def n_clusters_param(default: int, help: str, *, allow_none: bool = False) -> Int:
    """``n_clusters``: a positive number of clusters, at most the number of samples
    (``allow_none`` where another rule decides)."""
    return Int("n_clusters", default, help, low=1, allow_none=allow_none, limit=AT_MOST_N)


def n_init_param(default: int, help: str) -> Int:
    """``n_init``: a positive number of runs from different starts, the best kept."""
    return Int("n_init", default, help, low=1)


def max_iter_param(default: int, help: str) -> Int:
    """``max_iter``: a positive iteration budget."""
    return Int("max_iter", default, help, low=1)


def tol_param(default: float, help: str) -> Float:
    """``tol``: a non-negative stopping tolerance (log-scale in forms)."""
    return Float("tol", default, help, low=0.0, log=True)


#: the fixed seed every stochastic method starts from, so that Run twice gives the same numbers
DEFAULT_SEED = 0

#: said in every seed's help: the default and what none means
SEED_NOTE = (" The default, 0, gives the same result on every run, in the window, the command line and "
             "scripts (unlike scikit-learn, whose default draws); none draws a new seed at each fit, "
             "recorded with the run as random_state_used.")


def random_state_param(help: str, default: int | None = DEFAULT_SEED) -> Int:
    """``random_state``: a seed (a non-negative integer; default :data:`DEFAULT_SEED`) or None,
    the explicit choice of a new seed at each fit (the fit records the seed it drew as
    ``random_state_used_``)."""
    return Int("random_state", default, help.rstrip() + SEED_NOTE, low=0, allow_none=True)
