"""The algorithm contract (public API for scripts, tests and third-party plugins).

An algorithm is a class deriving from :class:`EmbeddingAlgorithm`,
:class:`ClusteringAlgorithm` or :class:`ClassificationAlgorithm` that declares::

    id = "pca"                      # stable identifier
    name = "Principal component analysis"
    kind = "embedding"              # set by the base class
    help = "One paragraph shown in the GUI and `manifold-studio list`."
    params = (Int("n_components", 2, "help", low=1), ...)

and implements ``_fit(self, X, y, progress)`` and ``_extend(self, X)``. The base class
generates a keyword-only ``__init__`` that only stores parameters (so scikit-learn's
``get_params``/``clone`` work), validates parameters and data, times the fit and runs
``extend`` in chunks with progress and cancellation (``extend`` is sample-wise by contract).
"""
from __future__ import annotations

import contextlib
import inspect
import time
import warnings
from typing import Any, ClassVar

import numpy as np

from manifold_studio.algorithms.blas_limits import blas_single_thread
from manifold_studio.algorithms.checks import (
    check_data, check_labels, check_n_features, check_sparse_data, fix_seed, is_sparse,
    register_sparse_method, sparse_refusal,
)
from manifold_studio.algorithms.labels import class_label_vector, encode_labels
from manifold_studio.algorithms.output import OutputNamesMixin
from manifold_studio.algorithms.docstrings import with_parameters
from manifold_studio.algorithms.params import Param, data_problems, validate_params
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.algorithms.state_schema import Fitted, StateError, declared_state, spec_for
from manifold_studio.errors import DataError, InvalidParameterError, not_fitted

KINDS = ("embedding", "clustering", "classification")


