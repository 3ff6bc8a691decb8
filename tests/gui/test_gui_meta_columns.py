"""Meta and target columns in the window (issue 20, penguins): island, sex and year load as
metas, the map's colour-by box lists every feature, target and meta column (categorical columns
become classes, numeric ones with many values a colour bar), and the Table dock shows them all."""
from __future__ import annotations

import numpy as np
import pytest

from gui_helpers import discovered_host, wait_last_run

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.gui.views.map_encoding import COLUMN_PREFIX  # noqa: E402
from manifold_studio.tables.dataset_columns import META, dataset_columns  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return discovered_host(("pca",), ("penguins",))


def test_penguins_metas_colour_the_map_and_fill_the_table(qtbot, make_window, host):
    w = make_window(host)
    with qtbot.waitSignal(w.datasetLoaded, timeout=15_000):
        w.load_source("sample:penguins")
    ds = w.session.current_dataset
    assert ds.table.meta_names == ["island", "sex", "year"]
    assert "year" not in ds.feature_names and ds.label_name == "species"
    run = w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    view = w.map_view
    assert view.run is run

    # every feature, the target and every meta column is in the colour-by box
    entries = [view.color_combo.itemData(i) for i in range(view.color_combo.count())]
    for name in ds.feature_names + ["species", "island", "sex", "year"]:
        assert COLUMN_PREFIX + name in entries, name
    metas = [c for c in dataset_columns(w.session, ds.name) if c.kind == META]
    assert [c.name for c in metas] == ["island", "sex", "year"]

    # island: text → classes, one per island, each point coded by its own island
    assert view.set_color_column("island")
    island = np.asarray(ds.column_values("island"), dtype=object)
    assert view.coloring.mode == "categorical"
    assert sorted(view.coloring.names) == sorted(set(island)) == ["Biscoe", "Dream", "Torgersen"]
    names = np.asarray(view.coloring.names, dtype=object)
    assert np.array_equal(names[view.coloring.codes], island[run.point_index])
    assert view.colorbar is None
    # sex has missing values (a 'no value' class), year three values: both are classes
    assert view.set_color_column("sex") and view.coloring.mode == "categorical"
    sex = np.asarray(ds.column_values("sex"), dtype=object)
    assert None in set(sex) and set(view.coloring.names) == {"female", "male", "no value"}
    assert view.set_color_column("year") and view.coloring.mode == "categorical"
    assert sorted(float(n) for n in view.coloring.names) == [2007.0, 2008.0, 2009.0]
    # a numeric feature with many values gets a colour bar over its range
    assert view.set_color_column("body_mass_g") and view.coloring.mode == "continuous"
    qtbot.waitUntil(lambda: view.colorbar is not None, timeout=5_000)
    lo, hi = view.colorbar.levels()
    assert lo == pytest.approx(ds.X[:, 3].min()) and hi == pytest.approx(ds.X[:, 3].max())
    # size-by lists the numeric columns (year is read as a categorical column: a class, not a size)
    sizes = [view.encoding.size_combo.itemData(i) for i in range(view.encoding.size_combo.count())]
    assert set(ds.feature_names) <= set(sizes) and not {"island", "sex", "year"} & set(sizes)

    # the Table dock shows every column of the table
    table = w.data_table
    w.docks["table"].show()
    qtbot.waitUntil(lambda: table.model.columnCount() > 0, timeout=5_000)
    m = table.model
    headers = [m.headerData(j, Qt.Orientation.Horizontal) for j in range(m.columnCount())]
    for name in [c.name for c in ds.table.columns]:
        assert name in headers, name
    j = headers.index("island")
    shown = [m.data(m.index(p, j), Qt.ItemDataRole.DisplayRole) for p in range(m.rowCount())]
    assert shown == list(island)
    assert "not a feature" in m.headerData(j, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
