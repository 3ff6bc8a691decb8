"""pytest-qt tests of the Preparation dock driving the real main window (headless): the chain
fitted with the run (the run's estimator is the fitted pipeline), the scale advice on the
shipped wine sample (one click adds standardize; k-means then finds the cultivars), the Runs
table and projects keeping the chain, add / remove / reorder and the prepared-table summary."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_last_run

pytest.importorskip("pytestqt")
sklearn_metrics = pytest.importorskip("sklearn.metrics")

from PySide6.QtCore import Qt  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.algorithms.pipeline import Pipeline  # noqa: E402
from manifold_studio.files.model_file import load_model  # noqa: E402
from manifold_studio.project.project_file import load_project, save_project  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 900)


@pytest.fixture
def host():
    return discovered_host(("kmeans", "pca"), ("wine", "iris"))


def _load(qtbot, w, sample):
    assert w.data_panel.select_sample(sample)
    with qtbot.waitSignal(w.datasetLoaded, timeout=15_000):
        qtbot.mouseClick(w.data_panel.load_sample_button, Qt.MouseButton.LeftButton)
    return w.session.current_dataset


def _run_kmeans(qtbot, w, **params):
    w.algorithm_panel.select_algorithm("kmeans")
    for name, value in params.items():
        w.algorithm_panel.form.editor(name).set_value(value)
    assert w.run_controls.run_button.isEnabled(), w.run_blocker()
    qtbot.mouseClick(w.run_controls.run_button, Qt.MouseButton.LeftButton)
    return wait_last_run(qtbot, w, timeout=30_000)


def test_wine_advice_one_click_standardize_then_kmeans_finds_the_cultivars(qtbot, make_window, host, tmp_path):
    w = make_window(host)
    ds = _load(qtbot, w, "wine")
    prep = w.preparation_panel
    assert w.docks["preparation"].isVisible()
    # the advice names the widest and the narrowest column and the ratio
    assert prep.advice.isVisible() and prep.advice_button.isVisible()
    sd = np.std(ds.X, axis=0)
    wide, narrow = ds.feature_names[int(np.argmax(sd))], ds.feature_names[int(np.argmin(sd))]
    text = prep.advice.text()
    assert f"'{wide}'" in text and f"'{narrow}'" in text and wide == "proline"
    assert f"{sd.max() / sd.min():,.0f}×" in text
    # the advice sits above the step list and gets the height of all its wrapped lines
    qtbot.waitUntil(lambda: prep.advice.height() >= prep.advice.heightForWidth(prep.advice.width()))
    assert prep.advice.y() < prep.list.y() and prep.advice.height() > 2 * prep.advice.fontMetrics().height()

    # without the step k-means follows proline only
    plain = _run_kmeans(qtbot, w, n_clusters=3, random_state=0)
    ari_plain = sklearn_metrics.adjusted_rand_score(ds.labels, plain.labels)
    assert ari_plain < 0.5 and "chain" not in plain.meta

    qtbot.mouseClick(prep.advice_button, Qt.MouseButton.LeftButton)  # one click
    assert prep.chain() == [("standardize", {"with_mean": True, "with_std": True})]
    assert not prep.advice.isVisible()
    run = _run_kmeans(qtbot, w, n_clusters=3, random_state=0)
    ari = sklearn_metrics.adjusted_rand_score(ds.labels, run.labels)
    assert ari >= 0.85
    # the run's estimator is the fitted pipeline, equal to the same pipeline built in a script
    assert isinstance(run.estimator, Pipeline) and run.estimator.is_fitted
    ref = ms.make_pipeline("standardize", ms.get_algorithm("kmeans", n_clusters=3, random_state=0)).fit(ds)
    assert np.array_equal(run.labels, ref.labels_)
    assert list(run.estimator.columns_in_) == list(ds.feature_names)
    assert np.array_equal(run.estimator.extend(ds.X[:20]), ref.predict(ds.X[:20]))
    # the run records its chain; the Runs table shows it
    assert [step for step, _ in run.meta["chain"]] == ["standardize"]
    row = w.run_log._rows[run.id]
    assert w.run_log.item(row, 2).text().startswith(
        "standardize(with_mean=True, with_std=True) → n_clusters=3, ")
    # Save model (the window's action) writes the pipeline; loaded back it matches new data by
    # column name, in any order
    job = w.views["extend"].save_model(tmp_path / "wine_model.npz")
    qtbot.waitUntil(lambda: job.finished, timeout=15_000)
    assert job.state == job.DONE
    loaded = load_model(tmp_path / "wine_model.npz")
    assert isinstance(loaded, Pipeline)
    frame = ds.table.to_frame()[list(reversed(ds.feature_names))]
    assert np.array_equal(loaded.predict(frame), run.labels)
    # a project keeps the chain and the fitted pipeline
    path = save_project(w.session, tmp_path / "wine.msproj")
    session, _ = load_project(path, host=host)
    back = session.runs[run.id]
    assert back.meta["chain"] == run.meta["chain"]
    assert isinstance(back.estimator, Pipeline)
    assert np.array_equal(back.estimator.extend(ds.X), run.labels)


def test_steps_are_added_removed_reordered_and_summarised(qtbot, make_window, host):
    w = make_window(host)
    ds = _load(qtbot, w, "iris")
    prep = w.preparation_panel
    assert prep.summary.text() == f"No preparation: the algorithm gets the {ds.n_samples} rows × 4 columns."
    assert not prep.advice.isVisible()  # iris' scales differ by far less than 100x
    prep.add_step("standardize")
    prep.add_step("select_columns")
    assert [i for i, _ in prep.chain()] == ["standardize", "select_columns"]
    # the shown form is the selected step's: exclude one column
    assert prep.list.currentRow() == 1
    dropped = ds.feature_names[0]
    prep.form.editor("exclude").set_value([dropped])
    assert tuple(prep.chain()[1][1]["exclude"]) == (dropped,)
    assert prep.summary.text().startswith(f"{ds.n_samples} rows × 4 columns → {ds.n_samples} × 3 after 2 step(s)")
    assert f"dropped: {dropped}" in prep.summary.text()
    prep.move_current(-1)
    assert [i for i, _ in prep.chain()] == ["select_columns", "standardize"] and prep.list.currentRow() == 0
    assert prep.list.item(0).text().startswith("1. select_columns(exclude=")
    # a setting the data refuse is reported in the summary, naming the step and the column
    prep.form.editor("exclude").set_value(["no such column"])
    assert "no such column" in prep.summary.text() and "cannot run" in prep.summary.text()
    prep.remove_current()
    assert [i for i, _ in prep.chain()] == ["standardize"]
    run = _run_kmeans(qtbot, w, n_clusters=3, random_state=0)
    assert isinstance(run.estimator, Pipeline)
    ref = ms.make_pipeline("standardize", ms.get_algorithm("kmeans", n_clusters=3, random_state=0)).fit(ds)
    assert np.array_equal(run.labels, ref.labels_)
    prep.remove_current()
    assert prep.chain() == []
    bare = _run_kmeans(qtbot, w, n_clusters=3, random_state=0)
    assert not isinstance(bare.estimator, Pipeline) and "chain" not in bare.meta


def test_impute_in_the_chain_lets_run_use_rows_with_gaps(qtbot, make_window, host):
    """Penguins read with missing=keep: Run is off (NaN) until impute is in the chain; then the
    two rows with gaps are imputed, not dropped (344 points)."""
    w = make_window(host)
    with qtbot.waitSignal(w.datasetLoaded, timeout=15_000):
        w.load_source("sample:penguins", {"missing": "keep"})
    ds = w.session.current_dataset
    assert ds.n_samples == 344 and np.isnan(ds.X).any()
    w.algorithm_panel.select_algorithm("kmeans")
    assert "missing value" in w.run_blocker()
    w.preparation_panel.add_step("impute")
    w.preparation_panel.add_step("standardize")
    assert w.run_blocker() == ""
    run = _run_kmeans(qtbot, w, n_clusters=3, random_state=0)
    assert run.labels.shape == (344,)
    ref = ms.make_pipeline("impute", "standardize",
                           ms.get_algorithm("kmeans", n_clusters=3, random_state=0)).fit(ds)
    assert np.array_equal(run.labels, ref.labels_)
