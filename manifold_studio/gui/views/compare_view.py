"""Compare runs: a grid of small linked maps of several embedding runs of one data set, each
Procrustes-aligned to a reference run (:mod:`manifold_studio.analysis.procrustes`) so that rotations,
reflections and scale do not hide agreement, with the alignment error in each map's title.

The selection of the data set (``window.selection``) is highlighted in every small map; when
the maps are aligned their axes are linked, so zooming one zooms all. :class:`SmallMap` (one
small coloured map with the selection highlighted) is shared with the 3-D view's 2-D pairs.
"""
from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.analysis.procrustes import Alignment, align
from manifold_studio.errors import DataError
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import Coloring
from manifold_studio.gui.views.small_map import (
    SmallMap,
    attach_selection_overlay,
    dataset_coloring,
    drawn_sample,
    finite_bounds,
    shared_mode_bar,
)
from manifold_studio.gui.widgets import message_label, say
from manifold_studio.gui.worker import LatestJob
from manifold_studio.analysis.map_coords import as_map_xy

#: runs checked when the view first shows a data set (the latest ones)
DEFAULT_RUNS = 4
#: preparing more points than this in total (aligning, bounds, samples) runs as a background job
ALIGN_JOB_POINTS = 150_000


@dataclass
class PreparedMap:
    """What one small map draws, computed off the main thread for large maps."""

    run_id: int
    xy: np.ndarray                     # (n, 2): aligned (or as computed) first two coordinates
    rows: np.ndarray                   # (n,) data-set rows
    drawn: np.ndarray | None           # positions drawn (None: all)
    bounds: tuple | None               # ((xmin, ymin), (xmax, ymax)) of the finite points
    coloring: Coloring | None = None   # by the data set's labels
    alignment: Alignment | None = None
    error: str = ""                    # why it could not be aligned


def prepare_maps(reference_id: int | None, runs: dict, *, aligned: bool = True, scale: bool = True,
                 dataset=None, progress=None) -> dict[int, PreparedMap]:
    """Align every run of ``runs`` (``{run id: (embedding, rows)}``) onto the reference run and
    compute what each small map draws (coordinates, sample, bounds, colours by ``dataset``'s
    labels). Numpy only, vectorised: a job for large maps."""
    progress = as_progress(progress)
    out: dict[int, PreparedMap] = {}
    ref = runs.get(reference_id) if aligned else None
    for n, (rid, (emb, rows)) in enumerate(runs.items()):
        progress.checkpoint(n / max(len(runs), 1), f"Preparing map {n + 1} of {len(runs)}")
        rows = np.asarray(rows)
        result, error = None, ""
        if ref is not None and rid != reference_id:
            try:
                result = align(ref[0], emb, reference_rows=ref[1], source_rows=rows, scale=scale)
            except DataError as exc:
                error = str(exc)
        xy = as_map_xy(result.aligned if result is not None else emb)
        out[rid] = PreparedMap(rid, xy, rows, drawn_sample(rows), finite_bounds(xy), dataset_coloring(dataset, rows),
                               result, error)
    progress.checkpoint(1.0, "Maps ready")
    return out


