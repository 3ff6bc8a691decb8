"""The map instruments' work over the rows runs on worker threads (issue 31: "everything stays on
worker threads"): the main thread's handlers receive finished results and only hand them to the
items. Checked by recording the thread of every heavy call, not by timing."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from manifold_studio.analysis import cross_filter as cf_mod  # noqa: E402
from manifold_studio.analysis import explain_selection as ex_mod  # noqa: E402
from manifold_studio.gui.views import cross_filter_strip, explain_panel, mark_layer, search_box  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca",), ("wine",))


@pytest.fixture
def calls(monkeypatch):
    """{name: [True if on the main thread, ...]} of the heavy calls, recorded as they happen."""
    seen: dict[str, list[bool]] = {}

    def record(module, name, label):
        original = getattr(module, name)

        def wrapper(*args, **kwargs):
            seen.setdefault(label, []).append(threading.current_thread() is threading.main_thread())
            return original(*args, **kwargs)
        monkeypatch.setattr(module, name, wrapper)

    record(mark_layer, "density_counts", "marks image counts")
    record(search_box, "search", "search")
    record(search_box, "plan_marks", "search marks")
    record(cross_filter_strip, "plan_marks", "brush marks")
    record(cf_mod.CrossFilter, "counts", "brush counts")
    record(explain_panel, "explain", "explain")
    record(explain_panel, "spark_heights", "explain distributions")
    record(ex_mod, "_numeric_p", "explain tests")
    return seen


def test_search_brush_and_explain_compute_off_the_main_thread(qtbot, make_window, host, calls, monkeypatch):
    monkeypatch.setattr(mark_layer, "FEW_POINTS", 10)   # wine's 178 points stand in for a million
    w = make_window(host)
    w.session.load("sample:wine")
    w.session.run("pca")
    mi = w.map_instruments
    ds = w.session.current_dataset
    hue = ds.X[:, ds.feature_names.index("hue")]

    mi.search.edit.setText("hue < 1")
    mi.search.run()
    qtbot.waitUntil(lambda: mi.search.match is not None and mi.search.marks.count == (hue < 1).sum(), timeout=10_000)
    assert mi.search.marks.image.isVisible()
    assert mi.search.marks.image.total() > 0

    strip = mi.cross_filter
    strip.add_chart("hue")
    qtbot.waitUntil(lambda: "hue" in strip.plots and strip.plots["hue"]["all"] is not None, timeout=10_000)
    strip.plots["hue"]["region"].setRegion((0.5, 1.0))
    qtbot.waitUntil(lambda: strip.passing is not None, timeout=10_000)
    expected = (hue >= 0.5) & (hue <= 1.0)
    np.testing.assert_array_equal(strip.passing, expected)
    assert strip.marks.count == expected.sum()

    w.selection.select(ds.name, np.flatnonzero(hue < 1))
    mi.explain.run()
    qtbot.waitUntil(lambda: mi.explain.result is not None, timeout=10_000)
    assert mi.explain.result.n_a == (hue < 1).sum()

    for label in ("search", "search marks", "marks image counts", "brush counts", "brush marks", "explain",
                  "explain distributions", "explain tests"):
        assert calls.get(label), f"{label} never ran"
        assert not any(calls[label]), f"{label} ran on the main thread {sum(calls[label])} of {len(calls[label])} times"


def test_the_main_thread_redraws_marks_itself_only_when_the_map_changed(qtbot, make_window, host):
    """A search result made for another range of the map is drawn again (on the main thread:
    the one fallback); one made for the current map is only handed to the items."""
    w = make_window(host)
    w.session.load("sample:wine")
    w.session.run("pca")
    marks = w.map_instruments.search.marks
    mask = np.zeros(w.session.current_dataset.n_samples, dtype=bool)
    mask[:20] = True
    plan = mark_layer.plan_marks(mask, marks.view_now())
    assert marks.show_plan(plan) and marks.count == 20
    vb = w.map_view.plot_item.getViewBox()
    (x0, x1), (y0, y1) = vb.viewRange()
    vb.setRange(xRange=(x0, (x0 + x1) / 2), yRange=(y0, y1), padding=0)
    assert not marks.show_plan(plan)   # made for the old range: refused, the caller redraws
