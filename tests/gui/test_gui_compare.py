"""pytest-qt tests of the 'Compare runs' view: a grid of small maps of several embedding runs,
Procrustes-aligned to a reference run, with the selection of the data set linked across them."""
from __future__ import annotations

import re

import numpy as np
import pytest
from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.session.records import DONE, Run

from manifold_studio.gui.views import compare_view  # noqa: E402,F401  (registers the view)
from manifold_studio.gui.views import small_map  # noqa: E402
from manifold_studio.gui.views.compare_view import ALIGN_JOB_POINTS, CompareView  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)

# a rotation by 40 degrees followed by a reflection, a scale of 3.7 and a shift
_C, _S = np.cos(np.radians(40)), np.sin(np.radians(40))
MOVE = np.array([[_C, -_S], [_S, _C]]) @ np.diag([-1.0, 1.0])


def moved(xy):
    return 3.7 * np.asarray(xy)[:, :2] @ MOVE + [12.0, -5.0]


@pytest.fixture
def host():
    return discovered_host(("pca", "isomap", "lle"), ("iris",))


def add_copy(session, run, embedding, rows=None, algorithm_id="copy"):
    """Record a finished run with a given embedding (as a project file would)."""
    new = Run(id=max(session.runs) + 1, algorithm_id=algorithm_id, params={}, dataset_name=run.dataset_name,
              kind="embedding", status=DONE, embedding=np.asarray(embedding), rows=rows)
    return session.add_run(new, make_current=True)


def compare_view_of(qtbot, window) -> CompareView:
    view = window.views["compare"]
    dock = window.docks["view:compare"]
    dock.show()
    dock.raise_()
    qtbot.waitUntil(view.isVisible, timeout=5_000)
    qtbot.waitUntil(lambda: not view.latest.busy, timeout=10_000)
    return view


def title_number(title: str, what: str) -> float:
    m = re.search(rf"{what} ([-+0-9.e]+)", title)
    assert m, title
    return float(m.group(1))