def embedding_runs(session, dataset_name: str | None) -> list:
    """Finished runs of ``dataset_name`` that have an embedding (oldest first)."""
    if dataset_name is None:
        return []
    return [r for r in session.runs.values()
            if r.dataset_name == dataset_name and r.succeeded and r.embedding is not None
            and np.ndim(r.embedding) in (1, 2) and len(r.embedding)]


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
        self._draw_token = 0
        #: the grid shows the current choice (False while it is being prepared or drawn)
        self.drawn = False

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

        # a finished run arrives twice (runChanged, then show_run): runChanged schedules a rebuild
        # for the end of the event-loop turn, and show_run's rebuild cancels it
        self._refresh_timer = QTimer(self)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.setInterval(0)
        self._refresh_timer.timeout.connect(self.refresh)
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
        self._refresh_timer.stop()   # a rebuild scheduled for this turn is this one
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
        self._draw_token += 1  # a drawing still under way is out of date
        self.drawn = False
        self.alignments = {}
        if len(chosen) < 2:
            say(self.info, "Compare runs: run two or more embedding methods on this data set and check them "
                           "in the list." if self.dataset_name else "Compare runs: load data and run two or more "
                                                                     "embedding methods.")
        runs = {r.id: (r.embedding, r.point_index) for r in chosen}
        aligned = self.align_check.isChecked() and len(chosen) > 1
        kwargs = dict(aligned=aligned, scale=self.scale_check.isChecked(),
                      dataset=self.window.session.datasets.get(self.dataset_name))
        if sum(r.n_points for r in chosen) <= ALIGN_JOB_POINTS:
            self._prepared(chosen, prepare_maps(self.reference_id, runs, **kwargs))
            return
        say(self.info, f"Preparing {len(chosen)} maps" + (f" (aligning onto run #{self.reference_id})…"
                                                          if aligned else "…"))
        self.latest.start(self.window, prepare_maps, self.reference_id, runs, **kwargs,
                          title="Aligning runs", on_success=lambda result: self._prepared(chosen, result),
                          on_failure=lambda msg, _detail: self._prepare_failed(msg))

    def _prepared(self, chosen: list, prepared: dict) -> None:
        self.alignments = {rid: (p.alignment if p.alignment is not None else p.error)
                           for rid, p in prepared.items() if p.alignment is not None or p.error}
        self._draw(chosen, prepared)
        failed = [f"#{rid}: {p.error}" for rid, p in prepared.items() if p.error]
        if failed:
            self.window.report_error("Some runs could not be aligned — " + "; ".join(failed), log=False)

    def _prepare_failed(self, message: str) -> None:
        self.window.report_error(f"Comparing the runs failed: {message}", log=False)
        say(self.info, f"Comparing the runs failed: {message}", True)

    # -- drawing ------------------------------------------------------------------------------
    def _map_pool(self, count: int) -> list[SmallMap]:
        """``count`` small maps in the grid (reused from the last draw where possible)."""
        while len(self.maps) > count:
            m = self.maps.pop()
            self.grid.removeWidget(m)
            m.setParent(None)
            m.deleteLater()
        while len(self.maps) < count:
            self.maps.append(SmallMap())
        cols = max(1, math.ceil(math.sqrt(count)))
        for n, m in enumerate(self.maps):
            self.grid.addWidget(m, n // cols, n % cols)
            vb = m.getPlotItem().getViewBox()
            vb.setXLink(None)
            vb.setYLink(None)
            vb.setAspectLocked(False)
        return self.maps

    def _draw(self, chosen: list, prepared: dict) -> None:
        """Fill the grid; maps of more than :data:`ALIGN_JOB_POINTS` points in total are drawn one
        per turn of the event loop (each takes tens of ms at a million points)."""
        ref_id = self.reference_id
        ordered = [r for r in sorted(chosen, key=lambda r: (r.id != ref_id, r.id)) if r.id in prepared]
        aligned_mode = self.align_check.isChecked() and len(ordered) > 1
        maps = self._map_pool(len(ordered))
        steps = [functools.partial(self._draw_one, m, run, prepared[run.id], aligned_mode)
                 for m, run in zip(maps, ordered)]
        steps.append(functools.partial(self._finish_draw, maps, ordered, prepared, aligned_mode))
        self._draw_token += 1
        if sum(len(p.xy) for p in prepared.values()) <= ALIGN_JOB_POINTS:
            for step in steps:
                step()
            return
        token = self._draw_token

        def next_step():
            if token == self._draw_token and steps:
                steps.pop(0)()
                if steps:
                    QTimer.singleShot(0, next_step)

        next_step()

    def _draw_one(self, m: SmallMap, run, p: PreparedMap, aligned_mode: bool) -> None:
        m.run_id, m.alignment = run.id, p.alignment
        name = f"#{run.id} {run.algorithm_id}"
        if not aligned_mode:
            title = name
        elif run.id == self.reference_id:
            title = f"{name} — reference"
        elif p.alignment is not None:
            title = f"{name} — disparity {p.alignment.disparity:.3g}, RMS {p.alignment.rms:.3g}"
        else:
            title = f"{name} — not aligned: {p.error}"
        m.set_points(p.xy, p.rows, p.coloring, self.dataset_name, title,
                     drawn=p.drawn, auto_range=not aligned_mode)
        m.setToolTip(f"{run.title()} ({run.params_text()})"
                     + (f"\n{p.alignment.describe()}" if p.alignment is not None else "")
                     + (f"\n{m.drawn_count():,} of {len(p.xy):,} points drawn" if p.drawn is not None else ""))
        if m.overlay is None:
            attach_selection_overlay(self.window, m, self.mode_bar)
        m.show_selection(self.window.selection.mask(self.dataset_name))

    def _finish_draw(self, maps: list, ordered: list, prepared: dict, aligned_mode: bool) -> None:
        if aligned_mode and maps:
            self._link(maps, [prepared[r.id].bounds for r in ordered])
        sampled = sum(prepared[r.id].drawn is not None for r in ordered)
        note = f" Large maps: {sampled} drawn as a sample of rows (selection uses every point)." if sampled else ""
        if aligned_mode:
            say(self.info, f"{len(ordered)} runs aligned to run #{self.reference_id} (Procrustes: translation, "
                           f"rotation/reflection{', scale' if self.scale_check.isChecked() else ''}); zoom is "
                           f"linked.{note}")
        elif ordered:
            say(self.info, f"{len(ordered)} runs as computed (not aligned).{note}")
        self.drawn = True

    def _link(self, maps: list[SmallMap], bounds: list) -> None:
        """Link every map's axes to the first (the reference, true proportions) and show the
        union of all maps' points (auto-range on each would make them fight through the links)."""
        for m in maps:
            m.getPlotItem().disableAutoRange()
        ref_vb = maps[0].getPlotItem().getViewBox()
        ref_vb.setAspectLocked(True)
        for m in maps[1:]:
            m.setXLink(maps[0])
            m.setYLink(maps[0])
        boxes = [b for b in bounds if b is not None]
        if boxes:
            lo = np.min([b[0] for b in boxes], axis=0)
            hi = np.max([b[1] for b in boxes], axis=0)
            ref_vb.setRange(xRange=(lo[0], hi[0]), yRange=(lo[1], hi[1]), padding=0.05)

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
            self._dirty = True
            self._refresh_timer.start()

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
