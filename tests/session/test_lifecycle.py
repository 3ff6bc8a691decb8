"""One lifecycle (issue 30, item 2), without Qt: the specs the session creates for fitting,
extending and previewing, which the window runs on workers and ``Session.run`` / ``Session.extend``
run here."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.data import Dataset
from manifold_studio.errors import DataError, FitCancelled, ManifoldStudioError
from manifold_studio.plugins.host import PluginHost
from manifold_studio.session.lifecycle import prepare_extension, prepare_fit, preview_of, run_fit
from manifold_studio.session.model import Session
from manifold_studio.session.records import CANCELLED, DONE, FAILED


@pytest.fixture(scope="module")
def host():
    h = PluginHost().discover()
    missing = [a for a in ("pca", "perceptron") if a not in h.algorithms] + \
        [p for p in ("standardize",) if p not in h.preprocessors]
    if missing:
        pytest.skip(f"plugins not installed: {missing}")
    return h


def _session(host) -> Session:
    rng = np.random.default_rng(0)
    s = Session(host)
    X = rng.normal(size=(50, 5)) * np.array([1.0, 10.0, 100.0, 0.1, 3.0])
    s.add_dataset(Dataset("dense", X, labels=(X[:, 0] > 0).astype(int), label_name="class"))
    S = sp.random(40, 12, density=0.3, random_state=1, format="csr")
    s.add_dataset(Dataset("sparse", S), make_current=False)
    s.add_dataset(Dataset("sparse_new", sp.random(9, 12, density=0.3, random_state=2, format="csr")),
                  make_current=False)
    return s


def test_the_window_spec_and_session_run_give_the_same_run(host):
    s = _session(host)
    by_script = s.run("pca", "dense", n_components=2)
    job = prepare_fit(s, "pca", {"n_components": 2}, "dense")
    assert job.run.status == "queued" and not job.failed
    job.start()
    outcome = job.spec(None)  # what the window's worker thread calls
    by_window = job.finish(outcome)
    assert by_window.status == DONE and by_window.id != by_script.id
    np.testing.assert_allclose(by_window.embedding, by_script.embedding)


def test_a_chained_spec_fits_the_chain(host):
    s = _session(host)
    chained = run_fit(prepare_fit(s, "pca", {"n_components": 2}, "dense", chain=[("standardize", {})]))
    X = s.dataset("dense").X
    Z = (X - X.mean(axis=0)) / X.std(axis=0)
    s.add_dataset(Dataset("standardized", Z))
    plain = s.run("pca", "standardized", n_components=2)
    assert chained.meta["chain"] == [["standardize", {}]]
    # the same subspace (PCA's signs are a convention of each fit)
    np.testing.assert_allclose(np.abs(chained.embedding), np.abs(plain.embedding), atol=1e-8)


def test_a_spec_that_cannot_be_built_is_recorded_failed_and_bad_input_records_nothing(host):
    s = _session(host)
    s.add_dataset(Dataset("nolabels", np.ones((10, 3)) + np.arange(30).reshape(10, 3)))
    job = prepare_fit(s, "perceptron", {}, "nolabels")
    assert job.failed and job.run.status == FAILED and "needs labels" in job.run.error
    with pytest.raises(DataError):
        run_fit(job)
    n = len(s.runs)
    with pytest.raises(DataError):
        prepare_fit(s, "pca", {}, "dense", rows=[0, 999])
    assert len(s.runs) == n


def test_a_cancelled_spec_is_recorded_cancelled(host):
    s = _session(host)
    job = prepare_fit(s, "pca", {}, "dense")

    def cancelled(progress=None):
        raise FitCancelled("stop")

    job.spec = cancelled
    assert run_fit(job).status == CANCELLED


def test_sparse_data_extends_sparse_through_the_one_path(host):
    s = _session(host)
    run = s.run("pca", "sparse", n_components=2)
    spec = prepare_extension(s, run.id, "sparse_new")
    assert sp.issparse(spec.X) and spec.X.shape == (9, 12)  # never densified on the way
    ext = s.extend(run.id, "sparse_new")
    expected = run.estimator.extend(s.dataset("sparse_new").X.toarray())
    np.testing.assert_allclose(ext.values, expected, atol=1e-10)
    rows = np.array([1, 4, 7])
    part = s.extend(run.id, "sparse_new", rows=rows)
    np.testing.assert_allclose(part.values, expected[rows], atol=1e-10)
    assert [e.rows for e in run.extensions][0] is None and list(part.rows) == [1, 4, 7]


def test_extension_bad_input_is_said(host):
    s = _session(host)
    run = s.run("pca", "dense", n_components=2)
    with pytest.raises(DataError, match="12 column"):
        s.extend(run.id, "sparse_new")
    with pytest.raises(DataError, match="between 0 and 49"):
        prepare_extension(s, run.id, "dense", rows=[3, 50])
    queued = s.create_run("pca", {}, "dense")
    with pytest.raises(ManifoldStudioError, match="no fitted model"):
        prepare_extension(s, queued.id, "dense")


def test_preview_of_says_what_a_partial_result_shows(host):
    s = _session(host)
    run = s.create_run("pca", {}, "dense", rows=np.arange(20))
    s.start_run(run.id)
    Y = np.zeros((20, 2))
    p = preview_of(s, run.id, Y)
    assert p.kind == "map" and p.value is Y and list(p.rows) == list(range(20))
    np.testing.assert_array_equal(p.labels, s.dataset("dense").labels[:20])
    assert preview_of(s, run.id, np.zeros((50, 2))) is None  # not the run's points
    assert preview_of(s, run.id, {"centers": 1}) is None       # nothing a view draws
    step = preview_of(s, run.id, {"labels": np.arange(20) % 3, "iteration": 2})  # a k-means step
    assert step.kind == "labels" and list(step.value) == list(np.arange(20) % 3) and len(step.rows) == 20
    assert preview_of(s, run.id, {"labels": np.zeros(7, dtype=int)}) is None
    curve = TrainingCurve("loss", np.arange(2), {"loss": np.array([1.0, 0.5])})
    assert preview_of(s, run.id, curve).kind == "curve"
    s.cancel_run(run.id)
    assert preview_of(s, run.id, Y) is None  # the run ended: a late partial is dropped
