"""The preparation-step contract (plugin kind ``preprocessing``): public API for scripts, tests,
the pipeline (:mod:`manifold_studio.algorithms.pipeline`) and third-party plugins.

A step is a class deriving from :class:`Preprocessor` that declares::

    id = "standardize"
    name = "Standardize (z-score)"
    help = "One paragraph shown in the window and `manifold-studio list`."
    params = (Bool("with_mean", True, "help"), ...)       # constraints, as for algorithms

and implements ``_fit(self, X)`` (set fitted attributes ending in ``_`` and, when the columns
change, ``self.columns_out_``) and ``_transform(self, X)``. Plugins return step classes from the
``register_preprocessors`` hook.

The base class generates a keyword-only ``__init__`` that only stores parameters, validates
parameters and data, and keeps the column names: ``fit(X, columns=None, categories=None)``
records ``columns_in_`` (names, default ``x0, x1, ...``) and ``categories_in_``
({column: categories} of the categorical columns, whose values in ``X`` are category values
when the categories are numbers and category indices otherwise; see
:class:`manifold_studio.tables.Table`). After fitting, ``columns_out_`` and ``categories_out_``
describe the output. Numeric steps (scaling, log) leave categorical columns as they are.

``X`` is float64 (n, d) with NaN for missing values; steps let NaN through unless they say
otherwise (``impute`` fills them). A step that declares ``accepts_sparse = True`` also gets and
returns a scipy.sparse CSR matrix as it is (count data); the others refuse one by name. ``transform`` is row-wise: ``transform(X)[i]`` equals
``transform(X[i:i+1])[0]``. Failures are :class:`~manifold_studio.errors.DataError` whose
message names the step and the column. ``fitted_state()`` / ``restore_state()`` save a fitted
step without pickle (arrays and JSON values), as for algorithms.
"""
from __future__ import annotations

import time
from typing import Any, ClassVar

import numpy as np

from manifold_studio.algorithms.base import Algorithm, _make_init
from manifold_studio.algorithms.class_contract import class_problems
from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.docstrings import with_parameters
from manifold_studio.algorithms.named_columns import as_named_matrix, frame_to_matrix, match_columns, sparse_float
from manifold_studio.algorithms.params import Param
from manifold_studio.errors import DataError, not_fitted

__all__ = ["Preprocessor", "NumericScaler", "validate_preprocessor_class", "KIND"]

KIND = "preprocessing"


