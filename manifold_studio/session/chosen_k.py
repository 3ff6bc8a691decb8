"""A chosen k is run state (issue 30, Qt-free): what Choose k's "Run with k" does.

A clustering that keeps its tree (hierarchical: a ``cut`` method and a fitted ``linkage_matrix_``)
is not refitted for another k: the finished run the k was chosen for is CUT into k clusters with
:meth:`~manifold_studio.session.state.AnalysisState.cut` — the command the dendrogram's cut uses —
so its labels, title, CSV export, project, report, script and replay show the k clusters. Any
other method (k-means, a Gaussian mixture, spectral clustering) has no tree to cut: a new run with
the count parameter set to k is fitted through the session's fit path.

- :func:`run_to_cut` — the run a chosen k cuts (None: none can be cut, fit a new one);
- :func:`plan_chosen_k` — what choosing ``k`` does: ``ChosenK(run=..., why=...)``.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.analysis.choose_k import cluster_count_param
from manifold_studio.session.commands import normal_chain

__all__ = ["ChosenK", "plan_chosen_k", "run_to_cut", "can_be_cut"]


@dataclass
class ChosenK:
    """What choosing ``k`` does: cut ``run`` (not None) or fit a new run with ``params``
    (the count parameter set to ``k``); ``why`` says which, in words for the window and log."""

    k: int
    params: dict
    run: object = None
    why: str = ""

    @property
    def cuts(self) -> bool:
        return self.run is not None


def can_be_cut(cls) -> bool:
    """Whether a fitted ``cls`` can be cut into another number of clusters without a refit."""
    return callable(getattr(cls, "cut", None))


def _normalised(cls, params: dict, count: str) -> dict:
    est = cls()
    est.set_params(**(params or {}))
    out = dict(est.validate_params())
    out.pop(count, None)
    return out


def _tree_clusters(run) -> int | None:
    """How many clusters ``run``'s tree can be cut into at most (None: it has no tree)."""
    est = run.estimator
    if est is None or getattr(est, "linkage_matrix_", None) is None:
        return None
    Z = np.asarray(est.linkage_matrix_)
    if getattr(est, "linkage_leaves_", "points") == "clusters":  # a tree over the run's clusters
        return int(np.unique(run.labels).size) if run.labels is not None else None
    return int(Z.shape[0]) + 1


def run_to_cut(session, algorithm_id: str, params: dict, k: int, *, dataset_name: str,
               source_run: int | None = None, chain=()):
    """The finished run of ``algorithm_id`` that choosing ``k`` cuts: fitted on the same input
    (data set ``dataset_name`` through ``chain``, all its rows; or the map of ``source_run``) with
    the same parameters but the number of clusters, whose tree has at least ``k`` leaves. The
    current run first, else the latest such run; None when there is none."""
    cls = session.host.algorithm_class(algorithm_id)
    if not can_be_cut(cls):
        return None
    count = cluster_count_param(cls)
    want = _normalised(cls, params, count)
    want_chain = normal_chain(chain) if source_run is None else []
    runs = [session.current_run, *reversed(list(session.runs.values()))]
    for run in runs:
        if run is None or not run.succeeded or run.algorithm_id != algorithm_id \
                or run.dataset_name != dataset_name or run.source_run != source_run:
            continue
        if source_run is None and (run.rows is not None
                                   or normal_chain(run.meta.get("chain")) != want_chain):
            continue
        mine = {name: v for name, v in run.params.items() if name != count}
        most = _tree_clusters(run)
        if mine == want and most is not None and 1 <= k <= most:
            return run
    return None


def plan_chosen_k(session, algorithm_id: str, params: dict, k: int, *, dataset_name: str,
                  source_run: int | None = None, chain=()) -> ChosenK:
    """What choosing ``k`` for ``algorithm_id`` does (see the module docstring)."""
    cls = session.host.algorithm_class(algorithm_id)
    count = cluster_count_param(cls)
    k = int(k)
    new = {**(params or {}), count: k}
    name = cls.name or algorithm_id
    if not can_be_cut(cls):
        return ChosenK(k, new, None, f"{name} cannot be cut into another number of clusters: a new run "
                                     f"fits it with {count}={k}.")
    run = run_to_cut(session, algorithm_id, params, k, dataset_name=dataset_name, source_run=source_run,
                     chain=chain)
    if run is None:
        return ChosenK(k, new, None, f"No finished {name} run on this input has a tree to cut into {k} "
                                     f"clusters: a new run fits it with {count}={k}.")
    return ChosenK(k, new, run, f"Run #{run.id} ({name}) is cut into {k} clusters (no refit).")
