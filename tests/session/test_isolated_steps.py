"""The window's path (issue 29): a run whose preparation chain holds a third-party step fits in a
worker process (RunSpec decides, whatever the window asked), so a step that segfaults ends only
its run with a message naming the signal; a well-behaved third-party step gives the result an
in-process fit gives."""
from __future__ import annotations

import os

import numpy as np
import pytest

import manifold_studio as ms
from broken_steps import steps_host  # noqa: F401 (a fixture)
from manifold_studio.session.isolated_fit import PluginProcessError, estimator_ids, third_party_parts
from manifold_studio.session.model import Session




def _session():
    s = Session()
    s.load("sample:iris")
    return s


def test_a_chain_with_a_crashing_third_party_step_fails_only_its_run(steps_host):
    s = _session()
    run = s.create_run("pca", {"n_components": 2}, chain=[("standardize", {}), ("tp_segv", {})])
    spec = s.fit_task(run)           # the window asks for no worker for a chain: RunSpec decides
    assert third_party_parts(estimator_ids(spec.estimator)) == ["tp_segv"] and spec.in_worker
    with pytest.raises(PluginProcessError, match=r"tp_segv.*ended by SIGSEGV"):
        spec()
    assert os.path.exists(os.environ["CLI_STEP_PID_FILE"])   # the step did run (in the worker)


def test_a_chain_with_a_third_party_step_fits_in_a_worker_as_it_would_here(steps_host):
    s = _session()
    run = s.create_run("pca", {"n_components": 2}, chain=[("tp_double", {}), ("standardize", {})])
    outcome = s.fit_task(run)()
    assert outcome.meta.get("worker_process") is True
    assert int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()
    X = s.dataset(run.dataset_name).X
    here = ms.make_pipeline("tp_double", "standardize", ms.get_algorithm("pca", n_components=2)).fit(X)
    np.testing.assert_allclose(outcome.embedding, here.embedding_, atol=1e-10)
    np.testing.assert_allclose(outcome.estimator.extend(X[:5]), here.extend(X[:5]), atol=1e-10)
    built_in = s.create_run("pca", {"n_components": 2}, chain=[("standardize", {})])
    assert not s.fit_task(built_in).in_worker    # built-in steps stay in this process
