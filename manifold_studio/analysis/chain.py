"""A run's preparation chain: the steps fitted with its algorithm (Qt-free). The window's
Preparation panel and scripts hand ``[(step id, {params}), ...]`` to
:meth:`~manifold_studio.session.model.Session.create_run`, which fits
``make_pipeline(*chain, estimator)`` on the data set's named feature columns."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.pipeline import Pipeline, make_pipeline
from manifold_studio.data import Dataset
from manifold_studio.plugins.host import get_host


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


def pipeline_chain(estimator) -> list[tuple[str, dict]]:
    """The preparation steps of a pipeline as ``[(step id, params), ...]`` (empty: not a pipeline,
    or one without steps)."""
    prep = getattr(estimator, "preparation", None) if isinstance(estimator, Pipeline) else None
    return [(type(step).id, dict(step.get_params())) for _, step in prep or ()]


def non_default_params(step_id: str, params: dict, host=None) -> dict:
    """The parameters of step ``step_id`` that differ from its defaults (all of them for a step
    the host does not know)."""
    cls = (host or get_host()).preprocessors.get(step_id)
    defaults = {p.name: p.default for p in cls.params} if cls is not None else {}
    return {k: v for k, v in (params or {}).items() if k not in defaults or defaults[k] != v}


def chain_text(chain, brief: bool = False) -> str:
    """``standardize → impute(strategy=median)``: a recorded chain in one line (``brief``: each
    step with its non-default parameters only)."""
    parts = []
    for step_id, params in chain or ():
        params = jsonable_params(non_default_params(step_id, params) if brief else params or {})
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


def chain_imputes(step_ids) -> bool:
    """Whether a chain (step ids, or a pipeline's ``steps``) fills missing values: then rows with gaps
    are kept as NaN when loading (``missing=keep``) instead of dropped."""
    ids = [s[1] if isinstance(s, tuple) else s for s in step_ids]  # a pipeline's (name, step) pairs
    return any(getattr(s, "id", s) == "impute" for s in ids)
