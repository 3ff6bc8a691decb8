"""Pipelines: preparation steps fitted with the model and applied wherever the model is applied.

::

    import manifold_studio as ms
    pipe = ms.make_pipeline("standardize", ("impute", {"strategy": "median"}),
                            ms.get_algorithm("kmeans", n_clusters=3))
    pipe.fit(frame)                 # a DataFrame, a Table, a Dataset or an array (+ columns=)
    pipe.predict(new_frame)         # new columns matched by name, in any order
    pipe.steps_                     # [(name, fitted step), ..., (name, fitted estimator)]

A step is a preprocessor id (its defaults), ``(id, {params})``, or a
:class:`~manifold_studio.algorithms.preprocessing.Preprocessor` instance; the last item may be an
algorithm (an estimator, or an algorithm id). The pipeline has the estimator contract: ``fit``,
``extend`` and, as the final estimator's kind allows, ``transform`` / ``fit_transform``
(embedding, or no final estimator), ``predict`` / ``fit_predict`` (clustering, classification),
``decision_function`` / ``predict_proba`` / ``score`` (classification); ``get_params`` /
``set_params`` with ``<step>__<param>`` names; fitted attributes of the final estimator
(``embedding_``, ``labels_``, ``classes_``, ...) are reachable on the pipeline.

New data are matched to the training columns by name (a DataFrame, a Table or a Dataset; any
order, extra columns ignored); a missing column is refused with a message naming it. A plain
array must have the training columns in the training order. The pipeline is saved and loaded by
the pickle-free model file (:mod:`manifold_studio.files.model_file`).
"""
from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from manifold_studio.algorithms.base import Algorithm
from manifold_studio.algorithms.named_columns import (  # noqa: F401  (frame_to_matrix: public here too)
    as_named_matrix, frame_to_matrix, is_dataset, is_table, match_columns, sparse_float, table_matrix,
)
from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.errors import DataError, InvalidParameterError, not_fitted

__all__ = ["Pipeline", "make_pipeline", "clone_estimator", "frame_to_matrix", "match_columns"]

PIPELINE_ID = "pipeline"

# Where step ids ("standardize", "kmeans") are looked up: a callable returning the plugin host
# (its ``preprocessors``, ``algorithms``, ``get_preprocessor`` and ``algorithm_class``).
# ``algorithms`` is the bottom layer of the contract in pyproject.toml and cannot import
# ``plugins``, so ``manifold_studio.plugins.host`` registers its ``get_host`` here when it is
# imported (``import manifold_studio`` always imports it).
_step_source = None


def register_step_source(source) -> None:
    """Set the callable that returns the plugin host used to resolve step ids."""
    global _step_source
    _step_source = source


def _step_host():
    if _step_source is None:
        raise InvalidParameterError("Step ids cannot be resolved: no plugin host is registered "
                                    "(import manifold_studio first, or pass step objects).")
    return _step_source()


def _resolve_step(item, last: bool):
    if isinstance(item, (Preprocessor, Algorithm)):
        if isinstance(item, Algorithm) and not last:
            raise InvalidParameterError(f"Only the last item of a pipeline can be an algorithm; "
                                        f"{item.id!r} comes before other steps.")
        return item
    params: dict = {}
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], str) and isinstance(item[1], dict):
        item, params = item
    if isinstance(item, str):
        host = _step_host()
        if item in host.preprocessors:
            return host.get_preprocessor(item, **params)
        if last and item in host.algorithms:
            est = host.algorithm_class(item)()
            est.set_params(**params)
            est.validate_params()
            return est
        raise InvalidParameterError(
            f"Unknown preparation step {item!r}: available are {', '.join(sorted(host.preprocessors)) or 'none'}"
            + (" (or an algorithm id as the last item)." if last else "."))
    raise InvalidParameterError(f"A pipeline item must be a step id, (id, {{params}}), a step or an "
                                f"algorithm; got {type(item).__name__}.")


