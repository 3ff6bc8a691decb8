"""Conformance kit: checks any algorithm class against the public contract.

Plugin authors run it on their own estimators::

    from manifold_studio.algorithms.conformance import check_algorithm
    check_algorithm(MyAlgorithm)            # raises AssertionError naming the failed check

or one check at a time through :func:`iter_checks` (the test suite parametrises over it).
Every check builds a fresh estimator; ``params`` overrides defaults (e.g. a small
``n_neighbors`` for tiny data) and ``X`` / ``y`` replace the built-in test data.

Preparation steps (:class:`~manifold_studio.algorithms.preprocessing.Preprocessor`) have their own
checks (:class:`StepChecker`): ``check_preprocessor(MyStep)``, or ``iter_step_checks``.
"""
from __future__ import annotations

import subprocess
import sys
from typing import Callable, Iterator

import numpy as np

from manifold_studio.algorithms.base import Algorithm
from manifold_studio.algorithms.class_contract import validate_algorithm_class
from manifold_studio.algorithms.state_schema import validate_state
from manifold_studio.algorithms.params import (
    AnyOf,
    Bool,
    Choice,
    Float,
    Int,
    IntTuple,
    Param,
    Text,
    TextList,
)
from manifold_studio.algorithms.preprocessing import Preprocessor, validate_preprocessor_class
from manifold_studio.errors import (
    DataError,
    FitCancelled,
    InvalidParameterError,
    NotFittedError,
)

QT_MODULES = ("PySide6", "PyQt5", "PyQt6", "pyqtgraph", "qtpy", "superqt", "shiboken6")


