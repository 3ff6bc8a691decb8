"""A distance matrix in the window (issue 22): File ▸ Open distance matrix… reads the Iris distances
(with a header row of names, a column of names and a species column), the tree offers only the
methods that take distances with metric locked to 'precomputed', Isomap and hierarchical clustering
fit it through Run and equal the API (and scikit-learn's Isomap up to Procrustes), a held-out part
and a file of new-to-training distances are placed by the extension, and the project round trip
keeps the data set a distance matrix."""
from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial.distance import cdist, pdist, squareform

from gui_helpers import discovered_host, wait_idle, wait_last_run
from procrustes import procrustes_residual

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.gui import distance_matrix_actions  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402

WINDOW_DIALOGS = False
ISOMAP = {"n_neighbors": 40, "n_components": 2}   # the Iris graph is connected from 40 neighbours


@pytest.fixture(scope="module")
def host():
    return discovered_host(("isomap", "hierarchical", "pca", "kernel_pca", "mds"), ("iris",))


@pytest.fixture(scope="module")
def iris(host):
    return ms.load_data("sample:iris", host)


def _write(path, D, row_names, col_names, species=None):
    head = ["name"] + (["species"] if species is not None else []) + list(col_names)
    lines = [",".join(head)]
    for i, row in enumerate(D):
        lines.append(",".join([row_names[i]] + ([str(species[i])] if species is not None else [])
                              + [repr(float(v)) for v in row]))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def iris_file(tmp_path, iris):
    D = squareform(pdist(iris.X))
    names = [f"flower{i + 1}" for i in range(len(D))]
    return _write(tmp_path / "iris_distances.csv", D, names, names, iris.labels), D, names


def _open(qtbot, w, monkeypatch, path):
    monkeypatch.setattr(distance_matrix_actions.QFileDialog, "getOpenFileName", lambda *a, **k: (str(path), ""))
    w.ask_loader_options = False
    with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
        w.distance_matrices.action.trigger()
    return w.session.current_dataset


def _item(panel, algorithm_id):
    tree = panel.tree
    for i in range(tree.topLevelItemCount()):
        top = tree.topLevelItem(i)
        for j in range(top.childCount()):
            if top.child(j).data(0, Qt.ItemDataRole.UserRole) == algorithm_id:
                return top.child(j)
    raise AssertionError(algorithm_id)


