"""pytest-qt tests that drive the real main window (headless: QT_QPA_PLATFORM=offscreen).

Every window is shut down in the fixture's teardown, which cancels its jobs and joins every
worker thread, so no thread outlives its test.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

from gui_helpers import shown_map_view, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QTimer, QUrl  # noqa: E402
from PySide6.QtGui import QDropEvent  # noqa: E402
from PySide6.QtWidgets import QCheckBox, QComboBox, QDoubleSpinBox, QLineEdit, QSpinBox  # noqa: E402

from manifold_studio.algorithms import (  # noqa: E402
    AnyOf, Bool, Choice, EmbeddingAlgorithm, FitCancelled, Float, Int, IntTuple,
)
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.errors import DataError  # noqa: E402
from manifold_studio.hookspecs import hookimpl  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import CANCELLED, DONE, FAILED

from manifold_studio.gui.error_handling import ExceptionHandler  # noqa: E402
from manifold_studio.gui.param_form import ParamForm  # noqa: E402
from manifold_studio.gui.views.base import ResultView, register_view, unregister_view  # noqa: E402
from manifold_studio.gui.views.map_view import FAST_THRESHOLD  # noqa: E402
from manifold_studio.gui.worker import JobRunner  # noqa: E402


# -- test plugins ---------------------------------------------------------------------------------
class SlowEmbedding(EmbeddingAlgorithm):
    id = "slow_test"
    name = "Slow test algorithm"
    help = "Sleeps between progress checkpoints (proves responsiveness, progress and cancel)."
    params = (Int("steps", 2000, "number of checkpoints", low=1),
              Float("pause", 0.01, "seconds per step", low=0.0, high=1.0))

    def _fit(self, X, y, progress):
        steps, pause = self._p["steps"], self._p["pause"]
        for i in range(steps):
            progress.checkpoint(i / steps, f"step {i + 1} of {steps}")
            time.sleep(pause)
        self.embedding_ = X[:, :2].copy()

    def _extend(self, X):
        return X[:, :2]


class FailingEmbedding(EmbeddingAlgorithm):
    id = "fail_test"
    name = "Failing test algorithm"
    help = "Always fails with a clear message."
    params = ()

    def _fit(self, X, y, progress):
        progress.checkpoint(0.5, "about to fail")
        raise DataError("the test algorithm always fails")

    def _extend(self, X):
        return X


class PartialEmbedding(EmbeddingAlgorithm):
    id = "partial_test"
    name = "Publishes intermediate results"
    help = "Publishes partial embeddings, then waits for cancel."
    params = ()

    def _fit(self, X, y, progress):
        for i in range(1, 2000):
            progress.checkpoint(i / 2000, f"iteration {i}")
            progress.partial(X[:, :2] * (1 + 1 / i))
            time.sleep(0.01)
        self.embedding_ = X[:, :2].copy()

    def _extend(self, X):
        return X[:, :2]


class StoppableEmbedding(EmbeddingAlgorithm):
    id = "stoppable_test"
    name = "Keeps its current map on Cancel"
    help = "An iterative map: Cancel keeps the iterate reached (like t-SNE)."
    params = ()

    def _fit(self, X, y, progress):
        Z = X[:, :2].copy()
        try:
            for i in range(1, 5000):
                progress.checkpoint(i / 5000, f"iteration {i}")
                Z = Z * 0.999
                progress.partial(Z)
                time.sleep(0.005)
        except FitCancelled:
            self._stop_early(f"after {i} of 5000 iterations")
        self.embedding_ = Z

    def _extend(self, X):
        return X[:, :2]


class _GoodPlugin:
    @hookimpl
    def register_algorithms(self):
        return [SlowEmbedding, FailingEmbedding, PartialEmbedding, StoppableEmbedding]


class _BrokenPlugin:
    @hookimpl
    def register_algorithms(self):
        raise RuntimeError("this plugin is broken on purpose")


class _InvalidPlugin:
    @hookimpl
    def register_algorithms(self):
        return "not a list"


@pytest.fixture
def host():
    h = PluginHost().discover()
    h.failures.clear()  # plugins other engineers have not written yet must not leak into tests
    h.register(_GoodPlugin(), name="gui-test-plugin")
    assert not h.failures, h.failures
    for needed in ("pca",):
        if needed not in h.algorithms:
            pytest.skip(f"the {needed} plugin is not installed")
    if "iris" not in h.samples:
        pytest.skip("the sample data plugin is not installed")
    return h


def _load_iris(qtbot, window):
    assert window.data_panel.select_sample("iris")
    with qtbot.waitSignal(window.datasetLoaded, timeout=10_000):
        qtbot.mouseClick(window.data_panel.load_sample_button, Qt.MouseButton.LeftButton)
    return window.session.current_dataset


# -- the window -----------------------------------------------------------------------------------
def test_opens_with_iris_embedded_by_pca(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    run = wait_last_run(qtbot, w)
    assert run.algorithm_id == "pca" and run.embedding.shape == (150, 2)
    qtbot.waitUntil(lambda: w.map_view.point_count() == 150)
    assert w.map_view.coloring.mode == "categorical" and len(w.map_view.coloring.names) == 3
    assert "150 × 4" in w.data_panel.info_label.text() and "labels" in w.data_panel.info_label.text()
    assert w.run_log.rowCount() == 1 and w.run_log.item(0, 4).text() == DONE


def test_pick_sample_pick_pca_change_parameter_run(qtbot, make_window, host):
    w = make_window(host)
    assert not w.run_controls.run_button.isEnabled()  # no data yet
    assert w.data_panel.select_sample("blobs")
    form = w.data_panel.sample_form
    form.editor("n_samples").set_value(321)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        qtbot.mouseClick(w.data_panel.load_sample_button, Qt.MouseButton.LeftButton)
    ds = w.session.current_dataset
    assert ds.n_samples == 321
    assert f"{ds.n_samples:,} × {ds.n_features}" in w.data_panel.info_label.text()

    assert w.algorithm_panel.select_algorithm("pca")
    pform = w.algorithm_panel.form
    n_comp = pform.editor("n_components").input_widget
    assert isinstance(n_comp, QLineEdit)  # AnyOf(count, fraction) -> validated line edit
    n_comp.clear()
    qtbot.keyClicks(n_comp, "1")
    whiten = pform.editor("whiten").input_widget
    assert isinstance(whiten, QCheckBox)
    whiten.setChecked(True)
    assert "Allowed" in n_comp.toolTip() and "fraction" in n_comp.toolTip()  # help as tooltip
    assert w.run_controls.run_button.isEnabled()
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    run = wait_last_run(qtbot, w)
    assert {k: run.params[k] for k in ("n_components", "whiten")} == {"n_components": 1, "whiten": True}
    assert run.embedding.shape == (321, 1)
    qtbot.waitUntil(lambda: w.map_view.point_count() == 321)
    assert np.allclose(w.map_view.xy[:, 1], 0.0)  # one component: drawn on a line
    assert np.isclose(run.embedding.std(ddof=1), 1.0)  # whitened


def test_form_refuses_invalid_values(qtbot, make_window, host):
    w = make_window(host)
    _load_iris(qtbot, w)
    w.algorithm_panel.select_algorithm("pca")
    form = w.algorithm_panel.form
    edit = form.editor("n_components").input_widget
    for bad in ("abc", "0", "1.5", "-2"):
        edit.setText(bad)
        assert not edit.hasAcceptableInput()
        assert "n_components" in form.errors()
        label = form.error_labels["n_components"]
        assert label.isVisible() and "allowed" in label.text()
        assert not w.run_controls.run_button.isEnabled()
        assert "n_components" in w.run_controls.run_button.toolTip()
    # the window refuses to start it by any path
    assert w.run_algorithm() is None and not w.session.runs
    assert "n_components" in w.statusBar().currentMessage()
    edit.setText("0.9")
    assert edit.hasAcceptableInput() and form.is_valid() and w.run_controls.run_button.isEnabled()
    assert not form.error_labels["n_components"].isVisible()


def test_generated_editors_follow_the_constraints(qtbot):
    params = (Int("k", 5, "neighbours", low=1, high=50),
              Float("reg", 0.001, "regularisation", low=0.0, high=1.0),
              Float("gamma", 1.0, "kernel width", low=0.0, low_open=True, log=True),
              Bool("whiten", False, "sphere"),
              Choice("kernel", "rbf", "kernel", choices=("rbf", "poly")),
              IntTuple("layers", (10, 5), "sizes"),
              Int("seed", 0, "seed", allow_none=True),
              AnyOf("n", 2, "count or fraction", options=(Int("n", 2, low=1), Float("n", 0.5, low=0, high=1))))
    form = ParamForm(params)
    qtbot.addWidget(form)
    w = {p.name: form.editor(p.name).input_widget for p in params}
    assert isinstance(w["k"], QSpinBox) and (w["k"].minimum(), w["k"].maximum()) == (1, 50)
    assert isinstance(w["reg"], QDoubleSpinBox) and w["reg"].value() == pytest.approx(0.001)
    assert isinstance(w["gamma"], QLineEdit)  # open bound + log hint
    assert isinstance(w["whiten"], QCheckBox) and isinstance(w["kernel"], QComboBox)
    assert isinstance(w["layers"], QLineEdit) and w["layers"].text() == "10, 5"
    assert isinstance(w["seed"], QLineEdit)
    assert form.values() == {"k": 5, "reg": 0.001, "gamma": 1.0, "whiten": False, "kernel": "rbf",
                             "layers": (10, 5), "seed": 0, "n": 2}
    w["k"].setValue(999)  # the spin box clamps to the allowed range
    assert w["k"].value() == 50
    w["gamma"].setText("0")
    assert "gamma" in form.errors() and "> 0" in form.errors()["gamma"]
    w["gamma"].setText("1e-3")
    w["layers"].setText("64, 32, 0")
    assert "layers" in form.errors()
    w["layers"].setText("64 32")
    w["seed"].setText("none")
    w["kernel"].setCurrentIndex(1)
    assert form.values() == {"k": 50, "reg": 0.001, "gamma": 0.001, "whiten": False, "kernel": "poly",
                             "layers": (64, 32), "seed": None, "n": 2}
    form.reset()
    assert form.values()["kernel"] == "rbf" and form.values()["layers"] == (10, 5)


def test_slow_fit_keeps_window_responsive_shows_progress_and_cancels_fast(qtbot, make_window, host):
    w = make_window(host)
    _load_iris(qtbot, w)
    w.algorithm_panel.select_algorithm("pca")
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    pca_run = wait_last_run(qtbot, w)

    w.algorithm_panel.select_algorithm("slow_test")
    w.algorithm_panel.form.editor("steps").set_value(5000)  # ~50 s if never cancelled
    ticks = []
    timer = QTimer()
    timer.timeout.connect(lambda: ticks.append(time.monotonic()))
    timer.start(20)
    try:
        qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
        slow = list(w.session.runs.values())[-1]
        assert slow.algorithm_id == "slow_test" and slow.status == "running"
        assert not w.run_controls.run_button.isEnabled() and w.run_controls.cancel_button.isEnabled()
        qtbot.waitUntil(lambda: w.run_controls.progress.value() > 0
                        and "step" in w.run_controls.message.text(), timeout=5000)
        n0 = len(ticks)
        qtbot.wait(600)
        # the event loop kept running while the fit computes: ~30 ticks expected at 20 ms
        assert len(ticks) - n0 >= 10
        gaps = np.diff(ticks[n0:])
        assert gaps.max() < 0.4
        assert slow.status == "running"
        qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)
        # the fit stops at its next checkpoint, long before its 20 s of work are done (generous
        # timeout: a loaded 2-core machine may be slow to schedule the worker)
        qtbot.waitUntil(lambda: slow.status == CANCELLED, timeout=10_000)
        assert slow.embedding is None  # stopped, not finished
    finally:
        timer.stop()
    qtbot.waitUntil(lambda: not w.busy and not w.jobs.jobs, timeout=2000)
    assert "cancelled" in w.run_controls.progress.format()
    # the earlier result is still shown
    assert w.session.current_run is pca_run and w.map_view.run is pca_run
    assert w.map_view.point_count() == 150
    assert w.run_controls.run_button.isEnabled()


def test_failed_run_is_reported_and_keeps_the_previous_result(qtbot, make_window, host):
    w = make_window(host)
    _load_iris(qtbot, w)
    good = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    bad = w.run_algorithm("fail_test", {})
    wait_last_run(qtbot, w, FAILED)
    assert bad.status == FAILED and "always fails" in bad.error
    assert "always fails" in w.statusBar().currentMessage()
    assert "always fails" in w.message_log.toPlainText()
    assert w.session.current_run is good and w.map_view.point_count() == 150
    row = w.run_log.row_of(bad.id)
    assert w.run_log.item(row, 4).text() == FAILED and "always fails" in w.run_log.item(row, 6).text()
    # too many components: the algorithm's clear message, the result kept
    over = w.run_algorithm("pca", {"n_components": 5})
    wait_last_run(qtbot, w, FAILED)
    assert "n_components" in over.error and "n_components" in w.statusBar().currentMessage()
    assert w.session.current_run is good
    said = w.statusBar().currentMessage()
    assert said.endswith("= 4 (the smaller of the numbers of samples and features). The previous result is still shown.")


def test_broken_plugins_do_not_stop_the_window_and_are_reported(qtbot, make_window, host):
    host.register(_BrokenPlugin(), name="broken-test-plugin")
    host.register(_InvalidPlugin(), name="invalid-test-plugin")
    assert len(host.failures) == 2
    w = make_window(host)
    qtbot.waitUntil(lambda: w.plugin_failure_box is not None and w.plugin_failure_box.isVisible(),
                    timeout=3000)
    text = w.plugin_failure_box.informativeText()
    assert "broken-test-plugin" in text and "invalid-test-plugin" in text
    assert "broken on purpose" in w.message_log.toPlainText()
    assert w.algorithm_panel.select_algorithm("pca") and w.algorithm_panel.select_algorithm("slow_test")
    _load_iris(qtbot, w)
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)


def test_bad_file_shows_an_error_and_keeps_the_loaded_data(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    w.ask_loader_options = False
    iris = _load_iris(qtbot, w)
    w.run_algorithm("pca", {})
    run = wait_last_run(qtbot, w)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n1,2,3\n4,5\n6,7,8,9\n")
    with qtbot.waitSignal(w.loadFailed, timeout=10_000) as blocker:
        w.open_file(bad)
    assert blocker.args[0]
    assert "bad.csv" in w.statusBar().currentMessage()
    assert w.error_dialogs and w.error_dialogs[-1].isVisible()
    assert list(w.session.datasets) == [iris.name] and w.session.current_dataset is iris
    assert w.session.current_run is run and w.map_view.point_count() == 150
    # unknown extension
    other = tmp_path / "notes.xyz"
    other.write_text("hello")
    with qtbot.waitSignal(w.loadFailed, timeout=2000):
        w.open_file(other)
    assert "No loader" in w.statusBar().currentMessage()
    # a dropped bad file gets the same treatment
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(bad))])
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(w.loadFailed, timeout=10_000):
        w.dropEvent(event)
    assert list(w.session.datasets) == [iris.name]
    assert w.run_controls.run_button.isEnabled()


def test_dropping_a_file_loads_it(qtbot, make_window, host, tmp_path):
    if not any(".npy" in loader.extensions for loader in host.loaders.values()):
        pytest.skip("no .npy loader installed")
    w = make_window(host)
    w.ask_loader_options = False
    path = tmp_path / "points.npy"
    np.save(path, np.random.default_rng(0).normal(size=(40, 3)))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(50, 50), Qt.DropAction.CopyAction, mime, Qt.MouseButton.NoButton,
                       Qt.KeyboardModifier.NoModifier)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        w.dropEvent(event)
    assert w.session.current_dataset.n_samples == 40
    assert "40 × 3" in w.data_panel.info_label.text() and "no labels" in w.data_panel.info_label.text()


def test_hover_shows_point_index_and_label(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    run = wait_last_run(qtbot, w)
    view = w.map_view
    qtbot.waitUntil(lambda: view.point_count() == 150)
    qtbot.wait(50)
    x, y = run.embedding[120, :2]
    i = view.hover_at(float(x), float(y))
    assert i >= 0
    row = int(view.rows[i])
    assert np.allclose(run.embedding[row, :2], (x, y))  # the nearest point is the one at (x, y)
    label = str(w.session.current_dataset.labels[row])
    assert f"point {row}" in view.hover_label.text() and label in view.hover_label.text()
    far = view.hover_at(float(x) + 1e6, float(y) + 1e6)
    assert far == -1 and view.hover_label.text() == ""


def test_large_maps_use_the_fast_path_and_continuous_colours(qtbot):
    view, rng = shown_map_view(qtbot, 600, 400)
    n = FAST_THRESHOLD + 50_000
    xy = rng.normal(size=(n, 2))
    view.set_points(xy, data_labels=xy[:, 0], label_name="x")
    assert view.uses_fast_path and view.point_count() == n
    assert view.coloring.mode == "continuous" and view._colorbar is not None
    start = time.perf_counter()
    image = view.grab()
    assert not image.isNull() and time.perf_counter() - start < 5
    view.hover_at(float(xy[5, 0]), float(xy[5, 1]))
    assert "point" in view.hover_label.text()
    view.set_points(xy[:500], data_labels=np.array(["a", "b"] * 250))
    assert not view.uses_fast_path and view.point_count() == 500
    assert view.coloring.mode == "categorical" and view.coloring.names == ["a", "b"]


def test_unexpected_exceptions_are_shown_not_fatal(qtbot, make_window, host):
    w = make_window(host, dialogs=False)
    handler = ExceptionHandler(w)  # what install_excepthook puts in sys.excepthook
    try:
        raise ZeroDivisionError("division by zero in a slot")
    except ZeroDivisionError as exc:
        handler(type(exc), exc, exc.__traceback__)
    qtbot.waitUntil(lambda: "division by zero" in w.statusBar().currentMessage(), timeout=2000)
    entry = w.session.history[-1]
    assert entry.level == "error" and "Traceback" in entry.detail


def test_job_runner_runs_any_callable(qtbot):
    runner = JobRunner()
    try:
        def work(a, b, progress=None):
            progress.checkpoint(0.5, "half")
            progress.partial("partial!")
            return a + b

        job = runner.start(work, 2, 3, title="add")
        partials = []
        job.partial.connect(partials.append)
        with qtbot.waitSignal(job.succeeded, timeout=5000) as blocker:
            pass
        assert blocker.args == [5] and job.state == "done"
        qtbot.waitUntil(lambda: partials == ["partial!"], timeout=2000)

        def boom(progress=None):
            raise ValueError("nope")

        job = runner.start(boom)
        with qtbot.waitSignal(job.failed, timeout=5000) as blocker:
            pass
        assert blocker.args[0] == "ValueError: nope" and "Traceback" in blocker.args[1]
    finally:
        assert runner.shutdown()


def test_registered_views_get_docks_and_the_current_run(qtbot, make_window, host):
    shown = []

    @register_view
    class CountView(ResultView):
        view_id = "test_count"
        title = "Count"
        area = "bottom"

        def show_run(self, run, dataset):
            super().show_run(run, dataset)
            shown.append(run)

    try:
        w = make_window(host, initial_sample="iris")
        run = wait_last_run(qtbot, w)
        assert "view:test_count" in w.docks and isinstance(w.views["test_count"], CountView)
        qtbot.waitUntil(lambda: run in shown)
    finally:
        unregister_view("test_count")


def test_selecting_a_run_in_the_log_shows_it(qtbot, make_window, host):
    w = make_window(host)
    _load_iris(qtbot, w)
    first = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    second = w.run_algorithm("pca", {"n_components": 1})
    wait_last_run(qtbot, w)
    assert w.map_view.run is second
    w.run_log.selectRow(w.run_log.row_of(first.id))
    assert w.session.current_run is first and w.map_view.run is first
    assert not np.allclose(w.map_view.xy[:, 1], 0)


def test_window_without_any_plugin_still_opens(qtbot, make_window):
    w = make_window(PluginHost())
    assert not w.run_controls.run_button.isEnabled()
    assert "Load a data set" in w.run_controls.run_button.toolTip()
    w.data_panel.load_selected_sample()  # nothing to load: a message, no crash
    assert w.map_view.point_count() == 0


def test_session_data_is_shared_with_scripts(qtbot, make_window, host):
    from manifold_studio.session.model import Session

    s = Session(host)
    s.add_dataset(Dataset("mine", np.random.default_rng(1).normal(size=(30, 4)), labels=np.arange(30) % 2))
    w = make_window(host, session=s)
    assert w.data_panel.dataset_combo.currentText() == "mine"
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    assert s.current_run.embedding.shape == (30, 2) and w.map_view.point_count() == 30


def test_clustering_run_is_drawn_on_the_latest_map_coloured_by_cluster(qtbot, make_window, host):
    if "kmeans" not in host.algorithms:
        pytest.skip("the kmeans plugin is not installed")
    w = make_window(host, initial_sample="iris")
    pca = wait_last_run(qtbot, w)
    km = w.run_algorithm("kmeans", {"n_clusters": 3})
    wait_last_run(qtbot, w)
    assert km.kind == "clustering" and km.labels.shape == (150,)
    view = w.map_view
    assert view.run is km and np.allclose(view.xy, pca.embedding[:, :2])
    assert f"run #{pca.id}" in view.title_label.text()
    assert view.color_combo.currentData() == "run" and len(view.coloring.names) == 3
    view.color_combo.setCurrentIndex(view.color_combo.findData("data"))
    assert view.coloring.names == ["setosa", "versicolor", "virginica"]
    i = view.hover_at(*pca.embedding[0, :2])
    assert "cluster/class" in view.hover_label.text() and i >= 0


def test_extended_points_are_drawn_over_the_map(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    run = wait_last_run(qtbot, w)
    w.session.extend(run.id, rows=np.arange(10))
    qtbot.waitUntil(lambda: len(w.map_view._overlays) == 1)
    overlay = w.map_view._overlays[0]
    assert len(overlay.data) == 10 and w.map_view.point_count() == 150
    assert w.run_log.item(w.run_log.row_of(run.id), 6).text().endswith("1 extension(s)")


def test_intermediate_results_are_previewed_and_dropped_on_cancel(qtbot, make_window, host):
    w = make_window(host, initial_sample="iris")
    pca = wait_last_run(qtbot, w)
    run = w.run_algorithm("partial_test", {})
    qtbot.waitUntil(lambda: "intermediate" in w.map_view.title_label.text(), timeout=5000)
    assert w.map_view.point_count() == 150 and w.session.current_run is pca
    w.cancel_jobs()
    qtbot.waitUntil(lambda: run.status == CANCELLED, timeout=2000)
    assert w.map_view.run is pca and np.allclose(w.map_view.xy, pca.embedding[:, :2])
    assert "intermediate" not in w.map_view.title_label.text()


def test_loader_options_use_the_generated_form(qtbot, host, tmp_path):
    from manifold_studio.gui.data_panel import LoaderOptionsDialog

    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n1,2,x\n3,4,y\n")
    loader = host.loader_for(path)
    if not loader.options:
        pytest.skip("the CSV loader has no options")
    dlg = LoaderOptionsDialog(loader, path)
    qtbot.addWidget(dlg)
    names = [p.name for p in loader.options]
    assert list(dlg.form.editors) == names
    defaults = dlg.form.values()
    assert set(defaults) == set(names)
    if "label_column" in names:
        dlg.form.editor("label_column").set_value("label")
        ds = loader.load(path, **dlg.form.values())
        assert ds.has_labels and ds.n_features == 2


def test_app_main_saves_a_screenshot_and_exits(qtbot, tmp_path):
    from manifold_studio.gui.app import main

    out = tmp_path / "shot.png"
    code = main(["--screenshot", str(out), "--size", "900x600", "--screenshot-timeout", "30"])
    assert code == 0 and out.exists() and out.stat().st_size > 10_000
    import sys
    assert type(sys.excepthook).__name__ != "ExceptionHandler"  # uninstalled on exit


def test_switching_and_removing_data_sets_in_the_panel(qtbot, make_window, host):
    w = make_window(host)
    iris = _load_iris(qtbot, w)
    assert w.data_panel.select_sample("moons")
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        w.data_panel.load_selected_sample()
    moons = w.session.current_dataset
    combo = w.data_panel.dataset_combo
    assert [combo.itemText(i) for i in range(combo.count())] == [iris.name, moons.name]
    combo.setCurrentIndex(0)
    assert w.session.current_dataset is iris and "150 × 4" in w.data_panel.info_label.text()
    run = w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    assert run.dataset_name == iris.name
    qtbot.mouseClick(w.data_panel.remove_button, Qt.MouseButton.LeftButton)
    assert list(w.session.datasets) == [moons.name] and combo.count() == 1
    assert w.session.runs[run.id].embedding.shape == (150, 2)  # runs are kept
    assert w.map_view.point_count() == 150


def test_cancel_keeps_the_result_of_a_method_that_can_stop_early(qtbot, make_window, host):
    w = make_window(host)
    _load_iris(qtbot, w)
    w.run_algorithm("stoppable_test", {})
    run = list(w.session.runs.values())[-1]
    qtbot.waitUntil(lambda: w.run_controls.progress.value() > 0, timeout=5000)
    qtbot.wait(200)
    qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: run.status == "done", timeout=3000)
    assert run.meta["stopped_early"] and run.estimator.stopped_early_
    assert run.embedding.shape == (150, 2)
    assert w.run_log.item(w.run_log.rowCount() - 1, 4).text() == "stopped early"
    assert "stopped early" in w.map_view.title_label.text()
    assert "Stopped early on Cancel: after" in w.message_log.toPlainText()


def test_one_path_from_click_to_result(qtbot, make_window, host, monkeypatch):
    """A fit started in the window looks its algorithm class up once and builds one estimator:
    the run spec the session hands to the worker holds the estimator create_run validated."""
    from manifold_studio.session.run_spec import RunSpec

    w = make_window(host)
    _load_iris(qtbot, w)
    lookups, built = [], []
    real_lookup = type(host).algorithm_class
    monkeypatch.setattr(type(host), "algorithm_class",
                        lambda self, algorithm_id: lookups.append(algorithm_id) or real_lookup(self, algorithm_id))
    pca_cls = real_lookup(host, "pca")
    real_init = pca_cls.__init__

    def counting_init(self, *args, **kwargs):
        built.append(self)
        real_init(self, *args, **kwargs)

    monkeypatch.setattr(pca_cls, "__init__", counting_init)
    specs = []
    real_fit_task = w.session.fit_task
    monkeypatch.setattr(w.session, "fit_task", lambda run, **kw: specs.append(real_fit_task(run, **kw)) or specs[-1])
    run = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    assert lookups == ["pca"]
    assert len(built) == 1 and isinstance(specs[0], RunSpec) and specs[0].estimator is built[0]
    assert run.estimator is built[0] and run.embedding.shape == (150, 2)


def test_the_window_reports_one_time_per_run(qtbot, make_window, host):
    """The run panel, the status bar and the Runs table give the same time for a run (they
    gave 0.11 s and 0.03 s for the same run)."""
    w = make_window(host)
    _load_iris(qtbot, w)
    run = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    qtbot.waitUntil(lambda: not w.busy)
    shown = f"{run.timings['duration_s']:.2f} s"
    assert shown in w.run_controls.message.text(), w.run_controls.message.text()
    assert shown in w.statusBar().currentMessage()
    row = w.run_log.row_of(run.id)
    assert w.run_log.item(row, 5).text() == f"{run.timings['duration_s']:.2f}"