def default_data(n: int = 60, d: int = 4, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A noisy helix in d dimensions (one connected manifold, so neighbourhood graphs are
    connected) with three labels along its length (contiguous, hence separable)."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0.0, 3.0 * np.pi, n))
    X = np.zeros((n, d))
    X[:, 0] = t
    X[:, 1] = 2.0 * np.cos(t)
    if d > 2:
        X[:, 2] = 2.0 * np.sin(t)
    X += rng.normal(scale=0.1, size=(n, d))
    y = np.minimum((t / np.pi).astype(int), 2)
    return X, y


class CancelAfter:
    """A progress that lets ``after`` checkpoints pass, then raises FitCancelled (as a user's
    Cancel would). Records the messages it saw. Useful in any plugin's cancellation test."""

    def __init__(self, after: int = 0):
        self.after, self.calls = after, 0
        self.messages: list[str] = []

    def checkpoint(self, fraction, message=""):
        self.calls += 1
        self.messages.append(message)
        if self.calls > self.after:
            raise FitCancelled("cancelled by the conformance kit")

    def partial(self, result):
        pass


def invalid_values(p: Param) -> list:
    """Values the constraint must refuse."""
    if isinstance(p, Bool):
        return ["maybe"]
    if isinstance(p, Choice):
        return ["__not_a_choice__"]
    if isinstance(p, IntTuple):
        return [(0,), "x"]
    if isinstance(p, Int):
        out = ["x", 1.5]
        if p.low is not None:
            out.append(p.low - 1)
        if p.high is not None:
            out.append(p.high + 1)
        return out
    if isinstance(p, Float):
        out = ["x", float("nan")]
        if p.low is not None:
            out.append(p.low - 1.0 if not p.low_open else p.low)
        if p.high is not None:
            out.append(p.high + 1.0 if not p.high_open else p.high)
        return out
    if isinstance(p, AnyOf):
        return ["__invalid__"]
    if isinstance(p, Text):
        return ["", 5]
    if isinstance(p, TextList):
        return [(), [1]]
    return []


class _ContractChecks:
    """The checks algorithms and preparation steps share: the class declared (help texts),
    ``__init__`` storing the parameters and nothing else, get/set_params round trips, invalid
    values refused with the parameter named, no Qt imported. A subclass sets ``cls``, ``X`` and
    ``params`` and says how to validate its class and how to fit."""

    def make(self, **extra):
        return self.cls(**{**self.params, **extra})

    def fitted(self):
        return self._fit(self.make())

    def _fit(self, est):
        raise NotImplementedError

    def _validate_class(self):
        raise NotImplementedError

    # -- the checks -------------------------------------------------------------------
    def check_class_contract(self):
        self._validate_class()
        assert self.cls.help and len(self.cls.help) > 20, "declare a one-paragraph help text"
        for p in self.cls.params:
            assert p.help, f"parameter '{p.name}' has no help text"

    def check_init_only_stores_params(self):
        est = self.cls()
        defaults = {p.name: p.default for p in self.cls.params}
        assert est.get_params() == defaults, "get_params() after __init__ must equal the declared defaults"
        fitted_attrs = [k for k in vars(est) if k.endswith("_") and not k.startswith("_")]
        assert not fitted_attrs, f"__init__ must only store parameters, found {fitted_attrs}"

    def check_params_round_trip(self):
        est = self.make()
        params = est.get_params()
        clone = self.cls(**params)
        assert clone.get_params() == params, "cls(**est.get_params()) must reproduce the parameters"
        assert est.set_params(**params) is est, "set_params must return self"
        assert est.get_params() == params
        try:
            est.set_params(__no_such_parameter__=1)
        except (InvalidParameterError, ValueError):
            pass
        else:
            raise AssertionError("set_params must refuse an unknown parameter name")

    def check_invalid_params_fail_clearly(self):
        for p in self.cls.params:
            for bad in invalid_values(p):
                try:
                    self._fit(self.make(**{p.name: bad}))
                except InvalidParameterError as exc:
                    assert p.name in str(exc), f"the message for {p.name}={bad!r} must name the parameter: {exc}"
                else:
                    raise AssertionError(f"fit accepted the invalid value {p.name}={bad!r}")

    def check_imports_no_qt(self):
        module = self.cls.__module__
        code = (f"import sys, importlib; importlib.import_module({module!r}); "
                f"bad = [m for m in sys.modules if m.split('.')[0] in {QT_MODULES!r}]; "
                "print(','.join(bad)); sys.exit(1 if bad else 0)")
        res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, f"module {module} imports Qt: {res.stdout.strip() or res.stderr[-500:]}"



def check_names(checker: type) -> tuple[str, ...]:
    """The ``check_*`` methods of a checker class, the shared ones first, in definition order."""
    names: list[str] = []
    for klass in reversed(checker.__mro__):
        names += [n for n in vars(klass) if n.startswith("check_") and n not in names]
    return tuple(names)


class Checker(_ContractChecks):
    def __init__(self, cls: type[Algorithm], X=None, y=None, params: dict | None = None):
        self.cls = cls
        if X is None:
            X, y_default = default_data()
            y = y_default if y is None else y
        self.X = np.asarray(X, dtype=float)
        self.y = y
        self.params = dict(params or {})

    def _validate_class(self):
        validate_algorithm_class(self.cls)

    def _fit(self, est) -> Algorithm:
        return est.fit(self.X, self.y)

    # -- the checks (after the shared ones) ----------------------------------------------
    def check_fit_returns_self(self):
        est = self.make()
        assert est.fit(self.X, self.y) is est, "fit must return self"
        n = self.X.shape[0]
        if self.cls.kind == "embedding":
            emb = np.asarray(est.embedding_)
            assert emb.ndim == 2 and emb.shape[0] == n, f"embedding_ must be (n, k), got {emb.shape}"
            assert np.all(np.isfinite(emb)), "embedding_ has non-finite values"
        elif self.cls.kind == "clustering":
            labels = np.asarray(est.labels_)
            assert labels.shape == (n,), f"labels_ must be (n,), got {labels.shape}"

    def check_extend_before_fit_fails(self):
        try:
            self.make().extend(self.X[:3])
        except NotFittedError as exc:
            assert "fit" in str(exc)
        else:
            raise AssertionError("extend before fit must raise NotFittedError")

    def check_extend_sample_wise(self):
        est = self.fitted()
        rng = np.random.default_rng(1)
        span = self.X.std(axis=0) * 0.05
        X_new = self.X[rng.choice(self.X.shape[0], 7, replace=False)] + rng.normal(size=(7, self.X.shape[1])) * span
        full = np.asarray(est.extend(X_new))
        assert full.shape[0] == X_new.shape[0]
        for i in range(X_new.shape[0]):
            one = np.asarray(est.extend(X_new[i:i + 1]))[0]
            np.testing.assert_allclose(one, full[i], rtol=1e-7, atol=1e-9,
                                       err_msg=f"extend is not sample-wise at row {i}")

    def check_extend_wrong_features(self):
        est = self.fitted()
        try:
            est.extend(np.ones((2, self.X.shape[1] + 1)))
        except DataError as exc:
            assert "feature" in str(exc)
        else:
            raise AssertionError("extend must refuse data with the wrong number of features")

    def check_nan_refused(self):
        X = self.X.copy()
        X[1, 0] = np.nan
        try:
            self.make().fit(X, self.y)
        except DataError as exc:
            assert "NaN" in str(exc) or "nan" in str(exc).lower()
        else:
            raise AssertionError("fit must refuse NaN values with a DataError")

    def check_cancellation(self):
        progress = CancelAfter(0)
        try:
            self.make().fit(self.X, self.y, progress=progress)
        except FitCancelled:
            pass
        else:
            raise AssertionError("fit must call progress.checkpoint and let FitCancelled propagate")
        est = self.fitted()
        try:
            est.extend(self.X, progress=CancelAfter(0))
        except FitCancelled:
            pass
        else:
            raise AssertionError("extend must call progress.checkpoint and let FitCancelled propagate")

    def check_state_meets_its_schema(self):
        """The fitted state names only declared attributes and meets the declared shape
        relations, so a saved model of this algorithm can be loaded back (see
        ``Algorithm.fitted_schema``)."""
        est = self.fitted()
        try:
            validate_state(self.cls, est.validate_params(), est.fitted_state())
        except ValueError as exc:
            raise AssertionError(f"fitted_state() breaks the declared fitted state: {exc} (declare it "
                                 "in fitted_schema, see manifold_studio.algorithms.state_schema)") from None

    def check_state_round_trip(self):
        est = self.fitted()
        state = est.fitted_state()
        other = self.make().restore_state(state)
        np.testing.assert_allclose(np.asarray(other.extend(self.X[:5]), dtype=float),
                                   np.asarray(est.extend(self.X[:5]), dtype=float),
                                   err_msg="restore_state(fitted_state()) must give the same extension")


CHECKS: tuple[str, ...] = check_names(Checker)


def iter_checks(cls, X=None, y=None, params=None) -> Iterator[tuple[str, Callable[[], None]]]:
    checker = Checker(cls, X, y, params)
    for name in CHECKS:
        yield name, getattr(checker, name)


def _run_checks(cls, checks) -> list[str]:
    """Run ``(name, check)`` pairs in order; raise AssertionError naming the first that fails."""
    passed = []
    for name, check in checks:
        try:
            check()
        except AssertionError as exc:
            raise AssertionError(f"{cls.__name__}: {name} failed: {exc}") from exc
        passed.append(name)
    return passed


def check_algorithm(cls, X=None, y=None, params=None) -> list[str]:
    """Run every check; raise AssertionError naming the first that fails."""
    return _run_checks(cls, iter_checks(cls, X, y, params))


# -- preparation steps --------------------------------------------------------------------------
def default_step_data(n: int = 60, seed: int = 0) -> tuple[np.ndarray, list[str]]:
    """Positive data for preparation steps: three measurements on very different scales and an
    integer code 0-2 (for one_hot with columns=...), named a, b, c, code."""
    X, _ = default_data(n, 3, seed)
    X = X - X.min(axis=0) + 0.5
    X[:, 2] *= 1000.0
    code = np.arange(n) % 3
    return np.column_stack([X, code]).astype(float), ["a", "b", "c", "code"]


class StepChecker(_ContractChecks):
    """The contract of a preparation step (see manifold_studio.algorithms.preprocessing)."""

    def __init__(self, cls: type[Preprocessor], X=None, columns=None, params: dict | None = None):
        self.cls = cls
        if X is None:
            X, columns = default_step_data()
        self.X = np.asarray(X, dtype=float)
        self.columns = list(columns) if columns is not None else [f"x{j}" for j in range(self.X.shape[1])]
        self.params = dict(params or {})

    def _validate_class(self):
        validate_preprocessor_class(self.cls)
        assert self.cls.kind == "preprocessing"

    def _fit(self, est) -> Preprocessor:
        return est.fit(self.X, self.columns)

    def check_fit_returns_self_and_names_columns(self):
        est = self.make()
        assert est.fit(self.X, self.columns) is est, "fit must return self"
        out = est.transform(self.X)
        assert out.dtype == np.float64 and out.shape[0] == self.X.shape[0]
        assert len(est.columns_out_) == out.shape[1], "columns_out_ must name every output column"
        assert est.columns_in_ == self.columns

    def check_transform_before_fit_fails(self):
        try:
            self.make().transform(self.X[:3])
        except NotFittedError as exc:
            assert "fit" in str(exc)
        else:
            raise AssertionError("transform before fit must raise NotFittedError")

    def check_transform_row_wise(self):
        est = self.fitted()
        full = est.transform(self.X[:9])
        for i in range(9):
            np.testing.assert_allclose(est.transform(self.X[i:i + 1])[0], full[i], rtol=1e-12, atol=1e-12,
                                       err_msg=f"transform is not row-wise at row {i}")

    def check_wrong_columns_refused(self):
        est = self.fitted()
        try:
            est.transform(np.ones((2, self.X.shape[1] + 1)))
        except DataError as exc:
            assert self.cls.id in str(exc), f"the message must name the step: {exc}"
        else:
            raise AssertionError("transform must refuse data with the wrong number of columns")

    def check_columns_matched_by_name(self):
        import pandas as pd

        est = self.fitted()
        frame = pd.DataFrame(self.X, columns=self.columns)
        np.testing.assert_allclose(est.transform(frame[self.columns[::-1]]), est.transform(self.X),
                                   err_msg="a DataFrame's columns must be matched by name")
        try:
            est.transform(frame.drop(columns=[self.columns[0]]))
        except DataError as exc:
            assert repr(self.columns[0]) in str(exc), f"the message must name the missing column: {exc}"
        else:
            raise AssertionError("transform must refuse a DataFrame that lacks a training column")

    def check_state_round_trip(self):
        import json

        est = self.fitted()
        state = est.fitted_state()
        scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
        json.dumps(scalars)  # the model file stores these as JSON
        other = self.make().restore_state(state)
        np.testing.assert_allclose(other.transform(self.X[:5]), est.transform(self.X[:5]),
                                   err_msg="restore_state(fitted_state()) must give the same transform")


STEP_CHECKS: tuple[str, ...] = check_names(StepChecker)


def iter_step_checks(cls, X=None, columns=None, params=None) -> Iterator[tuple[str, Callable[[], None]]]:
    checker = StepChecker(cls, X, columns, params)
    for name in STEP_CHECKS:
        yield name, getattr(checker, name)


def check_preprocessor(cls, X=None, columns=None, params=None) -> list[str]:
    """Run every step check; raise AssertionError naming the first that fails."""
    return _run_checks(cls, iter_step_checks(cls, X, columns, params))
