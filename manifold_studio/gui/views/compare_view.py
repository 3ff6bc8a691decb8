"""Compare runs: a grid of small linked maps of several embedding runs of one data set, each
Procrustes-aligned to a reference run (:mod:`manifold_studio.procrustes`) so that rotations,
reflections and scale do not hide agreement, with the alignment error in each map's title.

The selection of the data set (``window.selection``) is highlighted in every small map; when
the maps are aligned their axes are linked, so zooming one zooms all. :class:`SmallMap` (one
small coloured map with the selection highlighted) is shared with the 3-D view's 2-D pairs.
"""
from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QGridLayout, QHBoxLayout, QLabel, QListWidget, QListWidgetItem, QVBoxLayout, QWidget,
)

from manifold_studio.gui.map_coords import as_map_xy
from manifold_studio.gui.views.base import ResultView, register_view
from manifold_studio.gui.views.palette import Coloring, make_coloring
from manifold_studio.gui.views.points_item import FastPointsItem
from manifold_studio.gui.widgets import message_label, say
from manifold_studio.gui.worker import LatestJob
from manifold_studio.procrustes import Alignment, align_all

#: runs checked when the view first shows a data set (the latest ones)
DEFAULT_RUNS = 4
#: above this many points a small map draws with FastPointsItem
SMALL_MAP_FAST = 20_000
#: above this many selected points the highlight is drawn with FastPointsItem
HIGHLIGHT_FAST = 5_000
#: aligning more points than this in total runs as a background job (> ~50 ms)
ALIGN_JOB_POINTS = 150_000


def _selection_overlay_module():
    """:mod:`.selection_overlay` (rectangle / lasso selection on a plot), or None without it."""
    try:
        from manifold_studio.gui.views import selection_overlay
    except ImportError:
        return None
    return selection_overlay


def shared_mode_bar(window, dataset_name, maps):
    """One Pan / Rectangle / Lasso bar for a group of small maps (``maps()`` -> list of
    :class:`SmallMap`; ``dataset_name()`` -> the name of their data set): its mode, "dim others"
    and Select all / Invert / Clear act on every map's selection overlay. None when the
    selection overlay is not available."""
    module = _selection_overlay_module()
    if module is None or window is None:
        return None
    bar = module.SelectionModeBar()

    def each_overlay(fn):
        for m in maps():
            if m.overlay is not None:
                fn(m.overlay)

    def on_dataset(fn):
        name = dataset_name()
        if name is not None and name in window.session.datasets:
            fn(name)

    bar.modeChanged.connect(lambda mode: each_overlay(lambda ov: ov.bar.set_mode(mode)))
    bar.dim_box.toggled.connect(lambda on: each_overlay(lambda ov: ov.bar.dim_box.setChecked(on)))
    bar.buttons["all"].clicked.connect(lambda: on_dataset(window.selection.select_all))
    bar.buttons["invert"].clicked.connect(lambda: on_dataset(window.selection.invert))
    bar.buttons["clear"].clicked.connect(lambda: on_dataset(window.selection.clear))
    return bar


def attach_selection_overlay(window, small_map: "SmallMap", mode_bar=None) -> None:
    """Give ``small_map`` a selection overlay (rectangle / lasso into ``window.selection``, and
    the highlight), following ``mode_bar``'s mode. Without the overlay module the map keeps
    its own highlight."""
    module = _selection_overlay_module()
    if module is None or window is None or small_map.dataset_name is None:
        return
    try:
        overlay = module.SelectionOverlay(window, small_map, small_map.points)
    except Exception as exc:  # noqa: BLE001 - selecting by hand is a bonus; the map still shows
        window.session.log(f"No selection tool on a small map ({type(exc).__name__}: {exc})", "warning")
        return
    small_map.overlay = overlay
    small_map._draw_highlight()  # the overlay draws the highlight from now on
    if mode_bar is not None:
        overlay.bar.set_mode(mode_bar.mode)
        overlay.bar.dim_box.setChecked(mode_bar.dim_box.isChecked())
    overlay.refresh()