class Pipeline:
    """Preparation steps and an optional final estimator (see the module docstring)."""

    id = PIPELINE_ID
    name = "Pipeline"

    def __init__(self, steps, **params):
        items = [it[1] if isinstance(it, tuple) and len(it) == 2 and isinstance(it[0], str)
                 and isinstance(it[1], (Preprocessor, Algorithm)) else it for it in steps]
        if not items:
            raise InvalidParameterError("A pipeline needs at least one step.")
        resolved = [_resolve_step(it, k == len(items) - 1) for k, it in enumerate(items)]
        named, seen = [], {}
        for obj in resolved:
            seen[obj.id] = seen.get(obj.id, 0) + 1
            named.append((obj.id if seen[obj.id] == 1 else f"{obj.id}_{seen[obj.id]}", obj))
        self.steps = named
        if params:  # <step>__<parameter> values, as get_params() gives them (cloning)
            self.set_params(**params)

    # -- structure --------------------------------------------------------------------
    @property
    def final(self) -> Algorithm | None:
        last = self.steps[-1][1]
        return last if isinstance(last, Algorithm) else None

    @property
    def preparation(self) -> list[tuple[str, Preprocessor]]:
        return [(n, s) for n, s in self.steps if isinstance(s, Preprocessor)]

    @property
    def imputes(self) -> bool:
        """Whether a step fills missing values (``impute``): text in a column that was numeric at
        fit time is then read as missing in new data, for it to fill."""
        return any(getattr(s, "id", "") == "impute" for _, s in self.preparation)

    @property
    def kind(self) -> str:
        return self.final.kind if self.final is not None else "preprocessing"

    @property
    def requires_labels(self) -> bool:
        return bool(self.final is not None and self.final.requires_labels)

    def __repr__(self):
        return f"Pipeline([{', '.join(repr(s) for _, s in self.steps)}])"

    def describe(self) -> str:
        """The chain in one line: ``standardize → impute(strategy='median') → KMeans(n_clusters=3)``."""
        return " → ".join(repr(s) for _, s in self.steps)

    # -- parameters -------------------------------------------------------------------
    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """``steps`` ([(name, step), ...]) and, when ``deep``, every ``<step>__<parameter>``:
        ``Pipeline(**pipe.get_params())`` rebuilds the pipeline with the same parameters."""
        out: dict[str, Any] = {"steps": [(n, type(s)(**s.get_params())) for n, s in self.steps]}
        if deep:
            for name, step in self.steps:
                for k, v in step.get_params().items():
                    out[f"{name}__{k}"] = v
        return out

    def set_params(self, **params):
        if "steps" in params:
            self.steps = Pipeline(params.pop("steps")).steps
        by_name = dict(self.steps)
        for key, value in params.items():
            name, _, param = key.partition("__")
            if name not in by_name or not param:
                raise InvalidParameterError(f"Unknown pipeline parameter {key!r}: use <step>__<parameter> with "
                                            f"a step among {', '.join(by_name)}.")
            by_name[name].set_params(**{param: value})
        return self

    def bind_columns(self, columns, categories=None) -> "Pipeline":
        """Name the columns of a plain training array (and its categorical columns) once, for
        callers that fit on arrays (the window's runs): ``fit(X)`` then means ``fit(X, columns=...)``."""
        self.__dict__["_bound_columns"] = (list(columns), {k: list(v) for k, v in (categories or {}).items()})
        return self

    def result_summary(self) -> dict:
        """The final estimator's summary (empty without one)."""
        final = self.final
        return dict(final.result_summary()) if final is not None and hasattr(final, "result_summary") else {}

    # -- data -------------------------------------------------------------------------
    def _training_matrix(self, X, columns, y):
        if is_dataset(X):
            if y is None:
                y = X.labels
            if X.table is not None:
                names = X.feature_names
                cats = {k: v for k, v in X.table.categories().items() if k in names}
                return X.X, list(names), cats, y
            return X.X, list(X.feature_names or [f"x{j}" for j in range(X.n_features)]), {}, y
        bound = self.__dict__.get("_bound_columns")
        if columns is None and bound is not None and not hasattr(X, "columns") and not is_table(X):
            arr, names, cats = as_named_matrix(X, bound[0], bound[1])
        else:
            arr, names, cats = as_named_matrix(X, columns)
        return arr, names, cats, y

    def _new_matrix(self, X) -> np.ndarray:
        self.check_is_fitted()
        names, cats = self.columns_in_, self.categories_in_
        if is_dataset(X):  # its table's rows it kept (rows with gaps may have been dropped)
            X = (X.X if X.table is None or not getattr(X, "table_features", True)  # (AnnData: obs is no feature table)
                 else X.table if X.table_rows is None else X.table.take(X.table_rows))
        if is_table(X):
            return table_matrix(X, names, cats, "the pipeline", text_as_missing=self.imputes)
        if hasattr(X, "columns") and hasattr(X, "dtypes"):
            return frame_to_matrix(match_columns(X, names, "the pipeline"), cats)[0]
        arr = sparse_float(X) if is_sparse(X) else np.asarray(X, dtype=np.float64)  # counts stay sparse
        if arr.ndim != 2 or arr.shape[1] != len(names):
            raise DataError(f"The new data have {arr.shape[1] if arr.ndim == 2 else arr.shape} columns; the "
                            f"pipeline was fitted on {len(names)} ({', '.join(names)}). Pass a table or a "
                            "DataFrame to match columns by name.")
        return arr

    def input_matrix(self, X) -> np.ndarray:
        """New data as a matrix of the training columns in the training order (a table or a
        DataFrame matched by name, any order; a missing column is refused naming it), before
        the preparation steps."""
        return self._new_matrix(X)

    def prepare(self, X) -> np.ndarray:
        """New data through the fitted preparation steps (columns matched by name)."""
        out = self._new_matrix(X)
        with self._blas():
            for _, step in self.preparation:
                out = step.transform(out)
        return out

    def _blas(self):
        """The final estimator's BLAS hold (a classifier's one thread: the steps' products then
        give the same bits whatever else runs in the process), else nothing."""
        return self.final._blas() if isinstance(self.final, Algorithm) else contextlib.nullcontext()

    # -- estimator contract -----------------------------------------------------------
    def fit(self, X, y=None, progress=None, columns=None):
        """Fit every step in turn, then the final estimator on the prepared data; returns self.
        A Dataset brings its labels as ``y`` unless ``y`` is given."""
        self._fit(X, y, progress, columns)
        return self

    def _fit(self, X, y, progress, columns) -> np.ndarray:
        """Fit; returns the prepared training matrix (not kept: it may be large)."""
        arr, names, cats, y = self._training_matrix(X, columns, y)
        self.__dict__.pop("steps_", None)
        self.columns_in_, self.categories_in_ = list(names), {k: list(v) for k, v in cats.items()}
        with self._blas():
            for _, step in self.preparation:
                step.fit(arr, names, cats)
                arr = step.transform(arr)
                names, cats = step.columns_out_, step.categories_out_
            self.columns_out_ = list(names)
            if self.final is not None:
                self.final.fit(arr, y, progress)
        self.n_features_in_ = len(self.columns_in_)
        self.steps_ = list(self.steps)
        return arr

    @property
    def is_fitted(self) -> bool:
        return hasattr(self, "steps_")

    @property
    def feature_names_in_(self) -> np.ndarray:
        """The training columns, in order (as scikit-learn names them): new data are matched to these."""
        self.check_is_fitted("feature_names_in_")
        return np.asarray(self.columns_in_, dtype=object)

    def check_is_fitted(self, what: str = "extend") -> None:
        if not self.is_fitted:
            raise not_fitted(f"This pipeline is not fitted yet: call fit(X) before {what}().")

    def extend(self, X, progress=None):
        """Out-of-sample extension: the new rows through the fitted steps, then the final
        estimator's ``extend`` (the prepared rows when there is no final estimator)."""
        prepared = self.prepare(X)
        return prepared if self.final is None else self.final.extend(prepared, progress)

    def __getattr__(self, name):
        """Fitted attributes of the final estimator (``embedding_``, ``labels_``, ...) once fitted."""
        if name.endswith("_") and not name.startswith("_") and "steps_" in self.__dict__:
            final = self.__dict__["steps"][-1][1]
            if isinstance(final, Algorithm):
                return getattr(final, name)
        raise AttributeError(f"'Pipeline' object has no attribute {name!r}")

    def transform(self, X, progress=None):
        if self.kind not in ("embedding", "preprocessing"):
            raise AttributeError(f"A pipeline ending in a {self.kind} algorithm has no transform; use predict.")
        return self.extend(X, progress)

    def fit_transform(self, X, y=None, progress=None, columns=None):
        prepared = self._fit(X, y, progress, columns)
        return prepared if self.final is None else self.final.embedding_

    def predict(self, X, progress=None):
        if self.kind not in ("clustering", "classification"):
            raise AttributeError(f"A pipeline ending in a {self.kind} step has no predict; use transform.")
        return self.extend(X, progress)

    def fit_predict(self, X, y=None, progress=None, columns=None):
        prepared = self._fit(X, y, progress, columns)
        if self.kind == "clustering":
            return self.final.labels_
        return self.final.predict(prepared)

    def decision_function(self, X, progress=None):
        return self.final.decision_function(self.prepare(X), progress)

    def predict_proba(self, X, progress=None):
        return self.final.predict_proba(self.prepare(X), progress)

    def score(self, X, y, progress=None) -> float:
        return self.final.score(self.prepare(X), y, progress)

    @classmethod
    def from_fitted(cls, steps: list, columns_in: list[str], categories_in: dict) -> "Pipeline":
        """A fitted pipeline from fitted steps (used when loading a model file)."""
        pipe = cls(steps)
        pipe.columns_in_ = list(columns_in)
        pipe.categories_in_ = {k: list(v) for k, v in categories_in.items()}
        prep = pipe.preparation
        pipe.columns_out_ = list(prep[-1][1].columns_out_) if prep else list(columns_in)
        pipe.n_features_in_ = len(pipe.columns_in_)
        pipe.steps_ = list(pipe.steps)
        return pipe


def make_pipeline(*steps) -> Pipeline:
    """A :class:`Pipeline` of ``steps`` (see the module docstring)."""
    return Pipeline(steps)


def clone_estimator(estimator):
    """A fresh, unfitted estimator of the same class with the same parameters
    (``type(est)(**est.get_params())``); a pipeline keeps the column names bound to it
    (:meth:`Pipeline.bind_columns`), so its copy fits a plain matrix under the same names."""
    fresh = type(estimator)(**estimator.get_params())
    bound = getattr(estimator, "__dict__", {}).get("_bound_columns")
    if bound is not None:
        fresh.bind_columns(*bound)
    return fresh