def test_open_fit_and_reopen_a_distance_matrix(qtbot, make_window, host, iris, iris_file, monkeypatch, tmp_path):
    path, D, names = iris_file
    w = make_window(host)
    assert w.distance_matrices.action in w.menus["file"].actions()
    ds = _open(qtbot, w, monkeypatch, path)
    assert ds.distance_matrix and ds.X.shape == (150, 150) and np.array_equal(ds.X, D)
    assert ds.feature_names == names and list(ds.row_ids[:2]) == ["flower1", "flower2"]
    assert ds.label_name == "species" and list(ds.labels) == list(iris.labels)
    assert "distance matrix" in w.data_panel.info_label.text()

    # only the methods that take distances; the others greyed out, saying why and which ones can
    panel = w.algorithm_panel
    assert panel.algorithm_id == "isomap"            # PCA (the start-up choice) cannot fit distances
    assert not panel.is_available("pca") and not panel.is_available("kernel_pca")
    assert panel.is_available("isomap") and panel.is_available("hierarchical") and panel.is_available("mds")
    tip = _item(panel, "pca").toolTip(0)
    assert "cannot fit one" in tip and "isomap" in tip and "hierarchical" in tip
    assert "precomputed kernel" in _item(panel, "kernel_pca").toolTip(0)
    assert w.run_blocker() == ""
    assert "cannot fit one" in distance_matrix_actions.distance_blocker(w, "pca")
    metric = panel.form.editor("metric")
    assert metric.value() == "precomputed" and not metric.isEnabled()
    panel.form.reset()                               # "Defaults" keeps the lock
    assert panel.form.editor("metric").value() == "precomputed"

    # Isomap through Run: the API's fit on the same matrix, and scikit-learn's up to Procrustes
    panel.form.set_values(ISOMAP)
    w.run_controls.run_button.click()
    run = wait_last_run(qtbot, w, DONE)
    assert run.algorithm_id == "isomap" and run.params["metric"] == "precomputed"
    api = ms.get_algorithm("isomap", metric="precomputed", **ISOMAP).fit(D).embedding_
    np.testing.assert_allclose(run.embedding, api, atol=1e-10)
    from sklearn.manifold import Isomap

    ref = Isomap(metric="precomputed", **ISOMAP).fit_transform(D)
    assert procrustes_residual(ref, run.embedding) < 1e-8
    assert w.map_view.xy.shape == (150, 2)          # the map is drawn
    # hovering an item names its nearest items, not its first distances
    from manifold_studio.gui.views.map_encoding import row_summary, value_text

    near = np.argsort(np.where(np.eye(150, dtype=bool)[0], np.inf, D[0]), kind="stable")[:4]
    assert row_summary(ds, 0) == "nearest: " + ", ".join(f"{names[j]} ({value_text(D[0, j])})" for j in near)
    assert row_summary(ds, 0).startswith("nearest: flower18 (0.1)")

    # hierarchical clustering: its metric locked too; the API's labels
    assert panel.select_algorithm("hierarchical")
    assert panel.form.editor("metric").value() == "precomputed" and not panel.form.editor("metric").isEnabled()
    assert panel.form.editor("method").value() == "average"   # its distance_defaults: Ward needs coordinates
    panel.form.set_values({"n_clusters": 3})
    w.run_controls.run_button.click()
    hier = wait_last_run(qtbot, w, DONE)
    assert hier.algorithm_id == "hierarchical"
    api_labels = ms.get_algorithm("hierarchical", metric="precomputed", method="average", n_clusters=3).fit(D).labels_
    np.testing.assert_array_equal(hier.labels, api_labels)

    # a method that takes no distances cannot be selected, nor run from code: the message says why
    assert not panel.select_algorithm("pca") and panel.algorithm_id == "hierarchical"
    assert w.run_algorithm("pca", {}) is None and "cannot fit one" in w.statusBar().currentMessage()

    # project round trip: still a distance matrix, with its names and labels
    from manifold_studio.project.project_file import load_project, save_project

    save_project(w.session, tmp_path / "d.msproj")
    session, _views = load_project(tmp_path / "d.msproj", host)
    back = session.datasets[ds.name]
    assert back.distance_matrix and np.array_equal(back.X, D) and back.feature_names == names
    assert list(back.labels) == list(iris.labels) and list(back.row_ids[:1]) == ["flower1"]
    again = session.run("isomap", **ISOMAP)
    np.testing.assert_allclose(again.embedding, api, atol=1e-10)


def test_extend_to_held_out_rows_and_to_a_file_of_distances(qtbot, make_window, host, iris, iris_file,
                                                            monkeypatch, tmp_path):
    path, D, names = iris_file
    w = make_window(host)
    _open(qtbot, w, monkeypatch, path)
    panel, ext = w.algorithm_panel, w.views["extend"]
    panel.form.set_values(ISOMAP)
    # fit on 80% of the items, the held-out 20% placed by their distances to the fitted ones
    run = ext.fit_with_holdout()
    qtbot.waitUntil(lambda: run.status == DONE and bool(run.extensions), timeout=30_000)
    wait_idle(qtbot, w)
    train = np.asarray(run.rows)
    held = np.setdiff1d(np.arange(150), train)
    api = ms.get_algorithm("isomap", metric="precomputed", **ISOMAP).fit(D[np.ix_(train, train)])
    np.testing.assert_allclose(run.embedding, api.embedding_, atol=1e-10)
    np.testing.assert_allclose(run.extensions[-1].values, api.extend(D[np.ix_(held, train)]), atol=1e-10)

    # a file of 5 new points' distances to the fitted items (columns by name, in another order)
    rng = np.random.default_rng(0)
    new = iris.X[:5] + rng.normal(0, 0.05, (5, 4))
    fitted = [names[i] for i in train]
    order = rng.permutation(len(fitted))
    to_train = cdist(new, iris.X[train])
    good = _write(tmp_path / "new.csv", to_train[:, order], [f"new{i}" for i in range(5)],
                  [fitted[k] for k in order])
    job = ext.extend_file(good, ask=False)
    assert job is not None
    qtbot.waitUntil(lambda: len(run.extensions) == 2, timeout=20_000)
    np.testing.assert_allclose(run.extensions[-1].values, api.extend(to_train), atol=1e-10)
    # the wrong number of columns is refused by name, saying what is needed
    bad = tmp_path / "bad.npy"
    np.save(bad, to_train[:, :-1])
    with qtbot.waitSignal(ext.extendFailed, timeout=20_000) as failed:
        ext.extend_file(bad, ask=False)
    assert "bad.npy has 119 columns" in failed.args[0] and "distances to those 120 items" in failed.args[0]


