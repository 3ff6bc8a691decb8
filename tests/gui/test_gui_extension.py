"""pytest-qt tests of the out-of-sample GUI (issue 3, "In the GUI"), driving the real main window:
Extend (held-out split, another data set, a file), fit on a sample, the extension quality report,
the eigenvalue spectrum, cancel and bad input. Headless (QT_QPA_PLATFORM=offscreen); every
window is shut down in teardown, which cancels its jobs and joins every worker thread.
"""
from __future__ import annotations

import time

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.algorithms import EmbeddingAlgorithm, Float  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.hookspecs import hookimpl  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402
from manifold_studio.session.records import DONE
from manifold_studio.session.model import Session

from manifold_studio.extend.tasks import holdout_split, sample_fit_task  # noqa: E402
from manifold_studio.gui.views.map_layout import EXTENDED_SYMBOL  # noqa: E402


class SlowExtendEmbedding(EmbeddingAlgorithm):
    """Fits at once; extends one point per chunk, sleeping, so an extension can be cancelled."""

    id = "slow_extend_test"
    name = "Slow extension (test)"
    help = "Instant fit, slow sample-wise extension."
    params = (Float("pause", 0.01, "seconds per extended point", low=0.0, high=1.0),)
    extend_chunk_size = 1

    def _fit(self, X, y, progress):
        self.embedding_ = X[:, :2].copy()

    def _extend(self, X):
        time.sleep(self._p["pause"])
        return X[:, :2]


class _TestPlugin:
    @hookimpl
    def register_algorithms(self):
        return [SlowExtendEmbedding]

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    h = PluginHost().discover()
    h.failures.clear()  # plugins other engineers have not finished must not leak into tests
    h.register(_TestPlugin(), name="gui-extension-test-plugin")
    for needed in ("isomap", "kernel_pca"):
        if needed not in h.algorithms:
            pytest.skip(f"the {needed} plugin is not installed")
    return h


def _roll(n=300, seed=0):
    """A small swiss roll (fast to fit) with the roll parameter as a continuous label."""
    rng = np.random.default_rng(seed)
    t = 1.5 * np.pi * (1 + 2 * rng.random(n))
    X = np.column_stack([t * np.cos(t), 10 * rng.random(n), t * np.sin(t)])
    return Dataset("roll", X, labels=t, label_name="t")


def _session(host, *datasets):
    s = Session(host)
    for ds in datasets:
        s.add_dataset(ds)
    return s


def _wait_done(qtbot, window, run, timeout=20_000):
    qtbot.waitUntil(lambda: run.finished, timeout=timeout)
    assert run.status == DONE, run.error
    return run


def _wait_idle(qtbot, window, timeout=20_000):
    qtbot.waitUntil(lambda: not window.busy and not window.jobs.active, timeout=timeout)


# -- Extend -------------------------------------------------------------------------------------

def test_holdout_split_is_reproducible_and_disjoint():
    train, held = holdout_split(100, 0.25, seed=3)
    assert held.size == 25 and train.size == 75
    assert not np.intersect1d(train, held).size and np.array_equal(np.union1d(train, held), np.arange(100))
    again = holdout_split(100, 0.25, seed=3)
    assert np.array_equal(again[1], held)


def test_extend_a_held_out_split_draws_it_with_a_distinct_marker(qtbot, make_window, host):
    ds = _roll(300)
    w = make_window(host, _session(host, ds))
    panel = w.views["extend"]
    w.algorithm_panel.select_algorithm("isomap")
    panel.holdout_fraction.setValue(20.0)
    panel.holdout_seed.setValue(7)
    with qtbot.waitSignal(panel.extended, timeout=30_000) as blocker:
        qtbot.mouseClick(panel.holdout_button, Qt.MouseButton.LeftButton)
    run = w.session.current_run
    assert run.algorithm_id == "isomap" and run.status == DONE
    train, held = holdout_split(300, 0.2, 7)
    assert np.array_equal(run.rows, train) and run.embedding.shape == (240, 2)
    ext = blocker.args[0]
    assert ext is run.extensions[-1] and np.array_equal(ext.rows, held)
    assert ext.values.shape == (60, 2) and np.isfinite(ext.values).all()
    view = w.map_view
    qtbot.waitUntil(lambda: len(view._overlays) == 1)
    overlay = view._overlays[0]
    assert view.point_count() == 240 and len(overlay.data) == 60
    assert overlay.opts["symbol"] is EXTENDED_SYMBOL and "extended" in overlay.name()
    legend = [label.text for _sample, label in view.legend.items]
    assert sum("extended" in t for t in legend) == 1  # one legend entry per layer
    assert "60" in panel.status.text()
    # the extension agrees with the map: each held-out point lands near its training neighbours
    d = np.linalg.norm(ds.X[held][:, None, :] - ds.X[train][None, :, :], axis=2)
    nearest = d.argmin(axis=1)
    spread = np.ptp(run.embedding, axis=0).max()
    assert np.median(np.linalg.norm(ext.values - run.embedding[nearest], axis=1)) < 0.1 * spread
    # extending the held-out part again from the combo gives the same values
    assert panel.target_combo.currentData().startswith("heldout:")
    with qtbot.waitSignal(panel.extended, timeout=20_000) as again:
        qtbot.mouseClick(panel.extend_button, Qt.MouseButton.LeftButton)
    assert np.allclose(again.args[0].values, ext.values)
    _wait_idle(qtbot, w)