class Preprocessor:
    """Base class of every preparation step (see the module docstring). Qt-free."""

    kind: ClassVar[str] = KIND
    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    help: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: whether the step works on categorical columns (one_hot, impute, select_columns) rather
    #: than leaving them alone
    handles_categorical: ClassVar[bool] = False
    #: whether the step takes a scipy.sparse CSR matrix and returns one (normalize_total, log,
    #: select_columns); the others refuse sparse data with a message
    accepts_sparse: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(tuple(cls.params))
        if "params" in cls.__dict__:  # the Parameters section, from the constraints (as for algorithms)
            cls.__doc__ = with_parameters(cls.__dict__.get("__doc__") or cls.__dict__.get("help"), cls.params)

    # parameters: the same as for algorithms
    param_constraints = Algorithm.__dict__["param_constraints"]  # the classmethods themselves
    _get_param_names = Algorithm.__dict__["_get_param_names"]
    get_params = Algorithm.get_params
    set_params = Algorithm.set_params
    validate_params = Algorithm.validate_params
    __repr__ = Algorithm.__repr__
    _reset_fitted = Algorithm._reset_fitted

    # -- helpers for subclasses -----------------------------------------------------------
    def _error(self, message: str) -> DataError:
        return DataError(f"Step '{self.id}': {message}")

    def _check_sparse(self, X) -> None:
        if is_sparse(X) and not self.accepts_sparse:
            raise self._error("the data are sparse, and this step takes dense data only (the steps for sparse "
                              "counts are normalize_total, log and select_columns); reduce them first (e.g. PCA) "
                              "or densify them.")

    def numeric_positions(self) -> np.ndarray:
        """Indices of the input columns that are not categorical."""
        return np.asarray([j for j, c in enumerate(self.columns_in_) if c not in self.categories_in_],
                          dtype=np.intp)

    def positions_of(self, names, parameter: str) -> np.ndarray:
        """Indices of the named input columns; an unknown name is refused naming it."""
        missing = [n for n in names if n not in self.columns_in_]
        if missing:
            raise self._error(f"no column named {', '.join(repr(m) for m in missing)} (parameter "
                              f"'{parameter}'); the columns are {', '.join(repr(c) for c in self.columns_in_)}.")
        return np.asarray([self.columns_in_.index(n) for n in names], dtype=np.intp)

    def refuse_empty_columns(self, X: np.ndarray, positions: np.ndarray, what: str) -> None:
        """Refuse a column with no value at all (every row missing), naming it."""
        empty = np.isnan(X[:, positions]).all(axis=0) if len(positions) else np.zeros(0, dtype=bool)
        if empty.any():
            name = self.columns_in_[int(positions[np.flatnonzero(empty)[0]])]
            raise self._error(f"column '{name}' has no value (every row is missing): {what}. Leave the column "
                              "out (select_columns exclude=...) or fill it with impute strategy=constant.")

    # -- fitting ------------------------------------------------------------------------
    def fit(self, X, columns=None, categories=None, progress=None):
        """Fit on ``X`` (n, d) whose columns are named ``columns`` (a DataFrame or a Table
        brings its own names and categories); returns ``self``."""
        self._p = self.validate_params()
        X, names, cats = as_named_matrix(X, columns, categories)
        self._check_sparse(X)
        if X.shape[0] < 1:
            raise self._error("there are no rows to fit on.")
        if is_sparse(X) and np.isinf(X.data).any():
            j = int(X.tocoo().col[np.flatnonzero(np.isinf(X.tocoo().data))[0]])
            raise self._error(f"column '{names[j]}' holds infinite values.")
        if not is_sparse(X) and np.isinf(X).any():
            j = int(np.flatnonzero(np.isinf(X).any(axis=0))[0])
            raise self._error(f"column '{names[j]}' holds infinite values.")
        self._reset_fitted()
        self.columns_in_ = list(names)
        self.categories_in_ = {k: list(v) for k, v in cats.items() if k in names}
        self.columns_out_ = list(names)
        self.categories_out_ = dict(self.categories_in_)
        start = time.perf_counter()
        self._fit(X)
        self.n_features_in_ = X.shape[1]
        self.fit_time_ = time.perf_counter() - start
        return self

    def _fit(self, X: np.ndarray) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_features_in_")

    def transform(self, X, progress=None) -> np.ndarray:
        """The prepared matrix (n, len(columns_out_)), row by row."""
        if not self.is_fitted:
            raise not_fitted(f"This {self.name or type(self).__name__} step is not fitted yet: call fit(X) "
                             "before transform().")
        if hasattr(X, "columns") and hasattr(X, "dtypes"):
            X = match_columns(X, self.columns_in_, f"step '{self.id}'")
            X = frame_to_matrix(X, self.categories_in_)[0]
        X, _, _ = as_named_matrix(X, what=f"The data for step '{self.id}'")
        self._check_sparse(X)
        if X.shape[1] != self.n_features_in_:
            raise self._error(f"the data have {X.shape[1]} features, but the step was fitted on "
                              f"{self.n_features_in_} ({', '.join(self.columns_in_)}).")
        out = self._transform(X)
        return sparse_float(out) if is_sparse(out) else np.asarray(out, dtype=np.float64)

    def _transform(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def fit_transform(self, X, columns=None, categories=None, progress=None) -> np.ndarray:
        return self.fit(X, columns, categories, progress).transform(as_named_matrix(X, columns, categories)[0])

    # -- saving -------------------------------------------------------------------------
    def fitted_state(self) -> dict[str, Any]:
        """Fitted attributes (names ending in ``_``): numeric/text arrays or JSON values."""
        state = {}
        for key, value in vars(self).items():
            if not key.endswith("_") or key.startswith("_"):
                continue
            if isinstance(value, np.ndarray):
                if value.dtype != object:
                    state[key] = value
            elif isinstance(value, np.generic):
                state[key] = value.item()
            else:
                state[key] = value
        return state

    def restore_state(self, state: dict[str, Any]):
        for key, value in state.items():
            setattr(self, key, value)
        self._p = self.validate_params()
        return self

    def describe(self) -> str:
        """One line: the step and its non-default parameters."""
        return repr(self)


class NumericScaler(Preprocessor):
    """Base of the per-column affine steps: ``(x - center_) / scale_`` on every numeric column
    (categorical columns pass unchanged; NaN stays NaN). Subclasses implement
    ``_center_scale(X) -> (center, scale)`` on the numeric columns; a scale of (nearly) zero, as
    for a constant column, is replaced by 1."""

    def _center_scale(self, X: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError

    def _fit(self, X):
        pos = self.numeric_positions()
        self.refuse_empty_columns(X, pos, "there is nothing to scale it by")
        center, scale = self._center_scale(X[:, pos])
        scale = np.asarray(scale, dtype=np.float64)
        self.positions_ = pos
        self.center_ = np.asarray(center, dtype=np.float64)
        self.scale_ = np.where(np.abs(scale) < 10 * np.finfo(np.float64).eps, 1.0, scale)

    def _transform(self, X):
        out = X.copy()
        pos = np.asarray(self.positions_, dtype=np.intp)
        out[:, pos] = (X[:, pos] - self.center_) / self.scale_
        return out


def validate_preprocessor_class(cls) -> None:
    """Raise TypeError when ``cls`` does not meet the declared contract (used by the plugin host)."""
    if not (isinstance(cls, type) and issubclass(cls, Preprocessor)):
        raise TypeError(f"{cls!r} is not a subclass of manifold_studio.algorithms.preprocessing.Preprocessor")
    problems = class_problems(cls)
    if problems:
        raise TypeError(f"Preprocessor class {cls.__name__}: " + "; ".join(problems))
