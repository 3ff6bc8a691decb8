"""A run's preparation chain: the steps fitted with its algorithm (Qt-free). The window's
Preparation panel and scripts hand ``[(step id, {params}), ...]`` to
:meth:`~manifold_studio.session.model.Session.create_run`, which fits
``make_pipeline(*chain, estimator)`` on the data set's named feature columns."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.pipeline import Pipeline, make_pipeline
from manifold_studio.data import Dataset


def dataset_columns(ds: Dataset) -> tuple[list[str], dict[str, list]]:
    """The feature columns of ``ds`` by name and the categories of its categorical features."""
    names = list(ds.feature_names or [f"x{j}" for j in range(ds.n_features)])
    cats = {}
    if ds.table is not None:
        cats = {k: list(v) for k, v in ds.table.categories().items() if k in names}
    return names, cats


def chained_estimator(chain, estimator, ds: Dataset) -> Pipeline:
    """``make_pipeline(*chain, estimator)`` bound to the columns of ``ds`` (so that a plain
    training matrix is fitted under its real column names, and the saved model matches new
    files by name)."""
    pipe = make_pipeline(*[(step_id, dict(params)) for step_id, params in chain], estimator)
    names, cats = dataset_columns(ds)
    pipe.bind_columns(names, cats)
    return pipe


def chain_text(chain) -> str:
    """``standardize → impute(strategy=median)``: a recorded chain in one line."""
    parts = []
    for step_id, params in chain or ():
        args = ", ".join(f"{k}={v}" for k, v in (params or {}).items())
        parts.append(f"{step_id}({args})" if args else str(step_id))
    return " → ".join(parts)


def jsonable_params(params: dict) -> dict:
    """Step parameters as JSON values (tuples become lists, numpy scalars plain numbers)."""
    out = {}
    for k, v in params.items():
        if isinstance(v, np.generic):
            v = v.item()
        elif isinstance(v, tuple):
            v = list(v)
        out[k] = v
    return out
