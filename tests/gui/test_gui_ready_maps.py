"""AnnData in the window: an .h5ad file's obsm['X_umap'] appears as a finished run (no model),
coloured by the file's cell types and compared with a new run; File ▸ Export writes a run into a
new .h5ad file or adds it to an existing one."""
from __future__ import annotations

import warnings

import numpy as np
import pytest
from gui_helpers import discovered_host

pytest.importorskip("pytestqt")
anndata = pytest.importorskip("anndata")
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402

from manifold_studio.gui.views import compare_view  # noqa: E402,F401  (registers the view)
from manifold_studio.session.ready_maps import READY_MAP  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "kmeans"))


def write_cells(tmp_path):
    rng = np.random.default_rng(0)
    X = sp.random(90, 15, density=0.4, random_state=1, format="csr") * 10
    types = rng.choice(["T", "B", "NK"], 90)
    umap_like = rng.normal(size=(90, 2))
    adata = anndata.AnnData(X, obs=pd.DataFrame({"cell_type": pd.Categorical(types)},
                                                index=[f"c{i}" for i in range(90)]),
                            obsm={"X_umap": umap_like})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata.write_h5ad(tmp_path / "cells.h5ad")
    return tmp_path / "cells.h5ad", types, umap_like


def test_obsm_maps_are_runs_in_the_window(qtbot, make_window, host, tmp_path):
    path, types, umap_like = write_cells(tmp_path)
    w = make_window(host)
    ds = w.session.load(str(path), label_column="cell_type")
    ready = [r for r in w.session.runs.values() if r.algorithm_id == READY_MAP]
    assert len(ready) == 1 and ready[0].succeeded and ready[0].estimator is None
    np.testing.assert_array_equal(ready[0].embedding, umap_like)
    assert ready[0].meta["ready_map"] == "X_umap" and ds.labels is not None
    pca = w.session.run("pca", n_components=2)
    view = w.views["compare"]
    dock = w.docks["view:compare"]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(view.isVisible, timeout=5_000)
    view.set_chosen([ready[0].id, pca.id], reference_id=ready[0].id)
    qtbot.waitUntil(lambda: not view.latest.busy, timeout=10_000)
    shown = view.map_for(ready[0].id)
    assert np.abs(shown.xy - umap_like).max() == 0
    codes = np.unique(types, return_inverse=True)[1].ravel()
    assert np.array_equal(shown.coloring.codes, codes)   # coloured by the cell types
    assert 0 <= view.map_for(pca.id).alignment.disparity <= 1


def test_export_a_run_into_h5ad(qtbot, make_window, host, tmp_path):
    path, _, umap_like = write_cells(tmp_path)
    w = make_window(host)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):   # File ▸ Open, as a user does it
        w.load_source(str(path))
    assert w.session.current_dataset.is_sparse
    pca = w.session.run("pca", n_components=2)
    w.session.set_current_run(pca.id)
    out = tmp_path / "out.h5ad"
    job = w.h5ad_export.export(out)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    back = anndata.read_h5ad(out)
    np.testing.assert_array_equal(back.obsm["X_pca"], pca.embedding)
    np.testing.assert_array_equal(back.obsm["X_umap"], umap_like)   # a copy of the data file, plus the run
    job = w.h5ad_export.export(path, add=True)                       # added to the data file itself
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    np.testing.assert_array_equal(anndata.read_h5ad(path).obsm["X_pca"], pca.embedding)
    km = w.session.run("kmeans", n_clusters=3, random_state=0)   # cluster labels go to obs
    w.session.set_current_run(km.id)
    job = w.h5ad_export.export(out, add=True)
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    back = anndata.read_h5ad(out)
    assert list(back.obs["kmeans_clusters"]) == [str(v) for v in km.shown_labels]
    np.testing.assert_array_equal(back.obsm["X_pca"], pca.embedding)   # the earlier result is kept
    ready = next(r for r in w.session.runs.values() if r.algorithm_id == READY_MAP)
    w.session.set_current_run(ready.id)   # a ready-made map keeps its name
    job = w.h5ad_export.export(tmp_path / "ready.h5ad")
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    assert set(anndata.read_h5ad(tmp_path / "ready.h5ad").obsm) == {"X_umap", "X_pca"}
    w.session.set_current_run(None)
    assert w.h5ad_export.export(out) is None   # no run: refused with a message, nothing written


def test_opening_an_h5ad_shows_its_map_and_a_bad_one_changes_nothing(qtbot, make_window, host, tmp_path):
    path, _types, umap_like = write_cells(tmp_path)
    w = make_window(host)
    w.ask_loader_options = False
    errors = []
    w.report_error = lambda text, *a, **k: errors.append(text)
    with qtbot.waitSignal(w.datasetLoaded, timeout=20_000):
        w.open_file(path, options={"label_column": "cell_type"})
    shown = w.session.current_run
    assert shown is not None and shown.meta["ready_map"] == "X_umap"
    qtbot.waitUntil(lambda: w.map_view.point_count() == 90, timeout=10_000)   # the map, not an empty plot
    np.testing.assert_array_equal(w.map_view.xy, umap_like)
    bad = tmp_path / "bad.h5ad"
    bad.write_text("cell,gene\n1,2\n")
    with qtbot.waitSignal(w.loadFailed, timeout=10_000):
        w.open_file(bad)
    assert errors[-1] == ("Could not load " + str(bad) + ": bad.h5ad is not an AnnData file: an .h5ad file is HDF5, "
                          "and this one does not start with the HDF5 signature (was it written by anndata's "
                          "write_h5ad?). The loaded data is unchanged.")
    assert list(w.session.datasets) == ["cells"] and w.session.current_run is shown
    assert w.map_view.point_count() == 90
