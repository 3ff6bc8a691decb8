"""The Qt-free session model: data sets, runs, results, history, observers."""
from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

from manifold_studio.algorithms import (
    Choice, ClassificationAlgorithm, ClusteringAlgorithm, EmbeddingAlgorithm, Float, Int,
)
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.data import Dataset, Loader, Sample
from manifold_studio.errors import DataError, InvalidParameterError, UnknownAlgorithmError
from manifold_studio.session.lifecycle import prepare_extension_to
from manifold_studio.hookspecs import hookimpl
from manifold_studio.plugins.host import PluginHost
from manifold_studio.session.records import CANCELLED, DONE, FAILED, QUEUED, RUNNING
from manifold_studio.session.model import Session
from manifold_studio.errors import error_message


class FirstColumns(EmbeddingAlgorithm):
    id = "first_columns"
    name = "First columns"
    help = "Keeps the first k columns (test algorithm)."
    params = (Int("n_components", 2, "how many columns", low=1),
              Choice("mode", "plain", "plain or fail", choices=("plain", "fail")))

    def _fit(self, X, y, progress):
        progress.checkpoint(0.5, "copying")
        if self._p["mode"] == "fail":
            raise DataError("deliberate failure in the test algorithm")
        if self._p["n_components"] > X.shape[1]:
            raise DataError("n_components is larger than the number of columns")
        self.embedding_ = X[:, :self._p["n_components"]].copy()

    def _extend(self, X):
        return X[:, :self._p["n_components"]]


class SignCluster(ClusteringAlgorithm):
    id = "sign_cluster"
    name = "Sign of the first column"
    help = "Two clusters by the sign of column 0 (test algorithm)."
    params = ()

    def _fit(self, X, y, progress):
        self.labels_ = (X[:, 0] > 0).astype(int)

    def _extend(self, X):
        return (X[:, 0] > 0).astype(int)


class Threshold(ClassificationAlgorithm):
    id = "threshold"
    name = "Threshold classifier"
    help = "Predicts the label by a threshold on column 0 (test algorithm)."
    params = (Float("cut", 0.0, "threshold"),)

    def _fit(self, X, y, progress):
        self.classes_ = np.unique(y)

    def _extend(self, X):
        return np.where(X[:, 0] > self._p["cut"], self.classes_[-1], self.classes_[0])


class Waiting(EmbeddingAlgorithm):
    id = "waiting"
    name = "Waits for cancel"
    help = "Loops on checkpoints until cancelled (test algorithm)."
    params = ()

    def _fit(self, X, y, progress):
        import time
        for i in range(10_000):
            progress.checkpoint(i / 10_000, f"step {i}")
            time.sleep(0.001)
        self.embedding_ = X[:, :2]

    def _extend(self, X):
        return X[:, :2]


class Tiny(Sample):
    id = "tiny"
    name = "Tiny"
    description = "Six points in three columns, labelled."
    options = (Int("n_samples", 6, "rows", low=2),)

    def _make(self, n_samples):
        rng = np.random.default_rng(1)
        X = rng.normal(size=(n_samples, 3))
        return Dataset("tiny", X, labels=np.arange(n_samples) % 2, label_name="parity")


class TextLoader(Loader):
    id = "txt_test"
    name = "Whitespace text (test)"
    extensions = (".txt",)

    def _load(self, path, **options):
        try:
            X = np.loadtxt(path, ndmin=2)
        except ValueError as exc:
            raise DataError(f"{path.name}: not a table of numbers ({exc})") from None
        return Dataset(path.stem, X, source=str(path))


class _Plugin:
    @hookimpl
    def register_algorithms(self):
        return [FirstColumns, SignCluster, Threshold, Waiting]

    @hookimpl
    def register_samples(self):
        return [Tiny()]

    @hookimpl
    def register_loaders(self):
        return [TextLoader()]


@pytest.fixture
def host():
    h = PluginHost()
    h.register(_Plugin(), name="session-test-plugin")
    assert not h.failures
    return h


@pytest.fixture
def session(host):
    return Session(host)


def _ds(name="d", n=10, d=4, labels=True):
    X = np.arange(n * d, dtype=float).reshape(n, d) - n * d / 2
    return Dataset(name, X, labels=(np.arange(n) % 3) if labels else None)


