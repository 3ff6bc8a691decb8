"""A sparse data set in the window: loaded from a Matrix Market file, shown in the data table
(its first columns), fitted by a method that takes sparse data, refused with the message by one
that does not, and drawn, hovered and exported without densifying the whole matrix."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from gui_helpers import discovered_host, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.tables.dataset_columns import SPARSE_TABLE_COLUMNS  # noqa: E402
from manifold_studio.gui.views.map_encoding import row_summary  # noqa: E402
from manifold_studio.session.records import DONE, FAILED  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "hierarchical"))


def test_sparse_file_in_the_window(qtbot, make_window, host, tmp_path):
    S = sp.csr_matrix(sp.random(150, 80, density=0.1, random_state=0) * 5)
    scipy.io.mmwrite(tmp_path / "words.mtx", S)
    w = make_window(host)
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        w.load_source(str(tmp_path / "words.mtx"))
    ds = w.session.current_dataset
    assert ds.is_sparse and ds.X.shape == (150, 80)
    assert row_summary(ds, 3).startswith("x1 = ")
    pca = w.run_algorithm("pca", {"n_components": 2})
    run = wait_last_run(qtbot, w, DONE)
    assert run.id == pca.id and run.embedding.shape == (150, 2)
    table = w.data_table
    w.docks["table"].show()
    qtbot.waitUntil(lambda: table.model.columnCount() == 1 + SPARSE_TABLE_COLUMNS + 2, timeout=5_000)
    assert table.model.headerData(1, Qt.Orientation.Horizontal) == "x1"
    w.run_algorithm("hierarchical", {"n_clusters": 3})
    failed = wait_last_run(qtbot, w, FAILED)
    assert "hierarchical does not take sparse data" in failed.error and "pca" in failed.error