def test_extend_to_another_loaded_data_set_and_to_a_file(qtbot, make_window, host, tmp_path):
    ds, other = _roll(200, 0), _roll(50, 1)
    other.name = "new points"
    w = make_window(host, _session(host, ds, other))
    w.session.set_current_dataset(ds.name)
    run = _wait_done(qtbot, w, w.run_algorithm("kernel_pca", {"kernel": "rbf", "gamma": 0.02}))
    panel = w.views["extend"]
    panel.target_combo.setCurrentIndex(panel.target_combo.findData("dataset:new points"))
    with qtbot.waitSignal(panel.extended, timeout=20_000) as blocker:
        panel.extend_selected()
    assert blocker.args[0].dataset_name == "new points" and blocker.args[0].values.shape == (50, 2)
    assert np.allclose(blocker.args[0].values, run.estimator.extend(other.X))
    # a .npy file: loaded on the worker, added (not made current), drawn as a second layer
    path = tmp_path / "more.npy"
    np.save(path, _roll(30, 2).X)
    with qtbot.waitSignal(panel.extended, timeout=20_000) as blocker:
        panel.extend_file(path, ask=False)
    assert blocker.args[0].values.shape == (30, 2)
    assert "more" in w.session.datasets and w.session.current_dataset is ds
    qtbot.waitUntil(lambda: len(w.map_view._overlays) == 2)
    assert w.map_view.point_count() == 200
    _wait_idle(qtbot, w)


def test_a_bad_file_given_to_extend_shows_a_clear_error_and_keeps_everything(qtbot, make_window, host, tmp_path):
    ds = _roll(150)
    w = make_window(host, _session(host, ds))
    run = _wait_done(qtbot, w, w.run_algorithm("kernel_pca", {}))
    panel = w.views["extend"]
    datasets_before = list(w.session.datasets)
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c\n1,2,3\n4,5\n6,7,8,9\n")
    with qtbot.waitSignal(panel.extendFailed, timeout=10_000) as blocker:
        panel.extend_file(bad, ask=False)
    assert "bad.csv" in blocker.args[0] and "Nothing was changed" in blocker.args[0]
    assert "bad.csv" in w.statusBar().currentMessage() and "bad.csv" in panel.status.text()
    # wrong number of columns: says so in words
    wrong = tmp_path / "wrong.npy"
    np.save(wrong, np.ones((5, 7)))
    with qtbot.waitSignal(panel.extendFailed, timeout=10_000) as blocker:
        panel.extend_file(wrong, ask=False)
    assert "wrong.npy has 7 numeric column(s)" in blocker.args[0] and "fitted on 3" in blocker.args[0]
    # unknown extension: refused before any job starts
    with qtbot.waitSignal(panel.extendFailed, timeout=2_000):
        panel.extend_file(tmp_path / "notes.xyz", ask=False)
    _wait_idle(qtbot, w)
    assert list(w.session.datasets) == datasets_before and not run.extensions
    assert w.session.current_run is run and w.map_view.point_count() == 150
    assert panel.file_button.isEnabled() and w.run_controls.run_button.isEnabled()


def test_cancelling_a_long_extension_keeps_the_earlier_result(qtbot, make_window, host):
    ds, other = _roll(100, 0), _roll(3000, 1)
    other.name = "many"
    w = make_window(host, _session(host, ds, other))
    w.session.set_current_dataset(ds.name)
    run = _wait_done(qtbot, w, w.run_algorithm("slow_extend_test", {"pause": 0.0}))
    panel = w.views["extend"]
    panel.target_combo.setCurrentIndex(panel.target_combo.findData("dataset:many"))
    with qtbot.waitSignal(panel.extended, timeout=20_000):  # a first, quick extension
        panel.extend_rows(run, "many", np.arange(20))
    first = run.extensions[0]
    run.estimator.set_params(pause=0.01)  # 3000 points x 10 ms: 30 s if never cancelled
    run.estimator._p = run.estimator.validate_params()
    job = panel.extend_selected()
    qtbot.waitUntil(lambda: w.run_controls.progress.value() > 0, timeout=5_000)
    assert panel.cancel_button.isEnabled() and not panel.extend_button.isEnabled()
    # cancelled long before its 30 s of work end (generous timeout for a loaded machine)
    with qtbot.waitSignal(panel.extendCancelled, timeout=15_000):
        qtbot.mouseClick(panel.cancel_button, Qt.MouseButton.LeftButton)
    assert job.state == job.CANCELLED
    _wait_idle(qtbot, w)
    assert run.extensions == [first] and w.session.current_run is run
    assert len(w.map_view._overlays) == 1 and len(w.map_view._overlays[0].data) == 20
    assert "cancelled" in panel.status.text() and panel.extend_button.isEnabled()
    assert "cancelled" in w.run_controls.progress.format()


