"""Test & Score, Compare clusterings and a run's evaluation in a worker process when third-party code takes part
(issue 29 item 3, issue 30): the window's comparisons run a learner, a clustering method or a
preparation step from a plugin installed from another distribution the way the command line does
(:mod:`manifold_studio.cli.worker_command`) — in a spawned child, so a plugin that segfaults or
calls ``os._exit`` ends only that child. The comparison comes back as its project record
(:mod:`manifold_studio.project.analysis_records`: JSON-able document and arrays, no pickle of
objects); a child that dies raises :class:`~manifold_studio.session.isolated_fit.PluginProcessError`
naming the signal or the exit code, and the caller keeps what it had. Qt-free::

    if comparison_needs_worker(learners, chain):
        comparison = compare_learners_in_worker(learners, X, y, names=names, progress=p, cv=5)
"""
from __future__ import annotations

import importlib
import sys
import tempfile

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.pipeline import PIPELINE_ID, make_pipeline
from manifold_studio.analysis.compare_clusterings import compare_clusterings
from manifold_studio.analysis.compare_learners import compare_learners
from manifold_studio.analysis.evaluate import evaluate
from manifold_studio.project.analysis_records import (
    clustering_comparison_from_record,
    clustering_comparison_record,
    comparison_from_record,
    comparison_record,
    evaluation_from_record,
    evaluation_record,
)
from manifold_studio.plugins.host import get_host
from manifold_studio.analysis.chain import dataset_columns
from manifold_studio.session.isolated_fit import (
    save_inputs,
    PipeProgress,
    _build,
    report_outcome,
    run_supervised,
)

#: what a worker that died could not harm
UNAFFECTED = "The window, your data and the comparison shown before are unaffected."


def _ids(learner) -> list[str]:
    if isinstance(learner, tuple):
        return [str(learner[0])]
    if getattr(learner, "id", "") == PIPELINE_ID:
        return [str(getattr(step, "id", "")) for _, step in learner.steps]
    return [str(getattr(learner, "id", learner))]


def comparison_needs_worker(learners, chain=(), host=None) -> list[str]:
    """The third-party parts (algorithm and step ids) among ``learners`` (estimators, pipelines,
    ids or ``(id, params)``) and the preparation ``chain``, by ``host`` (default: the global
    plugin host): a comparison with any runs in a worker."""
    ids = [i for learner in learners for i in _ids(learner)] + [str(s) for s, _ in chain or ()]
    host = host or get_host()
    return sorted({i for i in ids if host.is_third_party(i)})


def _class_ref(cls) -> list:
    return [cls.__module__, cls.__qualname__]


def learner_recipe(learner) -> dict:
    """Plain data that rebuilds an unfitted learner in the child: its class (module, name) and
    parameters, and a pipeline's steps with the columns bound to it."""
    if isinstance(learner, tuple):
        cls = get_host().algorithm_class(str(learner[0]))
        return {"cls": _class_ref(cls), "params": dict(learner[1] or {}), "chain": None}
    if getattr(learner, "id", "") != PIPELINE_ID:
        return {"cls": _class_ref(type(learner)), "params": learner.get_params(), "chain": None}
    columns, categories = learner.__dict__.get("_bound_columns") or (None, None)
    final = learner.final
    return {"cls": None if final is None else _class_ref(type(final)),
            "params": {} if final is None else final.get_params(),
            "chain": {"steps": [(step.id, step.get_params()) for _, step in learner.preparation],
                      "columns": None if columns is None else [str(c) for c in columns],
                      "categories": {str(k): list(v) for k, v in (categories or {}).items()}}}


def _import(ref):
    if ref is None:
        return None
    obj = importlib.import_module(ref[0])
    for part in ref[1].split("."):
        obj = getattr(obj, part)
    return obj


def _load(x_path: str, y_path: str | None):
    X = sp.load_npz(x_path) if x_path.endswith(".npz") else np.load(x_path, allow_pickle=False)
    return X, (np.load(y_path, allow_pickle=False) if y_path else None)