def _make_init(params: tuple[Param, ...]):
    def __init__(self, **kwargs):
        by_name = {p.name: p for p in params}
        unknown = sorted(set(kwargs) - set(by_name))
        if unknown:
            raise TypeError(f"{type(self).__name__}() got unexpected parameter(s) {', '.join(unknown)}; "
                            f"allowed are {', '.join(by_name)}.")
        for p in params:
            setattr(self, p.name, kwargs.get(p.name, p.default))

    __init__.__signature__ = inspect.Signature(
        [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
        + [inspect.Parameter(p.name, inspect.Parameter.KEYWORD_ONLY, default=p.default) for p in params])
    __init__.__doc__ = "Store the parameters (keyword-only); see the class docstring."
    return __init__


class Algorithm:
    """Base class of every algorithm plugin. Qt-free."""

    _estimator_type: ClassVar[str | None] = None

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""
    help: ClassVar[str] = ""
    params: ClassVar[tuple[Param, ...]] = ()
    #: minimum number of training samples (checked before fitting)
    min_samples: ClassVar[int] = 2
    #: whether fit needs labels ``y``
    requires_labels: ClassVar[bool] = False
    #: rows per chunk when extending (bounded memory, progress, cancel)
    extend_chunk_size: ClassVar[int] = 2048
    #: whether fit/extend accept missing values (NaN) in X; override
    #: :meth:`accepts_missing_values` when it depends on a parameter
    accepts_missing: ClassVar[bool] = False
    #: a library call inside fit holds Python's GIL for long stretches on large data (scipy's
    #: linkage, Dijkstra, sparse LU): the window then runs the fit in a separate process by
    #: default, where it can neither freeze the window nor ignore Cancel
    holds_gil: ClassVar[bool] = False
    #: rules for fitted attributes (shape relations, required members...), merged over the
    #: class hierarchy; the names themselves are derived from the code (see :meth:`declared_state`)
    fitted_schema: ClassVar[dict[str, Fitted]] = {}
    #: whether fit/extend take scipy.sparse input (as a canonical CSR float64 ``csr_array``, never
    #: densified by the checks); override :meth:`accepts_sparse_input` when it depends on a
    #: parameter and say so in ``sparse_condition`` (named in the refusal message of other methods)
    accepts_sparse: ClassVar[bool] = False
    sparse_condition: ClassVar[str] = ""
    #: float32 input gives float32 output (``embedding_``, the attributes in ``float32_attributes``
    #: and extend's float results for float32 input). The computation itself runs in float64: the
    #: checks convert, and the results are cast back after the fit
    preserves_float32: ClassVar[bool] = False
    float32_attributes: ClassVar[tuple[str, ...]] = ()
    #: fit and extend hold BLAS on one thread (:func:`~manifold_studio.algorithms.blas_limits.blas_single_thread`):
    #: OpenBLAS's results depend on its thread count, which other threads may change mid-fit, so
    #: this gives the same bits whatever else runs in the process (the classifiers: Test & Score
    #: in the window, ``score``, the API and a script agree exactly)
    one_blas_thread: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" not in cls.__dict__:
            cls.__init__ = _make_init(tuple(cls.params))
        if "params" in cls.__dict__:  # the help is written once, in the constraints
            cls.__doc__ = with_parameters(cls.__dict__.get("__doc__"), cls.params)
        if cls.accepts_sparse and isinstance(cls.id, str) and cls.id:
            register_sparse_method(cls.id, cls.sparse_condition)

    # -- parameters ---------------------------------------------------------------
    @classmethod
    def param_constraints(cls) -> dict[str, Param]:
        return {p.name: p for p in cls.params}

    @classmethod
    def _get_param_names(cls) -> list[str]:
        return [p.name for p in cls.params]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self._get_param_names()}

    def set_params(self, **params):
        names = self._get_param_names()
        for key, value in params.items():
            if key not in names:
                raise InvalidParameterError(
                    f"Unknown parameter '{key}' for {self.id or type(self).__name__}: "
                    f"allowed are {', '.join(names)}.")
            setattr(self, key, value)
        return self

    def validate_params(self) -> dict[str, Any]:
        """Validate the current parameters; return the normalised values."""
        return validate_params(self.params, self.get_params())

    def __repr__(self):
        defaults = {p.name: p.default for p in self.params}
        changed = [f"{k}={v!r}" for k, v in self.get_params().items()
                   if not (isinstance(v, type(defaults[k])) and v == defaults[k])]
        return f"{type(self).__name__}({', '.join(changed)})"

    def check_params_vs_input(self, n_samples: int, n_features: int | None) -> list[str]:
        """Problems of the parameters on data of this shape ("perplexity must be below n = 150"...)."""
        return list(self._input_problems(self.validate_params(), n_samples, n_features))

    def _input_problems(self, p: dict, n_samples: int, n_features: int) -> list[str]:
        """The parameters' ``limit`` problems (a size may be None); extend, calling super, for others."""
        return data_problems(self.params, p, n_samples, n_features)

    # -- fitting ------------------------------------------------------------------
    def fit(self, X, y=None, progress=None):
        """Fit on ``X`` (n, d); returns ``self``; the seed used (or drawn) is ``random_state_used_``."""
        self._p = self.validate_params()
        X = self._check_training_data(X)
        if problems := self._input_problems(self._p, *X.shape):
            raise DataError(f"{self.name or type(self).__name__}: " + " ".join(problems))
        if self.requires_labels:
            y = self._check_labels(y, X.shape[0])
        progress = as_progress(progress)
        start = time.perf_counter()
        self._reset_fitted()
        if (seed := fix_seed(self._p)) is not None:
            self.random_state_used_ = seed
        with self._blas():
            self._fit(X, y, progress)
        self.n_features_in_ = X.shape[1]
        if getattr(self, "_float32_input", False):
            self._cast_float32()
        self.fit_time_ = time.perf_counter() - start
        return self

    def _blas(self):
        return blas_single_thread() if self.one_blas_thread else contextlib.nullcontext()

    def _keeps_float32(self, X) -> bool:
        """Whether results for this input are returned as float32 (see ``preserves_float32``)."""
        return bool(self.preserves_float32) and getattr(X, "dtype", None) == np.float32

    def _in_precision_of(self, out, X):
        """``out`` as float32 when ``X`` is float32 and the estimator keeps float32 (scikit-learn
        returns float32 from transform and inverse_transform then), else as it is."""
        keep32 = self._keeps_float32(X)
        return out.astype(np.float32) if keep32 and getattr(out, "dtype", None) == np.float64 else out

    def _cast_float32(self) -> None:
        def cast(value):
            if isinstance(value, np.ndarray) and value.dtype == np.float64:
                return value.astype(np.float32)
            if isinstance(value, list):  # per-layer weights (the MLP's coefs_)
                return [cast(v) for v in value]
            return value

        for key in ("embedding_", *self.float32_attributes):
            if hasattr(self, key):
                setattr(self, key, cast(getattr(self, key)))

    def _check_labels(self, y, n: int):
        return check_labels(y, n)

    def _warn(self, message: str, category: type[Warning] = UserWarning) -> None:
        """Warn about the fit (``warnings.warn``) and keep the message in ``fit_warnings_``,
        which the session writes to the run's log (thread-safe, unlike catching warnings)."""
        self.fit_warnings_ = [*getattr(self, "fit_warnings_", []), str(message)]
        warnings.warn(message, category, stacklevel=3)

    def _stop_early(self, message: str) -> None:
        """For iterative methods whose current state is a usable result (t-SNE's map, a network's
        weights): call it from ``except FitCancelled`` in the loop, finish the fitted attributes
        from the current state and return normally. Cancel then keeps the result, marked
        ``stopped_early_`` (the session logs it and the window says "stopped early")."""
        self.stopped_early_ = True
        self._warn(f"Stopped early on Cancel: {message}", UserWarning)

    def uses_labels(self) -> bool:
        """Whether ``fit`` uses labels ``y`` with the current parameters: always when
        :attr:`requires_labels`, and for methods where labels are optional (supervised UMAP's
        ``target_weight``) when the parameters ask for them. Interfaces pass the data set's
        labels to ``fit`` exactly then."""
        return bool(self.requires_labels)

    def accepts_missing_values(self) -> bool:
        """Whether this estimator, with its current parameters, accepts NaN in X."""
        return bool(self.accepts_missing)

    def accepts_sparse_input(self) -> bool:
        """Whether this estimator, with its current parameters, takes scipy.sparse X."""
        return bool(self.accepts_sparse)

    def _check_sparse(self, X, name: str, min_samples: int):
        """A sparse X as canonical CSR, or the refusal naming the methods that take sparse data."""
        if not self.accepts_sparse_input():
            condition = self.sparse_condition if self.accepts_sparse else ""
            raise DataError(sparse_refusal(name, self.id or type(self).__name__, condition))
        return check_sparse_data(X, name=name, min_samples=min_samples)

    def _check_training_data(self, X) -> np.ndarray:
        names = getattr(X, "columns", None)
        self._float32_input = self._keeps_float32(X)
        if is_sparse(X):
            return self._check_sparse(X, "X", self.min_samples)
        arr = check_data(X, min_samples=self.min_samples, allow_nan=self.accepts_missing_values())
        if names is not None:
            self.feature_names_in_ = np.asarray([str(c) for c in names], dtype=object)
        return arr

    def _reset_fitted(self):
        for key in [k for k in vars(self) if k.endswith("_") and not k.startswith("__")]:
            delattr(self, key)

    def _fit(self, X: np.ndarray, y, progress) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    # -- extension ----------------------------------------------------------------
    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "n_features_in_")

    def check_is_fitted(self, what: str = "extend") -> None:
        if not self.is_fitted:
            raise not_fitted(f"This {self.name or type(self).__name__} is not fitted yet: "
                             f"call fit(X) before {what}().")

    def _check_new_data(self, X, what: str = "extend") -> np.ndarray:
        self.check_is_fitted(what)
        if is_sparse(X):
            X = self._check_sparse(X, "X_new", 1)
        else:
            X = check_data(X, name="X_new", min_samples=1, allow_nan=self.accepts_missing_values())
        check_n_features(X, self.n_features_in_, type(self).__name__)
        return X

    def map_chunks(self, func, X: np.ndarray, progress=None, message: str = "Extending") -> np.ndarray:
        """Apply a sample-wise ``func`` to ``X`` in chunks, with progress and cancel."""
        progress = as_progress(progress)
        n = X.shape[0]
        step = max(1, int(self.extend_chunk_size))
        out = []
        with self._blas():
            for start in range(0, n, step):
                progress.checkpoint(start / max(n, 1), f"{message} {start:,}/{n:,} points")
                out.append(np.asarray(func(X[start:start + step])))
        progress.checkpoint(1.0, f"{message} {n:,}/{n:,} points")
        if not out:
            return np.empty((0,), dtype=float)
        return np.concatenate(out, axis=0)

    def extend(self, X, progress=None):
        """Out-of-sample extension of the fitted model to new points (sample-wise)."""
        X_in = X
        X = self._check_new_data(X)
        return self._in_precision_of(self.map_chunks(self._extend, X, progress), X_in)

    def _extend(self, X: np.ndarray):  # pragma: no cover - abstract
        raise NotImplementedError

    # -- results ------------------------------------------------------------------
    def result_summary(self) -> dict[str, Any]:
        """Scalar facts about the fit, for logs and the run table (override to add more)."""
        out = {}
        if hasattr(self, "fit_time_"):
            out["fit_time_s"] = round(self.fit_time_, 4)
        if getattr(self, "random_state_used_", None) is not None:
            out["random_state_used"] = int(self.random_state_used_)
        return out

    def fitted_state(self) -> dict[str, Any]:
        """Fitted attributes (names ending in ``_``) as numpy arrays or JSON scalars.

        Used to save a model without pickle; override together with
        :meth:`restore_state` for algorithms whose state is not arrays.
        """
        state = {}
        for key, value in vars(self).items():
            if not key.endswith("_") or key.startswith("_"):
                continue
            if isinstance(value, np.ndarray) and value.dtype != object:
                state[key] = value
            elif isinstance(value, (int, float, str, bool, np.integer, np.floating)) or value is None:
                state[key] = value.item() if isinstance(value, np.generic) else value
            elif isinstance(value, (list, tuple)) and all(isinstance(v, (int, float, str, bool)) for v in value):
                state[key] = list(value)
        return state

    @classmethod
    def declared_state(cls) -> dict[str, Fitted]:
        """The fitted attributes this algorithm may restore, with their rules: every attribute
        ending in ``_`` its code assigns, plus ``fitted_schema`` (see
        :mod:`manifold_studio.algorithms.state_schema`)."""
        return declared_state(cls)

    def restore_state(self, state: dict[str, Any]):
        """Set the fitted attributes of ``state`` (from :meth:`fitted_state`). Only declared
        fitted attributes are set (:meth:`declared_state`): any other name, such as a parameter,
        a method or ``__dict__``, raises ``ValueError`` naming it."""
        declared = self.declared_state()
        for key in state:
            if spec_for(declared, key) is None:
                raise StateError(f"'{str(key)[:60]}' is not a fitted attribute of "
                                 f"{self.id or type(self).__name__}: it cannot be restored.")
        for key, value in state.items():
            setattr(self, key, value)
        self._p = self.validate_params()
        return self

    # scikit-learn interoperability (pipelines, clone, check_estimator). Only scikit-learn
    # calls __sklearn_tags__, so importing it there adds no runtime dependency.
    def __sklearn_is_fitted__(self):
        return self.is_fitted

    def __sklearn_tags__(self):
        from sklearn.utils import ClassifierTags, InputTags, TargetTags, Tags, TransformerTags

        dtypes = ["float64", "float32"] if self.preserves_float32 else ["float64"]
        return Tags(estimator_type=self._estimator_type,
                    target_tags=TargetTags(required=self.requires_labels),
                    transformer_tags=TransformerTags(preserves_dtype=dtypes) if self.kind == "embedding" else None,
                    classifier_tags=ClassifierTags() if self.kind == "classification" else None,
                    regressor_tags=None,
                    input_tags=InputTags(two_d_array=True, allow_nan=False,
                                         sparse=self.accepts_sparse_input()))


