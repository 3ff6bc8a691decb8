"""``manifold-studio run``'s fit through the session lifecycle (issue 30: one lifecycle), as the
window's Run and ``Session.run`` fit: the loaded data set (its roles, id column and load options
already applied) goes into a :class:`~manifold_studio.session.model.Session`, ``--prep`` becomes
its preparation chain, :func:`~manifold_studio.session.lifecycle.prepare_fit` records the run
(parameters validated, seed as the form shows it) and builds the spec, and the command runs it.

The spec is the session's own (:meth:`~manifold_studio.session.model.Session.fit_task`: the run's
estimator, its X and y), fitted here, in a worker process when a part is third-party and
``--in-process`` was not given (:func:`~manifold_studio.cli.worker_command.isolated_fit`: a dead
worker says that nothing was written), or with ``--fit-sample`` on a sample and extended to all
(:func:`~manifold_studio.extend.tasks.sample_fit_of`, as the window's Fit on a sample). The
outputs are read from the finished run: its embedding, labels or predictions.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from manifold_studio.cli.run_results import result_first
from manifold_studio.cli.worker_command import NOTHING_WRITTEN, isolated_extend, isolated_fit, nothing_written
from manifold_studio.errors import FitCancelled
from manifold_studio.extend.tasks import sample_fit_of
from manifold_studio.session.fitting import fit_estimator
from manifold_studio.session.isolated_extend import extend_model
from manifold_studio.session.isolated_fit import PluginProcessError
from manifold_studio.session.lifecycle import prepare_fit, run_fit
from manifold_studio.session.model import Session
from manifold_studio.session.records import CANCELLED, Run


@dataclass
class SessionFit:
    """A finished ``run``: its session, the command's result (one row per point of the data set),
    the rows fitted with ``--fit-sample`` (a mask; None without it), whether it ran in a worker
    process (``in_worker``: its extensions run in one too) and the seconds it took."""

    session: Session
    run: Run
    result: np.ndarray
    fitted_mask: np.ndarray | None
    in_worker: bool
    seconds: float

    @property
    def estimator(self):
        return self.run.estimator

    def plot_matrix(self):
        """(the run's prepared data, its caption) for a clustering's ``--plot`` map (the PCA of
        it, as in the window), or None without a chain or for a model in a worker process
        (preparing the data would run the third-party step's code here)."""
        if self.in_worker or not self.run.meta.get("chain"):
            return None
        prepared = self.session.prepared_data(self.run.id)
        return np.asarray(prepared.X, dtype=float), prepared.caption


def fit_in_session(ds, cls, params: dict, steps, *, in_worker: bool, fit_sample: int | None,
                   sample_seed, timed: Callable) -> SessionFit:
    """Fit algorithm ``cls`` with ``params`` behind the chain ``steps`` on the data set ``ds``
    through the session lifecycle; ``timed(label, work)`` runs ``work(progress)`` and returns
    (its value, seconds) (the command's progress line). Errors are raised as the fit raised them
    (the run recorded as failed); a cancelled fit raises FitCancelled."""
    session = Session()
    name = session.add_dataset(ds)
    session.set_chain(steps)  # the current chain, as the window's Preparation panel sets it

    def make_task(run):
        if fit_sample is not None:
            task = sample_fit_of(session, run, fit_sample, sample_seed, in_worker=in_worker,
                                 unaffected=NOTHING_WRITTEN)
            return lambda progress=None: _said(cls.id, lambda: task(progress))
        spec = session.fit_task(run)  # the run's estimator (chain + algorithm), X and y
        if in_worker:
            return lambda progress=None: isolated_fit(spec.estimator, cls.id, ds)(spec.X, spec.y, progress)
        return lambda progress=None: fit_estimator(spec.estimator, spec.X, spec.y, progress)

    job = prepare_fit(session, cls.id, params, name, chain=session.chain, make_task=make_task)
    run, seconds = timed(f"{cls.id} on a sample" if fit_sample is not None else cls.id,
                         lambda progress: run_fit(job, progress))
    if run.status == CANCELLED:
        raise FitCancelled(run.error)
    result = result_first(cls.kind, run.embedding, run.labels)
    if result is None:  # a model that keeps no training result: its extension (in a worker too)
        extend = isolated_extend(cls.id) if in_worker else (
            lambda est, X, progress: extend_model(est, X, progress, isolated=False))
        values, _ = timed(f"{cls.id} extend", lambda progress: extend(run.estimator, ds.X, progress))
        result = np.asarray(values)
    mask = None
    if fit_sample is not None:
        fitted = run.meta.get("fitted_rows")
        mask = np.ones(ds.n_samples, dtype=bool)
        if fitted is not None:
            mask[:] = False
            mask[np.asarray(fitted, dtype=np.intp)] = True
    return SessionFit(session, run, result, mask, in_worker, seconds)


def _said(algorithm_id: str, work):
    """``work()``, a dead worker's message saying that nothing was written."""
    try:
        return work()
    except PluginProcessError as exc:
        raise nothing_written(algorithm_id, exc) from None