# -- Test & Score -------------------------------------------------------------------------------
def _score_child(conn, recipes, x_path, y_path, sys_path, kwargs) -> None:
    sys.path[:] = sys_path

    def work():
        X, y = _load(x_path, y_path)
        learners = [_build(_import(r["cls"]), r["params"], r["chain"]) for r in recipes]
        return comparison_record(compare_learners(learners, X, y, progress=PipeProgress(conn), **kwargs))

    report_outcome(conn, work, "Test & Score")


def _in_worker(child, prefix: str, X, y, args, progress, what: str, command: str):
    """(document, arrays) of ``child(conn, *args(x_path, y_path))`` run in a worker process, X and
    y handed over as files in a temporary folder (``prefix``) removed afterwards."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        x_path, y_path = save_inputs(tmp, X, y)
        return run_supervised(child, args(x_path, y_path), progress, what, command,
                              unaffected=UNAFFECTED, data_errors=True)


def compare_learners_in_worker(learners, X, y, *, progress=None, **kwargs):
    """:func:`~manifold_studio.analysis.compare_learners.compare_learners` of ``learners`` on
    (X, y) in a worker process; the same Comparison (through its project record)."""
    recipes = [learner_recipe(learner) for learner in learners]
    doc, arrays = _in_worker(_score_child, "ms-score-", X, y,
                             lambda x_path, y_path: (recipes, x_path, y_path, list(sys.path), dict(kwargs)),
                             progress, "Test & Score", "manifold-studio test-and-score")
    return comparison_from_record(doc, arrays)


# -- a run's evaluation (the Classification dock) ---------------------------------------------------
def _evaluation_child(conn, recipe, x_path, y_path, sys_path, method, kwargs) -> None:
    sys.path[:] = sys_path

    def work():
        X, y = _load(x_path, y_path)
        est = _build(_import(recipe["cls"]), recipe["params"], recipe["chain"])
        return evaluation_record(evaluate(est, X, y, method, progress=PipeProgress(conn), **kwargs))

    report_outcome(conn, work, "evaluation")


def evaluation_in_worker(estimator, X, y, method: str, *, progress=None, **kwargs):
    """:func:`~manifold_studio.evaluation.evaluate` of a run's unfitted ``estimator`` (its
    classifier, or its pipeline) on (X, y) in a worker process; the same EvaluationResult."""
    doc, arrays = _in_worker(_evaluation_child, "ms-evaluate-", X, y,
                             lambda x_path, y_path: (learner_recipe(estimator), x_path, y_path, list(sys.path),
                                                     str(method), dict(kwargs)),
                             progress, "the evaluation", "manifold-studio evaluate")
    return evaluation_from_record(doc, arrays)


# -- Compare clusterings --------------------------------------------------------------------------
def _cluster_child(conn, methods, chain, x_path, sys_path, k_values, kwargs) -> None:
    sys.path[:] = sys_path

    def work():
        X, _ = _load(x_path, None)
        if chain is not None:  # the preparation chain, fitted on all rows under the data set's columns
            pipe = make_pipeline(*[(str(i), dict(p)) for i, p in chain["steps"]])
            pipe.bind_columns(chain["columns"], chain["categories"])
            X = np.asarray(pipe.fit(X).prepare(X), dtype=float)
        return clustering_comparison_record(compare_clusterings(methods, X, k_values, progress=PipeProgress(conn),
                                                                **kwargs))

    report_outcome(conn, work, "Compare clusterings")


def compare_on_dataset_in_worker(methods, dataset, k_range, *, chain=(), progress=None, **kwargs):
    """:func:`~manifold_studio.analysis.compare_clusterings.compare_on_dataset` in a worker
    process: the chain is fitted there, under the data set's column names, then the methods."""
    steps = None
    if chain:
        names, cats = dataset_columns(dataset)
        steps = {"steps": [(str(s), dict(p or {})) for s, p in chain], "columns": [str(n) for n in names],
                 "categories": {str(k): list(v) for k, v in (cats or {}).items()}}
    doc, arrays = _in_worker(_cluster_child, "ms-clusters-", dataset.X, None,
                             lambda x_path, _y: ([(str(a), dict(p)) for a, p in methods], steps, x_path,
                                                 list(sys.path), [int(k) for k in k_range], dict(kwargs)),
                             progress, "Compare clusterings", "manifold-studio compare-clusterings")
    return clustering_comparison_from_record(doc, arrays)