class EmbeddingAlgorithm(OutputNamesMixin, Algorithm):
    """Dimensionality reduction: ``embedding_`` (n, n_components); extend -> coordinates.

    ``get_feature_names_out()`` names the output columns ``<id>0, <id>1, ...`` and
    ``set_output(transform="pandas")`` makes ``transform``/``fit_transform`` return DataFrames
    (:class:`~manifold_studio.algorithms.output.OutputNamesMixin`).
    """

    kind = "embedding"
    _estimator_type = "transformer"

    def fit_transform(self, X, y=None, progress=None):
        return self._wrap_output(self.fit(X, y, progress).embedding_, X)

    def transform(self, X, progress=None):
        return self._wrap_output(self.extend(X, progress), X)


class ClusteringAlgorithm(Algorithm):
    """Clustering: ``labels_`` (n,); extend -> labels of the nearest / most probable cluster."""

    kind = "clustering"
    _estimator_type = "clusterer"

    def fit_predict(self, X, y=None, progress=None):
        return self.fit(X, y, progress).labels_

    def predict(self, X, progress=None):
        return self.extend(X, progress)


class ClassificationAlgorithm(Algorithm):
    """Supervised classification: ``fit(X, y)``; extend -> predicted labels.

    Labels may be of any type; ``classes_`` holds them sorted (as ``np.unique``) and
    ``predict``/``extend`` return the original values. Binary problems treat ``classes_[1]``
    as the +1 class. Subclasses implement::

        _fit_classes(self, X, y_idx, progress)   # y_idx: index into self.classes_ (0..K-1)
        _decision(self, X)   # scores: (m,) for two classes (> 0 means classes_[1]), else (m, K)
        _proba(self, X)      # optional: (m, K) class probabilities

    and get ``predict``, ``decision_function``, ``predict_proba`` (only where ``_proba`` is
    defined and :meth:`_has_proba` says so), ``score`` (accuracy), chunked with progress and
    cancel, sample-wise, with checks that name the problem. A classifier with probabilities
    but no decision function may define only ``_proba``.
    """

    kind = "classification"
    _estimator_type = "classifier"
    requires_labels = True
    one_blas_thread = True

    def _check_labels(self, y, n: int):
        return class_label_vector(y, n)

    def _fit(self, X, y, progress):
        classes, y_idx = encode_labels(y, X.shape[0])
        if classes.dtype == object:  # save without pickle: text labels as a unicode array
            classes = classes.astype(str)
        self.classes_ = classes
        self._fit_classes(X, y_idx, progress)

    def _fit_classes(self, X: np.ndarray, y_idx: np.ndarray, progress) -> None:  # pragma: no cover
        raise NotImplementedError

    @property
    def n_classes_(self) -> int:
        return int(len(self.classes_))

    # -- scores ---------------------------------------------------------------------
    def _has_decision(self) -> bool:
        return type(self)._decision is not ClassificationAlgorithm._decision

    def _has_proba(self) -> bool:
        return type(self)._proba is not ClassificationAlgorithm._proba

    def _decision(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - optional
        raise NotImplementedError

    def _proba(self, X: np.ndarray) -> np.ndarray:  # pragma: no cover - optional
        raise NotImplementedError

    def _extend(self, X):
        if self._has_decision():
            scores = np.asarray(self._decision(X))
            idx = (scores > 0).astype(np.intp) if scores.ndim == 1 else np.argmax(scores, axis=1)
        else:
            idx = np.argmax(np.asarray(self._proba(X)), axis=1)
        return self.classes_[idx]

    def _scores(self, func, X, progress, what: str) -> np.ndarray:
        X_in = X
        X = self._check_new_data(X, what)
        return self._in_precision_of(self.map_chunks(func, X, progress, "Scoring"), X_in)

    @property
    def decision_function(self):
        """Scores: (m,) for two classes (positive means ``classes_[1]``), (m, n_classes) else."""
        if not self._has_decision():
            raise AttributeError(f"{self.name or type(self).__name__} has no decision_function; "
                                 "use predict_proba.")
        return lambda X, progress=None: self._scores(self._decision, X, progress, "decision_function")

    @property
    def predict_proba(self):
        """Class probabilities (m, n_classes), columns in the order of ``classes_``."""
        if not self._has_proba():
            raise AttributeError(f"{self.name or type(self).__name__} has no predict_proba with "
                                 "these parameters.")
        return lambda X, progress=None: self._scores(self._proba, X, progress, "predict_proba")

    @property
    def predict_log_proba(self):
        proba = self.predict_proba
        return lambda X, progress=None: np.log(np.clip(proba(X, progress), 1e-300, None))

    def fit_predict(self, X, y=None, progress=None):
        return self.fit(X, y, progress).predict(X)

    def predict(self, X, progress=None):
        return self.extend(X, progress)

    def score(self, X, y, progress=None) -> float:
        """Accuracy: the fraction of samples whose predicted label equals ``y``."""
        pred = self.predict(X, progress)
        y = class_label_vector(y, pred.shape[0])
        return float(np.mean(pred == y.astype(pred.dtype, copy=False)
                             if pred.dtype.kind == "U" and y.dtype == object else pred == y))

    def training_curve(self):
        """The final :class:`~manifold_studio.algorithms.curves.TrainingCurve`, or None."""
        return None