class SmallMap(pg.PlotWidget):
    """One small map: points coloured by the data labels, the data set's selection highlighted,
    a title. ``points()`` gives ``(xy, rows, dataset_name)`` (what a selection overlay needs)."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.setMenuEnabled(False)
        self.hideButtons()
        self.setMinimumSize(150, 130)
        self.xy = np.zeros((0, 2))
        self.rows = np.zeros(0, dtype=np.intp)
        self.dataset_name: str | None = None
        self.coloring: Coloring | None = None
        self.title_text = ""
        self.highlighted = np.zeros(0, dtype=bool)  # which drawn points are shown as selected
        self.overlay = None
        self.run_id: int | None = None
        self.alignment: Alignment | None = None
        self._item = None
        self._highlight = None

    def set_title(self, text: str) -> None:
        """``text`` as the title (a " — " starts a second line, so narrow maps keep it whole)."""
        self.title_text = text
        self.setTitle(text.replace(" — ", "<br>"), size="9pt")

    def set_points(self, xy, rows, coloring: Coloring, dataset_name: str | None, title: str = "",
                   axis_names=("", "")) -> None:
        self.xy = as_map_xy(xy) if len(xy) else np.zeros((0, 2))
        self.rows = np.asarray(rows, dtype=np.intp)
        self.dataset_name = dataset_name
        self.coloring = coloring
        self.set_title(title)
        self.setLabel("bottom", axis_names[0])
        self.setLabel("left", axis_names[1])
        if self._item is not None:
            self.removeItem(self._item)
        finite = np.isfinite(self.xy).all(axis=1)
        xy, codes = (self.xy, coloring.codes) if finite.all() else (self.xy[finite], coloring.codes[finite])
        if len(xy) > SMALL_MAP_FAST:
            item = FastPointsItem(size=1)
            item.set_data(xy, codes, coloring.colors)
        else:
            brushes = [pg.mkBrush(*(int(c) for c in rgb), 220) for rgb in coloring.colors]
            item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], size=5, pen=None,
                                      brush=[brushes[c] for c in codes], hoverable=False)
        self._item = item
        self.addItem(item)
        self.highlighted = np.zeros(len(self.xy), dtype=bool)
        self._draw_highlight()
        self.getPlotItem().enableAutoRange()

    def points(self):
        """(xy (n, 2), data-set rows (n,), data-set name) of the drawn points."""
        return self.xy, self.rows, self.dataset_name

    def show_selection(self, mask: np.ndarray) -> None:
        """Highlight the drawn points whose data-set row is True in ``mask`` (a mask over the
        data set's rows)."""
        mask = np.asarray(mask, dtype=bool)
        if len(self.rows) and mask.size > int(self.rows.max()):
            self.highlighted = mask[self.rows]
        else:
            self.highlighted = np.zeros(len(self.rows), dtype=bool)
        self._draw_highlight()

    def highlighted_rows(self) -> np.ndarray:
        """Data-set rows of the highlighted points (by the overlay, or by the map), sorted."""
        if self.overlay is not None:
            return np.unique(self.rows[self.overlay.highlighted])
        return np.unique(self.rows[self.highlighted])

    def _draw_highlight(self) -> None:
        if self._highlight is not None:
            self.removeItem(self._highlight)
            self._highlight = None
        if self.overlay is not None or not self.highlighted.any():
            return  # a selection overlay draws the selection itself
        xy = self.xy[self.highlighted]
        if len(xy) > HIGHLIGHT_FAST:
            item = FastPointsItem(size=2)
            item.set_data(xy, np.zeros(len(xy), dtype=np.intp), np.array([[0, 0, 0]], dtype=np.uint8))
        else:
            item = pg.ScatterPlotItem(x=xy[:, 0], y=xy[:, 1], size=8, pen=pg.mkPen(0, 0, 0, width=1.5),
                                      brush=None, hoverable=False)
        item.setZValue(100)
        self._highlight = item
        self.addItem(item, ignoreBounds=True)


def embedding_runs(session, dataset_name: str | None) -> list:
    """Finished runs of ``dataset_name`` that have an embedding (oldest first)."""
    if dataset_name is None:
        return []
    return [r for r in session.runs.values()
            if r.dataset_name == dataset_name and r.succeeded and r.embedding is not None
            and np.ndim(r.embedding) in (1, 2) and len(r.embedding)]


def dataset_coloring(dataset, rows) -> Coloring:
    """Colours of the points at ``rows`` by the data set's labels, as the main map colours them."""
    rows = np.asarray(rows)
    labels = None
    if dataset is not None and dataset.labels is not None and len(dataset.labels) > int(rows.max(initial=-1)):
        labels = np.asarray(dataset.labels)[rows]
    return make_coloring(labels, len(rows), getattr(dataset, "label_name", "") or "label")


@register_view
class CompareView(ResultView):
    view_id = "compare"
    title = "Compare runs"
    area = "right"
    order = 60

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.dataset_name: str | None = None
        self.maps: list[SmallMap] = []
        #: run id -> Alignment (or the message saying why that run could not be aligned)
        self.alignments: dict[int, Alignment | str] = {}
        self.reference_id: int | None = None
        self.latest = LatestJob()
        self._chosen: list[int] | None = None  # None: the latest DEFAULT_RUNS
        self._eligible: list[int] = []
        self._dirty = False

        self.run_list = QListWidget()
        self.run_list.setToolTip("The runs shown side by side (embedding runs of this data set).")
        self.run_list.setMaximumHeight(84)
        self.run_list.itemChanged.connect(self._on_item_changed)
        self.reference_combo = QComboBox()
        self.reference_combo.setToolTip("The run the other maps are aligned to.")
        self.reference_combo.currentIndexChanged.connect(self._on_reference_changed)
        self.align_check = QCheckBox("align (Procrustes)")
        self.align_check.setChecked(True)
        self.align_check.setToolTip("Rotate, reflect, shift (and scale) each map onto the reference, fitted on the "
                                    "points they share; the titles give the remaining disparity and RMS error.")
        self.align_check.toggled.connect(self._on_options_changed)
        self.scale_check = QCheckBox("scale")
        self.scale_check.setChecked(True)
        self.scale_check.setToolTip("Also scale each map to the reference (an isotropic factor).")
        self.scale_check.toggled.connect(self._on_options_changed)
        self.info = message_label("Compare runs: run two or more embedding methods on the same data set.")

        options = QVBoxLayout()
        ref_row = QHBoxLayout()
        ref_row.addWidget(QLabel("Reference:"))
        ref_row.addWidget(self.reference_combo, 1)
        options.addLayout(ref_row)
        options.addWidget(self.align_check)
        options.addWidget(self.scale_check)
        options.addStretch(1)
        top = QHBoxLayout()
        top.addWidget(self.run_list, 1)
        top.addLayout(options)
        self.grid_host = QWidget()
        self.grid = QGridLayout(self.grid_host)
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(2)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addLayout(top)
        #: Pan / Rectangle / Lasso for every small map (None without the selection overlay)
        self.mode_bar = shared_mode_bar(window, lambda: self.dataset_name, lambda: self.maps)
        if self.mode_bar is not None:
            layout.addWidget(self.mode_bar)
        layout.addWidget(self.info)
        layout.addWidget(self.grid_host, 1)

        if window is not None:
            window.bridge.runChanged.connect(self._on_runs_changed)
            window.selection.changed.connect(self._on_selection_changed)

    # -- ResultView -------------------------------------------------------------------------
    def applies_to(self, run) -> bool:
        return run is not None and self.window is not None \
            and len(embedding_runs(self.window.session, run.dataset_name)) >= 2

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        name = run.dataset_name if run is not None else None
        if name != self.dataset_name:
            self.dataset_name, self._chosen, self.reference_id = name, None, None
        self.refresh()

    # -- public API -------------------------------------------------------------------------
    def chosen_runs(self) -> list:
        """The runs shown (checked in the list), oldest first."""
        runs = {r.id: r for r in embedding_runs(self.window.session, self.dataset_name)}
        if self._chosen is None:
            return list(runs.values())[-DEFAULT_RUNS:]
        return [runs[i] for i in self._chosen if i in runs]

    def set_chosen(self, run_ids, reference_id: int | None = None) -> None:
        """Show these runs (ids), aligned to ``reference_id`` (default: keep, or the first)."""
        self._chosen = list(run_ids)
        if reference_id is not None:
            self.reference_id = reference_id
        self.refresh()

    def set_aligned(self, on: bool) -> None:
        self.align_check.setChecked(on)

    def map_for(self, run_id: int) -> SmallMap | None:
        return next((m for m in self.maps if getattr(m, "run_id", None) == run_id), None)

    def refresh(self) -> None:
        """Rebuild the run list and the grid (deferred while the view is hidden)."""
        if self.window is None:
            return
        if not self.isVisible():
            self._dirty = True
            return
        self._dirty = False
        runs = embedding_runs(self.window.session, self.dataset_name)
        self._eligible = [r.id for r in runs]
        chosen = self.chosen_runs()
        chosen_ids = {r.id for r in chosen}
        self.run_list.blockSignals(True)
        self.run_list.clear()
        for r in reversed(runs):  # newest first
            k = r.embedding.shape[1] if np.ndim(r.embedding) == 2 else 1
            item = QListWidgetItem(f"#{r.id} {r.algorithm_name or r.algorithm_id} ({k}-D, {r.n_points:,} points)")
            item.setData(Qt.ItemDataRole.UserRole, r.id)
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
            item.setCheckState(Qt.CheckState.Checked if r.id in chosen_ids else Qt.CheckState.Unchecked)
            self.run_list.addItem(item)
        self.run_list.blockSignals(False)
        if self.reference_id not in chosen_ids:
            self.reference_id = chosen[0].id if chosen else None
        self.reference_combo.blockSignals(True)
        self.reference_combo.clear()
        for r in chosen:
            self.reference_combo.addItem(f"#{r.id} {r.algorithm_id}", r.id)
        self.reference_combo.setCurrentIndex(max(0, self.reference_combo.findData(self.reference_id)))
        self.reference_combo.blockSignals(False)
        self.scale_check.setEnabled(self.align_check.isChecked())
        self._compute(chosen)

    # -- alignment ----------------------------------------------------------------------------
    def _compute(self, chosen: list) -> None:
        self.latest.drop()
        self.alignments = {}
        if len(chosen) < 2:
            self._draw(chosen)
            say(self.info, "Compare runs: run two or more embedding methods on this data set and check them "
                           "in the list." if self.dataset_name else "Compare runs: load data and run two or more "
                                                                     "embedding methods.")
            return
        ref = self.window.session.runs[self.reference_id]
        others = {r.id: (r.embedding, r.point_index) for r in chosen if r.id != ref.id}
        if not self.align_check.isChecked():
            self._draw(chosen)
            return
        scale = self.scale_check.isChecked()
        total = ref.n_points + sum(len(c) for c, _rows in others.values())
        if total <= ALIGN_JOB_POINTS:
            self._aligned(chosen, align_all(ref.embedding, ref.point_index, others, scale=scale))
            return
        say(self.info, f"Aligning {len(others)} map(s) onto run #{ref.id}…")
        self.latest.start(self.window, align_all, ref.embedding, ref.point_index, others, scale=scale,
                          title="Aligning runs", on_success=lambda result: self._aligned(chosen, result),
                          on_failure=lambda msg, _detail: self._align_failed(chosen, msg))

    def _aligned(self, chosen: list, result: dict) -> None:
        self.alignments = dict(result)
        self._draw(chosen)
        failed = [f"#{rid}: {msg}" for rid, msg in self.alignments.items() if isinstance(msg, str)]
        if failed:
            self.window.report_error("Some runs could not be aligned — " + "; ".join(failed), log=False)

    def _align_failed(self, chosen: list, message: str) -> None:
        self.window.report_error(f"Aligning the runs failed: {message}", log=False)
        self._draw(chosen)

    # -- drawing ------------------------------------------------------------------------------
    def _clear_grid(self) -> None:
        for m in self.maps:
            self.grid.removeWidget(m)
            m.overlay = None
            m.setParent(None)
            m.deleteLater()
        self.maps = []

    def _draw(self, chosen: list) -> None:
        self._clear_grid()
        if not chosen:
            return
        dataset = self.window.session.datasets.get(self.dataset_name)
        ref_id = self.reference_id
        ordered = sorted(chosen, key=lambda r: (r.id != ref_id, r.id))  # reference first
        cols = max(1, math.ceil(math.sqrt(len(ordered))))
        aligned_mode = self.align_check.isChecked() and len(ordered) > 1
        ref_map = None
        for n, run in enumerate(ordered):
            m = SmallMap()
            m.run_id = run.id
            result = self.alignments.get(run.id)
            m.alignment = result if isinstance(result, Alignment) else None
            xy = m.alignment.aligned if m.alignment is not None else run.embedding
            name = f"#{run.id} {run.algorithm_id}"
            if not aligned_mode:
                title = name
            elif run.id == ref_id:
                title = f"{name} — reference"
            elif m.alignment is not None:
                title = f"{name} — disparity {m.alignment.disparity:.3g}, RMS {m.alignment.rms:.3g}"
            else:
                title = f"{name} — not aligned: {result}" if result else name
            m.set_points(xy, run.point_index, dataset_coloring(dataset, run.point_index), self.dataset_name, title)
            m.setToolTip(f"{run.title()} ({run.params_text()})"
                         + (f"\n{m.alignment.describe()}" if m.alignment is not None else ""))
            if aligned_mode:  # the reference keeps true proportions; the others follow its ranges
                if ref_map is None:
                    ref_map = m
                    m.getPlotItem().getViewBox().setAspectLocked(True)
                else:
                    m.setXLink(ref_map)
                    m.setYLink(ref_map)
            attach_selection_overlay(self.window, m, self.mode_bar)
            self.grid.addWidget(m, n // cols, n % cols)
            self.maps.append(m)
        if aligned_mode and ref_map is not None:
            self._fit_linked_range(ref_map)
        self._on_selection_changed(self.dataset_name)
        if aligned_mode:
            say(self.info, f"{len(ordered)} runs aligned to run #{ref_id} (Procrustes: translation, rotation/"
                           f"reflection{', scale' if self.scale_check.isChecked() else ''}); zoom is linked.")
        else:
            say(self.info, f"{len(ordered)} runs as computed (not aligned).")

    def _fit_linked_range(self, ref_map: SmallMap) -> None:
        """Linked maps share one range: the union of every map's points (auto-range on each
        would make them fight through the links)."""
        boxes = []
        for m in self.maps:
            m.getPlotItem().disableAutoRange()
            xy = m.xy[np.isfinite(m.xy).all(axis=1)]
            if len(xy):
                boxes.append((xy.min(axis=0), xy.max(axis=0)))
        if boxes:
            lo = np.min([b[0] for b in boxes], axis=0)
            hi = np.max([b[1] for b in boxes], axis=0)
            ref_map.getPlotItem().getViewBox().setRange(xRange=(lo[0], hi[0]), yRange=(lo[1], hi[1]), padding=0.05)

    # -- signals ------------------------------------------------------------------------------
    def _on_selection_changed(self, name: str) -> None:
        if name is None or name != self.dataset_name or self.window is None:
            return
        mask = self.window.selection.mask(name)
        for m in self.maps:
            m.show_selection(mask)

    def _on_runs_changed(self, run) -> None:
        if self.dataset_name is None or (run is not None and run.dataset_name != self.dataset_name):
            return
        ids = [r.id for r in embedding_runs(self.window.session, self.dataset_name)]
        if ids != self._eligible or self._dirty:
            self.refresh()

    def _on_item_changed(self, _item) -> None:
        ids = []
        for i in range(self.run_list.count()):
            it = self.run_list.item(i)
            if it.checkState() == Qt.CheckState.Checked:
                ids.append(int(it.data(Qt.ItemDataRole.UserRole)))
        self._chosen = sorted(ids)
        self.refresh()

    def _on_reference_changed(self, _index) -> None:
        rid = self.reference_combo.currentData()
        if rid is not None and rid != self.reference_id:
            self.reference_id = int(rid)
            self.refresh()

    def _on_options_changed(self, _on=None) -> None:
        self.refresh()

    def showEvent(self, event) -> None:
        super().showEvent(event)
        if self._dirty:
            self.refresh()
