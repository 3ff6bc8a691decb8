"""Help ▸ Keyboard shortcuts (built from the window's real actions) and Help ▸ Methods (built
from every plugin's help text and parameter constraints); View ▸ Zoom to fit."""
from __future__ import annotations

import html

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtGui import QAction, QKeySequence  # noqa: E402

from manifold_studio.gui.help_pages import (  # noqa: E402
    install_help_pages, methods_html, open_methods, open_shortcuts, shortcut_rows,
)
from manifold_studio.gui.preferences import install_preferences  # noqa: E402
from manifold_studio.gui.recent_files import install_recent_files  # noqa: E402
from manifold_studio.gui.undo import install_undo  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402

WINDOW_DIALOGS = False
NATIVE = QKeySequence.SequenceFormat.NativeText


@pytest.fixture(scope="module")
def host():
    return PluginHost().discover()


@pytest.fixture
def window(make_window, host):
    w = make_window(host)
    install_preferences(w)
    install_recent_files(w)
    install_undo(w)
    install_help_pages(w)
    return w


def _by_keys(rows):
    out = {}
    for what, keys, where in rows:
        for k in keys.split(", "):
            out.setdefault(k, []).append((what, where))
    return out


def test_shortcuts_page_lists_the_real_actions(window):
    w = window
    rows = shortcut_rows(w)
    keys = _by_keys(rows)
    assert ("Run", "Run") in keys["Ctrl+R"]
    assert ("Open data file", "File") in keys["Ctrl+O"]
    assert ("Save project", "File") in keys["Ctrl+S"]
    assert ("Cancel", "Run") in keys["Ctrl+."]
    assert ("Zoom to fit", "View") in keys["Ctrl+0"]
    assert ("Preferences", "Edit") in keys["Ctrl+,"]
    assert ("Undo", "Edit") in keys["Ctrl+Z"] and ("Redo", "Edit") in keys["Ctrl+Shift+Z"]
    assert ("Remove run", "Runs list (right-click)") in keys[QKeySequence("Del").toString(NATIVE)]
    # every action of the window that has a key is on the page, with all its keys
    for action in w.findChildren(QAction):
        for seq in action.shortcuts():
            assert seq.toString(NATIVE) in keys, action.text()

    # a new action appears the next time the page opens: it is never stale
    extra = QAction("Frobnicate", w, shortcut=QKeySequence("Ctrl+Alt+J"))
    w.add_tool_action(extra)
    dialog = open_shortcuts(w)
    table = [tuple(dialog.table.item(r, c).text() for c in range(3)) for r in range(dialog.table.rowCount())]
    assert table == dialog.rows
    assert ("Frobnicate", "Ctrl+Alt+J", "Tools") in table
    assert w.shortcuts_action in w.menus["help"].actions()
    titles = [a.text().replace("&", "") for a in w.menuBar().actions()]
    assert titles[:3] == ["File", "Edit", "Run"]


def test_documented_keys_are_listed_only_when_no_action_has_them(window):
    w = window
    keys = _by_keys(shortcut_rows(w))
    if not any(a.shortcut().toString(NATIVE) == "Ctrl+A" for a in w.findChildren(QAction)):
        assert keys["Ctrl+A"] == [("Select all points of the map", "Map (selection)")]
    select_all = QAction("Select all", w, shortcut=QKeySequence("Ctrl+A"))
    w.add_tool_action(select_all)
    rows = _by_keys(shortcut_rows(w))["Ctrl+A"]
    assert ("Select all", "Tools") in rows   # a real action with the key: listed with its menu
    assert ("Select all points of the map", "Map (selection)") not in rows   # the note is gone


def test_zoom_to_fit_shows_every_point(qtbot, window):
    w = window
    w.session.load("sample:iris")
    run = w.session.run("pca", n_components=2)
    qtbot.waitUntil(lambda: w.map_view.point_count() == 150, timeout=5_000)
    vb = w.map_view.plot_item.getViewBox()
    vb.setRange(xRange=(100, 101), yRange=(100, 101), padding=0)
    w.zoom_action.trigger()
    (x0, x1), (y0, y1) = vb.viewRange()
    xy = run.embedding[:, :2]
    assert x0 <= xy[:, 0].min() and xy[:, 0].max() <= x1
    assert y0 <= xy[:, 1].min() and xy[:, 1].max() <= y1
    assert (x1 - x0) < 3 * np.ptp(xy[:, 0])  # fitted, not just anywhere


def test_methods_page_has_every_algorithm_and_parameter(window, host):
    page = methods_html(host)
    dialog = open_methods(window, "kmeans")
    text = dialog.browser.toPlainText()
    for aid, cls in host.algorithms.items():
        assert f"name='algorithm-{aid}'" in page
        assert cls.name in text and cls.help.split(".")[0] in text
        for p in cls.params:
            assert f"<code>{html.escape(p.name)}</code>" in page, (aid, p.name)
            assert p.help in text and p.describe() in text, (aid, p.name)
    # grouped by kind: each algorithm under its kind's heading
    kinds = ("embedding", "clustering", "classification")
    headings = {k: page.index(f"name='kind-{k}'") for k in kinds}
    loaders_at = page.index("name='loaders'")
    for aid, cls in host.algorithms.items():
        at = page.index(f"name='algorithm-{aid}'")
        own = headings[cls.kind]
        assert own < at < min(p for p in [*headings.values(), loaders_at] if p > own)
    assert headings["embedding"] < headings["clustering"] < headings["classification"] < loaders_at
    for title in ("Embedding (dimensionality reduction)", "Clustering", "Classification", "File loaders",
                  "Sample data sets"):
        assert f"{title}\n" in text
    for loader in host.loaders.values():
        assert loader.name in text
        for ext in loader.extensions:
            assert ext in text
    for sid, sample in host.samples.items():
        assert sample.name in text and f"sample:{sid}" in text
    assert window.methods_action in window.menus["help"].actions()