# -- fit on a sample ----------------------------------------------------------------------------

def test_fit_on_a_sample_maps_all_points_and_marks_the_fitted_ones(qtbot, make_window, host):
    ds = _roll(2000)
    w = make_window(host, _session(host, ds))
    panel = w.views["extend"]
    w.algorithm_panel.select_algorithm("isomap")
    panel.sample_size.setValue(250)
    panel.sample_seed.setValue(5)
    assert "2,000" in panel.sample_hint.text() and "250" in panel.sample_hint.text()
    qtbot.mouseClick(panel.sample_button, Qt.MouseButton.LeftButton)
    run = _wait_done(qtbot, w, list(w.session.runs.values())[-1], timeout=30_000)
    assert run.embedding.shape == (2000, 2) and np.isfinite(run.embedding).all()
    fitted = np.asarray(run.meta["fitted_rows"])
    assert fitted.size == 250 and np.unique(fitted).size == 250
    assert run.estimator.embedding_.shape == (250, 2)
    assert np.allclose(run.embedding[fitted], run.estimator.embedding_)
    assert "250 of 2,000" in run.summary["fitted_on"]
    view = w.map_view
    qtbot.waitUntil(lambda: view.run is run and view.point_count() == 2000)
    rings = [o for o in view._overlays if o.opts["symbol"] == "o"]
    assert len(rings) == 1 and len(rings[0].data) == 250
    assert np.allclose(np.column_stack([rings[0].data["x"], rings[0].data["y"]]), run.embedding[fitted])
    assert "fitted sample" in rings[0].name()
    assert "250 of 2,000" in panel.run_label.text()
    # the same as the Qt-free task with the same seed
    outcome = sample_fit_task(host.algorithm_class("isomap"), run.params, ds.X, 250, random_state=5)
    assert np.array_equal(outcome.meta["fitted_rows"], fitted)
    assert np.allclose(outcome.embedding, run.embedding)


# -- extension quality report -------------------------------------------------------------------

def test_extension_quality_report_plots_intervals_and_explains(qtbot, make_window, host):
    pytest.importorskip("manifold_studio.extend.quality")
    ds = _roll(200)
    w = make_window(host, _session(host, ds))
    run = _wait_done(qtbot, w, w.run_algorithm("kernel_pca", {"kernel": "rbf", "gamma": 0.02}))
    view = w.views["extension_quality"]
    w.window_layout.open("view:extension_quality")  # from the View menu (issue 33)
    assert view.applies_to(run) and w.docks["view:extension_quality"].isVisibleTo(w)
    view.fractions_edit.setText("5, 20")
    view.repeats_spin.setValue(2)
    view.heldout_spin.setValue(4)
    view.points_spin.setValue(80)
    with qtbot.waitSignal(view.reportReady, timeout=40_000):
        qtbot.mouseClick(view.compute_button, Qt.MouseButton.LeftButton)
    report = run.meta["extension_quality"]
    assert [r["fraction"] for r in report["rows"]] == [0.05, 0.2]
    for name in ("variability", "extension_error", "difference"):
        mean, lo, hi = view.series(name)
        assert mean.shape == (2,) and np.isfinite(mean).all() and np.isfinite(lo).all()
        assert (lo <= mean + 1e-12).all() and (mean <= hi + 1e-12).all()
        assert view.error_bars[name] is not None  # drawn with 95% intervals
    sentence = view.sentence_label.text()
    assert sentence == report["sentence"] and sentence.endswith(".") and "extension" in sentence
    assert view.table.rowCount() == 2 and "%" in view.table.item(0, 0).text()
    # another run, then back: the report is shown again from the run
    other = _wait_done(qtbot, w, w.run_algorithm("kernel_pca", {"kernel": "linear"}))
    assert "No report yet" in view.sentence_label.text() and not view.error_bars
    w.session.set_current_run(run.id)
    assert view.sentence_label.text() == sentence and other.meta.get("extension_quality") is None
    _wait_idle(qtbot, w)