def test_fit_on_a_sample_and_tsne_settings(qtbot, make_window, host, iris_file, monkeypatch):
    path, D, _names = iris_file
    w = make_window(host)
    _open(qtbot, w, monkeypatch, path)
    panel, ext = w.algorithm_panel, w.views["extend"]
    panel.form.set_values(ISOMAP)
    run = ext.fit_on_sample(m=80)
    qtbot.waitUntil(lambda: run.status == DONE, timeout=30_000)
    idx = np.asarray(run.meta["fitted_rows"])
    rest = np.setdiff1d(np.arange(150), idx)
    api = ms.get_algorithm("isomap", metric="precomputed", **ISOMAP).fit(D[np.ix_(idx, idx)])
    np.testing.assert_allclose(run.embedding[idx], api.embedding_, atol=1e-10)
    np.testing.assert_allclose(run.embedding[rest], api.extend(D[np.ix_(rest, idx)]), atol=1e-10)
    # preparation steps transform feature columns: Run says so while one is in the chain
    w.preparation_panel.add_step("standardize")
    assert "preparation steps transform feature columns" in w.run_blocker()
    assert not w.run_controls.run_button.isEnabled()
    w.preparation_panel.set_chain([])
    assert w.run_blocker() == "" and w.run_controls.run_button.isEnabled()
    if "tsne" in host.algorithms:   # t-SNE's PCA start needs coordinates: random start on distances
        assert panel.select_algorithm("tsne")
        assert panel.form.editor("metric").value() == "precomputed" and panel.form.editor("init").value() == "random"
    # back on ordinary data: every method again, the metric free and back to its default
    with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
        w.load_source("sample:iris")
    assert panel.is_available("pca") and panel.form.editor("metric").isEnabled()
    assert panel.form.editor("metric").value() == "euclidean"
    if panel.algorithm_id == "tsne":
        assert panel.form.editor("init").value() == "pca"


def test_the_import_dialog_box_reads_a_csv_as_a_distance_matrix(qtbot, make_window, host, iris_file, monkeypatch):
    from PySide6.QtWidgets import QDialog

    from manifold_studio.gui import import_dialog, main_window

    path, D, _names = iris_file
    w = make_window(host)
    made = []

    def dialog(loader, p, parent=None, distance_matrix=None, chain=None):
        dlg = import_dialog.options_dialog(loader, p, parent, distance_matrix, chain)
        assert not dlg.distance_box.isChecked()          # File ▸ Open data file…: off unless ticked before
        dlg.distance_box.setChecked(True)
        dlg.exec = lambda: QDialog.DialogCode.Accepted
        made.append(dlg)
        return dlg

    monkeypatch.setattr(main_window, "options_dialog", dialog)
    with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
        w.open_file(path, ask=True)
    ds = w.session.current_dataset
    assert made and ds.distance_matrix and np.array_equal(ds.X, D) and ds.label_name == "species"



def test_open_recent_reopens_a_distance_matrix_as_one(qtbot, make_window, host, tmp_path):
    D = squareform(pdist(np.random.default_rng(0).normal(size=(30, 3))))
    np.save(tmp_path / "d.npy", D)
    np.save(tmp_path / "x.npy", D[:, :3])
    w = make_window(host)
    w.ask_loader_options = False
    for load in (lambda: w.distance_matrices.open_file(tmp_path / "d.npy"), lambda: w.open_file(tmp_path / "x.npy")):
        with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
            load()
    for name, expected in (("d.npy", True), ("x.npy", False)):
        with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
            w.recent.open_recent("files", str((tmp_path / name).resolve()))
        assert w.session.current_dataset.distance_matrix is expected
