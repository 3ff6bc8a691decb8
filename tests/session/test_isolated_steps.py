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


def test_extensions_of_a_third_party_chain_run_in_a_worker_whoever_asks(steps_host, tmp_path, monkeypatch):
    """Session.extend (the window's Extend and hold-out) and Apply a saved model take the one
    isolated extension path: the step segfaults in transform outside the process that fitted it,
    so an extension in this process would end the test run; here each ends only its worker."""
    from manifold_studio.extend.tasks import apply_model_to_file
    from manifold_studio.files.model_file import save_model
    from manifold_studio.session.lifecycle import prepare_extension

    s = _session()
    run = s.run("pca", n_components=2, chain=[("tp_double", {})])
    assert run.meta.get("worker_process") and prepare_extension(s, run.id).isolated
    model = save_model(run.estimator, tmp_path / "m.msmodel")
    (tmp_path / "new.csv").write_text("sepal_length,sepal_width,petal_length,petal_width\n5.1,3.5,1.4,0.2\n")
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")
    with pytest.raises(PluginProcessError, match=r"extension by tp_double → pca \(third-party: tp_double\) "
                                                 r"ended by SIGSEGV.*unaffected"):
        s.extend(run.id)
    assert not run.extensions
    with pytest.raises(PluginProcessError, match="SIGSEGV"):
        apply_model_to_file(str(model), str(tmp_path / "new.csv"))


@pytest.mark.slow  # three worker processes
def test_fit_on_a_sample_in_workers_gives_the_in_process_result(steps_host):
    from manifold_studio.extend.tasks import sample_fit_task

    s = _session()
    X = s.current_dataset.X
    est = ms.make_pipeline("tp_double", ms.get_algorithm("pca", n_components=2))
    iso = sample_fit_task(None, {}, X, 40, random_state=2, estimator=est, isolated=True)
    here = sample_fit_task(None, {}, X, 40, random_state=2,
                           estimator=ms.make_pipeline("tp_double", ms.get_algorithm("pca", n_components=2)))
    assert iso.meta["worker_process"] and iso.meta["fitted_rows"] == here.meta["fitted_rows"]
    np.testing.assert_allclose(iso.embedding, here.embedding, atol=1e-10)