# -- eigenvalue spectrum -------------------------------------------------------------------------

def test_spectrum_view_shows_the_eigenvalues_of_a_spectral_run(qtbot, make_window, host):
    ds = _roll(200)
    w = make_window(host, _session(host, ds))
    run = _wait_done(qtbot, w, w.run_algorithm("isomap", {"n_components": 3}))
    view = w.views["spectrum"]
    w.window_layout.open("view:spectrum")  # from the View menu (issue 33)
    assert view.applies_to(run) and w.docks["view:spectrum"].isVisibleTo(w)
    assert np.allclose(view.bar_heights("kept"), run.estimator.eigenvalues_)
    assert "Explained fraction" in view.details.text()
    view.log_box.setChecked(True)
    assert np.allclose(view.bar_heights("kept"), np.log10(run.estimator.eigenvalues_))
    view.log_box.setChecked(False)
    if "mds" in host.algorithms:  # non-Euclidean dissimilarities: negative eigenvalues in red
        rng = np.random.default_rng(0)
        D = rng.random((30, 30)) + 0.1
        D = D + D.T
        np.fill_diagonal(D, 0.0)
        w.session.add_dataset(Dataset("dissim", D))
        mds = _wait_done(qtbot, w, w.run_algorithm("mds", {"dissimilarity": "precomputed"}))
        assert mds.estimator.n_negative_eigenvalues_ > 0 and w.views["spectrum"].run is mds
        assert view.bar_heights("negative").size > 0 and (view.bar_heights("negative") < 0).all()
        assert "negative eigenvalue" in view.details.text() and "not Euclidean" in view.details.text()


# -- model files ----------------------------------------------------------------------------------

def test_save_a_fitted_model_and_apply_it_to_a_file(qtbot, make_window, host, tmp_path):
    ds = _roll(150)
    w = make_window(host, _session(host, ds))
    run = _wait_done(qtbot, w, w.run_algorithm("isomap", {}))
    panel = w.views["extend"]
    model = tmp_path / "isomap_model"
    job = panel.save_model(model)
    qtbot.waitUntil(lambda: job.finished, timeout=10_000)
    assert job.state == job.DONE and (tmp_path / "isomap_model.npz").exists()
    assert "Saved" in panel.status.text()
    new = _roll(40, 3)
    data = tmp_path / "new.npy"
    np.save(data, new.X)
    n_runs = len(w.session.runs)
    job = panel.apply_model(tmp_path / "isomap_model.npz", data, ask=False)
    qtbot.waitUntil(lambda: len(w.session.runs) == n_runs + 1 and w.session.current_run.succeeded, timeout=10_000)
    applied = w.session.current_run
    assert applied.dataset_name == "new" and applied.embedding.shape == (40, 2)
    assert np.allclose(applied.embedding, run.estimator.extend(new.X))
    assert applied.summary["applied_model"] == "isomap_model.npz"
    qtbot.waitUntil(lambda: w.map_view.run is applied and w.map_view.point_count() == 40)
    # a data file given as the model: a clear error, nothing changes
    with qtbot.waitSignal(panel.extendFailed, timeout=10_000) as blocker:
        panel.apply_model(data, data, ask=False)
    assert "not a Manifold Studio model" in blocker.args[0]
    _wait_idle(qtbot, w)
    assert len(w.session.runs) == n_runs + 1 and w.session.current_run is applied


def test_pca_spectrum_gives_the_cumulative_curve_and_the_m_for_a_share(qtbot, make_window, host):
    from manifold_studio.gui.views.spectrum_view import components_for_fraction

    rng = np.random.default_rng(3)
    X = rng.normal(size=(300, 8)) * np.array([10, 6, 4, 2, 1, 0.5, 0.2, 0.1])
    w = make_window(host, _session(host, Dataset("scaled", X)))
    run = _wait_done(qtbot, w, w.run_algorithm("pca", {"n_components": 6}))
    view = w.views["spectrum"]
    ratios = run.estimator.explained_variance_ratio_
    w.window_layout.open("view:spectrum")  # from the View menu (issue 33)
    assert view.cumulative_box.isVisibleTo(w)
    view.keep_spin.setValue(90.0)
    expected = int(np.searchsorted(np.cumsum(ratios), 0.9) + 1)
    assert view.keep_components == expected and f"M = {expected}" in view.keep_label.text()
    view.keep_spin.setValue(99.99)  # more than six components keep
    assert view.keep_components is None and "fit with more components" in view.keep_label.text()
    assert components_for_fraction([0.5, 0.3, 0.2], 0.8) == 2
    run2 = _wait_done(qtbot, w, w.run_algorithm("isomap", {}))
    assert w.views["spectrum"].run is run2 and not view.cumulative_box.isVisibleTo(w)