def test_rotated_copy_aligns_to_error_below_1e_9(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:iris")
    pca = w.session.run("pca", n_components=2)
    copy = add_copy(w.session, pca, moved(pca.embedding))
    view = compare_view_of(qtbot, w)
    assert [m.run_id for m in view.maps] == [pca.id, copy.id]  # the reference (oldest) first
    ref_map, copy_map = view.map_for(pca.id), view.map_for(copy.id)
    assert "reference" in ref_map.title_text
    res = copy_map.alignment
    assert res.rms < 1e-9 and res.disparity < 1e-18
    assert title_number(copy_map.title_text, "disparity") < 1e-9
    assert title_number(copy_map.title_text, "RMS") < 1e-9
    assert res.transform.is_reflection and res.transform.scale == pytest.approx(1 / 3.7)
    # what is drawn: the copy lies on the reference's points
    assert np.abs(copy_map.xy - ref_map.xy).max() < 1e-9
    assert np.abs(ref_map.xy - pca.embedding[:, :2]).max() == 0
    # zoom is linked to the reference
    assert copy_map.getPlotItem().getViewBox().linkedView(0) is ref_map.getPlotItem().getViewBox()
    # coloured like the main map: by the iris species
    species = w.session.current_dataset.labels
    assert len(set(copy_map.coloring.codes)) == 3
    assert np.array_equal(copy_map.coloring.codes, np.unique(species, return_inverse=True)[1].ravel())

    # not aligned: the maps show the runs as computed, unlinked, with no error in the titles
    view.set_aligned(False)
    assert np.abs(view.map_for(copy.id).xy - copy.embedding).max() == 0
    assert "disparity" not in view.map_for(copy.id).title_text
    assert view.map_for(copy.id).getPlotItem().getViewBox().linkedView(0) is None


def test_real_runs_have_a_disparity_and_default_to_the_latest_four(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:iris")
    runs = [w.session.run("pca", n_components=2), w.session.run("isomap", n_neighbors=10, n_components=2),
            w.session.run("lle", n_neighbors=12, n_components=2), w.session.run("pca", n_components=3),
            w.session.run("isomap", n_neighbors=20, n_components=2)]
    w.session.set_current_run(runs[-1].id)
    view = compare_view_of(qtbot, w)
    shown = [r.id for r in runs[1:]]
    assert sorted(m.run_id for m in view.maps) == shown  # the latest four
    assert view.run_list.count() == 5
    assert view.reference_id == runs[1].id
    for m in view.maps:
        if m.run_id == view.reference_id:
            continue
        # the title's figures are the alignment's
        assert title_number(m.title_text, "disparity") == pytest.approx(m.alignment.disparity, rel=2e-3)
        assert 0 <= m.alignment.disparity < 1
    # PCA with 3 components aligned onto Isomap: padded, fitted on all 150 rows
    assert view.map_for(runs[3].id).alignment.n_shared == 150
    # the 2-component PCA as the reference, without scaling: the 3-component PCA lies on it in
    # its first two axes, and what is left is its third axis (the 2-D map is padded with zeros)
    view.scale_check.setChecked(False)
    view.set_chosen([runs[0].id, runs[3].id], reference_id=runs[0].id)
    m3, e2, e3 = view.map_for(runs[3].id), runs[0].embedding, runs[3].embedding
    assert np.abs(m3.xy - e2).max() < 1e-9
    e2c = e2 - e2.mean(axis=0)
    third = e3[:, 2] - e3[:, 2].mean()
    assert m3.alignment.disparity == pytest.approx(np.sum(third ** 2) / np.sum(e2c ** 2), rel=1e-9)
    view.scale_check.setChecked(True)
    # unchecking a run in the list removes its map
    view.set_chosen(shown)
    item = next(view.run_list.item(i) for i in range(view.run_list.count())
                if view.run_list.item(i).data(Qt.ItemDataRole.UserRole) == runs[2].id)
    item.setCheckState(Qt.CheckState.Unchecked)
    assert sorted(m.run_id for m in view.maps) == [runs[1].id, runs[3].id, runs[4].id]


@pytest.mark.parametrize("with_overlay", [True, False], ids=["selection overlay", "own highlight"])
def test_selection_is_highlighted_in_every_small_map(qtbot, make_window, host, monkeypatch, with_overlay):
    if not with_overlay:  # the maps highlight the selection themselves
        monkeypatch.setattr(small_map, "selection_overlay", None)
    w = make_window(host)
    w.session.load("sample:iris")
    pca = w.session.run("pca", n_components=2)
    iso = w.session.run("isomap", n_neighbors=10, n_components=2)
    sub_rows = np.arange(20, 140)
    copy = add_copy(w.session, pca, moved(pca.embedding[sub_rows]), rows=sub_rows)
    view = compare_view_of(qtbot, w)
    assert len(view.maps) == 3
    assert all((m.overlay is not None) == (with_overlay and small_map.selection_overlay is not None)
               for m in view.maps)
    name = pca.dataset_name
    selected = np.array([0, 5, 33, 77, 121, 145])
    w.selection.select(name, selected)
    for m in view.maps:
        expected = np.intersect1d(selected, m.rows)
        assert np.array_equal(m.highlighted_rows(), expected)
        pos = np.searchsorted(m.rows, expected) if m.run_id != copy.id else expected - 20
        ring = (m._highlight if m.overlay is None else m.overlay._highlight).getData()
        assert np.allclose(np.column_stack(ring), m.xy[pos])  # the rings sit on those rows' points
    # a selection made "in" the third map (its rows) shows in the first
    w.selection.select(name, view.map_for(copy.id).rows[:3])
    assert np.array_equal(view.map_for(pca.id).highlighted_rows(), [20, 21, 22])
    assert np.array_equal(view.map_for(iso.id).highlighted_rows(), [20, 21, 22])
    w.selection.clear(name)
    assert all(m.highlighted_rows().size == 0 for m in view.maps)
    assert all(m._highlight is None for m in view.maps)


def test_rectangle_selection_in_one_small_map_highlights_the_rows_in_the_others(qtbot, make_window, host):
    if small_map.selection_overlay is None:
        pytest.skip("the selection overlay (rectangle / lasso) is not available yet")
    from PySide6.QtCore import QPointF

    w = make_window(host)
    w.session.load("sample:iris")
    pca = w.session.run("pca", n_components=2)
    iso = w.session.run("isomap", n_neighbors=10, n_components=2)
    sub_rows = np.arange(30, 150)
    copy = add_copy(w.session, pca, moved(pca.embedding[sub_rows]), rows=sub_rows)
    view = compare_view_of(qtbot, w)
    assert all(m.overlay is not None for m in view.maps)
    view.mode_bar.set_mode("rect")
    assert all(m.overlay.mode == "rect" for m in view.maps)
    src = view.map_for(iso.id)
    qtbot.waitUntil(lambda: src.getPlotItem().getViewBox().sceneBoundingRect().width() > 50, timeout=5_000)
    src.getPlotItem().getViewBox().autoRange()
    # a rectangle around the points of the left half of the Isomap map, with synthetic mouse moves
    x0, x1 = src.xy[:, 0].min() - 1, np.median(src.xy[:, 0])
    y0, y1 = src.xy[:, 1].min() - 1, src.xy[:, 1].max() + 1
    vb = src.getPlotItem().getViewBox()
    start, end = vb.mapViewToScene(QPointF(x0, y0)), vb.mapViewToScene(QPointF(x1, y1))
    ov = src.overlay
    ov.press(start)
    ov.move((start + end) / 2)
    ov.move(end)
    hit = ov.release(end)
    inside = (src.xy[:, 0] >= x0) & (src.xy[:, 0] <= x1)
    expected = np.sort(src.rows[inside])
    assert 40 < len(expected) < 110 and np.array_equal(np.sort(hit), expected)
    assert np.array_equal(w.selection.rows(pca.dataset_name), expected)
    for m in view.maps:  # the same rows, in every small map (the copy only has rows 30..149)
        assert np.array_equal(m.highlighted_rows(), np.intersect1d(expected, m.rows))
    copy_map = view.map_for(copy.id)
    ring = np.column_stack(copy_map.overlay._highlight.getData())
    assert np.allclose(ring, copy_map.xy[np.isin(copy_map.rows, expected)])


def test_runs_with_different_point_sets_align_on_shared_rows(qtbot, make_window, host):
    w = make_window(host)
    w.session.load("sample:iris")
    ref = w.session.run("pca", n_components=2, rows=np.arange(0, 100))
    full = w.session.run("pca", n_components=2)  # another fit: all 150 rows
    # a map of rows 60..149, in shuffled order, that is a moved copy of the reference where they overlap
    rows = np.random.default_rng(1).permutation(np.arange(60, 150))
    emb = np.zeros((len(rows), 2))
    emb[rows < 100] = moved(ref.embedding[rows[rows < 100]])
    emb[rows >= 100] = moved(full.embedding[rows[rows >= 100]])
    part = add_copy(w.session, ref, emb, rows=rows)
    far = add_copy(w.session, ref, moved(ref.embedding[98:100]).tolist() + [[0, 0]] * 30,
                   rows=np.r_[98, 99, np.arange(100, 130)])
    view = compare_view_of(qtbot, w)
    view.set_chosen([ref.id, part.id, far.id], reference_id=ref.id)
    res = view.map_for(part.id).alignment
    assert res.n_shared == 40 and res.rms < 1e-9
    assert np.array_equal(np.sort(rows[res.source_pos]), np.arange(60, 100))
    # every point of the partial run is drawn, the shared ones on the reference's
    m = view.map_for(part.id)
    assert len(m.xy) == 90
    shared = rows < 100
    assert np.abs(m.xy[shared] - ref.embedding[rows[shared]]).max() < 1e-9
    # two shared rows only: that map is shown unaligned with the reason, nothing else is lost
    far_map = view.map_for(far.id)
    assert far_map.alignment is None
    assert "not aligned" in far_map.title_text and "at least 3" in far_map.title_text
    assert "could not be aligned" in w.statusBar().currentMessage()
    assert set(w.session.runs) >= {ref.id, full.id, part.id, far.id}


def test_large_maps_are_aligned_in_a_job(qtbot, make_window, host):
    w = make_window(host)
    rng = np.random.default_rng(0)
    n = ALIGN_JOB_POINTS
    X = rng.normal(size=(n, 3))
    w.session.add_dataset(Dataset("big", X, labels=(X[:, 0] > 0).astype(int)))
    base = Run(id=1, algorithm_id="given", params={}, dataset_name="big", kind="embedding", status=DONE,
               embedding=X[:, :2].copy())
    w.session.add_run(base)
    copy = add_copy(w.session, base, moved(base.embedding))
    view = w.views["compare"]
    w.docks["view:compare"].show()
    w.docks["view:compare"].raise_()
    qtbot.waitUntil(view.isVisible, timeout=5_000)
    assert view.latest.job is not None  # 2 x 150,000 points: a background job
    qtbot.waitUntil(lambda: not view.latest.busy and view.drawn and len(view.maps) == 2, timeout=20_000)
    qtbot.waitUntil(lambda: view.map_for(copy.id) is not None and view.map_for(copy.id).alignment is not None,
                    timeout=20_000)
    assert view.map_for(copy.id).alignment.rms < 1e-9
    # large maps draw the same sample of rows in every map; selection and highlight use every point
    base_map, copy_map = view.map_for(base.id), view.map_for(copy.id)
    assert base_map.drawn is not None and 30_000 < len(base_map.drawn) < 50_000
    assert np.array_equal(base_map.rows[base_map.drawn], copy_map.rows[copy_map.drawn])
    assert "sample of rows" in view.info.text()
    selected = np.arange(0, n, 7)
    w.selection.select("big", selected)
    assert np.array_equal(copy_map.highlighted_rows(), selected)


def test_the_drawn_sample_depends_on_the_rows_only():
    rows = np.arange(200_000)
    shuffled = np.random.default_rng(3).permutation(rows)
    a, b = small_map.drawn_sample(rows, 10_000), small_map.drawn_sample(shuffled, 10_000)
    assert np.array_equal(np.sort(rows[a]), np.sort(shuffled[b]))
    assert 9_000 < len(a) < 11_000
    assert small_map.drawn_sample(rows[:5_000], 10_000) is None