def test_session_module_is_qt_free():
    import subprocess

    code = ("import sys, manifold_studio.session.model; "
            "bad = [m for m in sys.modules if m.split('.')[0] in "
            "('PySide6', 'PyQt5', 'PyQt6', 'PySide2', 'pyqtgraph', 'shiboken6')]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_datasets_are_added_with_unique_names_and_never_replaced(session):
    events = []
    session.subscribe(events.append)
    a = session.add_dataset(_ds("d"))
    b = session.add_dataset(_ds("d", n=5))
    assert (a, b) == ("d", "d (2)")
    assert session.datasets["d"].n_samples == 10 and session.datasets["d (2)"].n_samples == 5
    assert session.current_dataset_name == "d (2)"
    kinds = [e.kind for e in events]
    assert kinds.count("dataset_added") == 2 and "current_dataset" in kinds
    session.set_current_dataset("d")
    assert session.current_dataset.n_samples == 10
    # explicit replace keeps the name
    session.add_dataset(_ds("d", n=7), replace=True)
    assert session.datasets["d"].n_samples == 7 and len(session.datasets) == 2
    with pytest.raises(DataError, match="No data set named 'nope'"):
        session.set_current_dataset("nope")


def test_load_sample_and_file_and_a_failed_load_keeps_everything(session, tmp_path):
    ds = session.load("sample:tiny", n_samples=8)
    assert ds.n_samples == 8 and ds.source == "sample:tiny"
    good = tmp_path / "good.txt"
    good.write_text("1 2\n3 4\n5 6\n")
    session.load(str(good))
    assert session.current_dataset_name == "good"
    bad = tmp_path / "bad.txt"
    bad.write_text("1 2\nthree four\n")
    with pytest.raises(DataError, match="not a table of numbers"):
        session.load(str(bad))
    with pytest.raises(DataError):
        session.load(str(tmp_path / "x.unknown"))
    with pytest.raises(DataError, match="Unknown sample"):
        session.load("sample:nope")
    assert list(session.datasets) == ["tiny", "good"]
    assert session.current_dataset_name == "good"
    errors = [e for e in session.history if e.level == "error"]
    assert len(errors) == 3 and "bad.txt" in errors[0].message


def test_synchronous_run_records_results_and_timings(session):
    session.add_dataset(_ds())
    run = session.run("first_columns", n_components=3)
    assert run.status == DONE and run.kind == "embedding"
    assert run.embedding.shape == (10, 3)
    assert run.params == {"n_components": 3, "mode": "plain"}
    assert run.timings["fit_s"] >= 0 and run.timings["duration_s"] >= 0
    assert session.current_run is run and session.latest_result() is run
    assert "fit_time_s" in run.summary
    assert run.n_points == 10 and list(run.point_index) == list(range(10))


def test_failed_run_keeps_previous_results(session):
    session.add_dataset(_ds())
    good = session.run("first_columns", n_components=2)
    with pytest.raises(DataError, match="deliberate failure"):
        session.run("first_columns", mode="fail")
    failed = list(session.runs.values())[-1]
    assert failed.status == FAILED and "deliberate failure" in failed.error
    assert "Traceback" in failed.error_detail
    assert session.current_run is good and good.embedding.shape == (10, 2)
    assert session.latest_result() is good
    assert any(e.level == "error" and e.run_id == failed.id for e in session.history)


def test_invalid_parameters_and_unknown_algorithm_record_nothing(session):
    session.add_dataset(_ds())
    with pytest.raises(InvalidParameterError, match="n_components"):
        session.create_run("first_columns", {"n_components": 0})
    with pytest.raises(InvalidParameterError, match="Unknown parameter"):
        session.create_run("first_columns", {"bogus": 1})
    with pytest.raises(UnknownAlgorithmError, match="Unknown algorithm 'nope'"):
        session.create_run("nope", {})
    assert session.runs == {}


def test_run_without_data_gives_a_clear_message(session):
    with pytest.raises(DataError, match="No data set is loaded"):
        session.run("first_columns")


def test_asynchronous_protocol_in_steps(session):
    session.add_dataset(_ds())
    events = []
    session.subscribe(events.append)
    run = session.create_run("first_columns", {"n_components": 2})
    assert run.status == QUEUED
    task = session.fit_task(run)
    session.start_run(run.id)
    assert run.status == RUNNING
    result = {}
    t = threading.Thread(target=lambda: result.setdefault("out", task(progress=None)))
    t.start()
    t.join()
    session.complete_run(run.id, result["out"])
    assert run.status == DONE and run.embedding.shape == (10, 2)
    kinds = [e.kind for e in events]
    assert kinds[0] == "run_added" and kinds.count("run_updated") == 2 and "current_run" in kinds


def test_cancel_is_recorded_and_keeps_previous(session):
    session.add_dataset(_ds())
    good = session.run("first_columns")
    progress = CallbackProgress()
    progress.cancel()
    run = session.run("waiting", progress=progress)
    assert run.status == CANCELLED and session.current_run is good


def test_cancel_from_another_thread(session):
    session.add_dataset(_ds())
    run = session.create_run("waiting", {})
    task = session.fit_task(run)
    session.start_run(run.id)
    progress = CallbackProgress()
    timer = threading.Timer(0.1, progress.cancel)
    timer.start()
    from manifold_studio.errors import FitCancelled
    with pytest.raises(FitCancelled):
        task(progress=progress)
    session.cancel_run(run.id)
    assert run.status == CANCELLED


def test_clustering_and_classification_runs_have_labels(session):
    session.add_dataset(_ds())
    c = session.run("sign_cluster")
    assert c.kind == "clustering" and c.labels.shape == (10,) and c.embedding is None
    t = session.run("threshold", cut=0.5)
    assert t.kind == "classification" and t.labels.shape == (10,)
    session.add_dataset(_ds("unlabelled", labels=False))
    with pytest.raises(DataError, match="needs labels"):
        session.run("threshold")
    assert session.runs[t.id].status == DONE


def test_fit_on_rows_and_chain_runs(session):
    session.add_dataset(_ds(n=12))
    sub = session.run("first_columns", rows=[0, 2, 4, 6])
    assert sub.embedding.shape == (4, 2) and list(sub.point_index) == [0, 2, 4, 6]
    chained = session.run("sign_cluster", source_run=sub.id)
    assert chained.labels.shape == (4,) and list(chained.point_index) == [0, 2, 4, 6]
    X, y = session.training_data(chained)
    np.testing.assert_array_equal(X, sub.embedding)
    np.testing.assert_array_equal(y, session.dataset().labels[[0, 2, 4, 6]])
    with pytest.raises(DataError, match="indices between"):
        session.create_run("first_columns", {}, rows=[0, 99])


def test_extension_is_recorded(session):
    session.add_dataset(_ds())
    run = session.run("first_columns")
    session.add_dataset(_ds("new", n=3))
    ext = session.extend(run.id, "new")
    assert ext.values.shape == (3, 2) and run.extensions == [ext]
    ext2 = session.extend(run.id, "d", rows=[1, 2])
    np.testing.assert_array_equal(ext2.values, run.embedding[[1, 2]])
    failed = session.create_run("first_columns", {"mode": "fail"})
    with pytest.raises(Exception, match="no fitted model"):
        prepare_extension_to(session, failed.id, np.zeros((1, 4)))  # the one extension spec


def test_removing_a_dataset_keeps_runs_and_other_data(session):
    session.add_dataset(_ds("a"))
    session.add_dataset(_ds("b"))
    run = session.run("first_columns", "a")
    session.remove_dataset("b")
    assert list(session.datasets) == ["a"] and session.current_dataset_name == "a"
    session.remove_dataset("a")
    assert session.current_dataset_name is None
    assert session.runs[run.id].embedding.shape == (10, 2)


def test_remove_run_and_current_run(session):
    session.add_dataset(_ds())
    r1 = session.run("first_columns")
    r2 = session.run("first_columns", n_components=1)
    assert session.current_run is r2
    session.remove_run(r2.id)
    assert session.current_run is r1 and r2.id not in session.runs


def test_a_broken_observer_does_not_break_the_model(session):
    def bad(event):
        if event.kind == "dataset_added":
            raise RuntimeError("observer bug")

    session.subscribe(bad)
    seen = []
    unsubscribe = session.subscribe(seen.append)
    session.add_dataset(_ds())
    assert "d" in session.datasets and seen
    assert any("observer" in e.message for e in session.history if e.level == "error")
    unsubscribe()
    n = len(seen)
    session.log("hello")
    assert len(seen) == n


def test_error_message_formats():
    assert error_message(DataError("bad file")) == "bad file"
    assert error_message(ZeroDivisionError("division by zero")) == "ZeroDivisionError: division by zero"
    assert error_message(RuntimeError()) == "RuntimeError"


def test_a_message_and_its_note_are_two_sentences():
    from manifold_studio.errors import with_note

    said = "Run #2 umap failed: give labels of two classes or set target_weight=0."
    assert with_note(said, "the previous result is still shown") == \
        "Run #2 umap failed: give labels of two classes or set target_weight=0. The previous result is still shown."
    assert with_note("Could not load a.csv: no rows ", "the loaded data is unchanged") == \
        "Could not load a.csv: no rows. The loaded data is unchanged."
    assert with_note("Choosing k failed: cancelled", "") == "Choosing k failed: cancelled"


def test_with_discovered_pca(fresh_host):
    if "pca" not in fresh_host.algorithms:
        pytest.skip("the pca plugin is not installed")
    s = Session(fresh_host)
    rng = np.random.default_rng(0)
    s.add_dataset(Dataset("gauss", rng.normal(size=(50, 5))))
    run = s.run("pca", n_components=2)
    assert run.status == DONE and run.embedding.shape == (50, 2)
    with pytest.raises(DataError, match="n_components"):
        s.run("pca", n_components=9)
    assert s.current_run is run
