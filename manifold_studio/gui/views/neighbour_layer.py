"""Neighbours in the original space on the map (issue 31): with *Neighbours* on, a click on a
point highlights its k nearest neighbours in the prepared feature space (rings and lines from the
point) and lists them with their distances. The neighbour index of the data set is built once,
on a worker thread, and reused (:class:`~manifold_studio.analysis.map_neighbours.IndexCache`);
a distance-matrix data set answers from its distances. "How faithful is the map here" is a colour
option: the local trustworthiness of each point; its mean goes in the run's summary.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Qt, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QCheckBox, QListWidget, QSpinBox

from manifold_studio.analysis.map_neighbours import (
    IndexCache, Neighbours, distance_row_neighbours, map_faithfulness, original_neighbours,
)
from manifold_studio.errors import DataError
from manifold_studio.gui.flow_layout import group
from manifold_studio.gui.worker import LatestJob
from manifold_studio.session.isolated_fit import third_party_parts

FAITHFUL_COLOR_KEY = "faithfulness"
TRUST_K = 10
#: the run summary's keys: the global figure, and the rows it was estimated on when a sample
#: (:mod:`manifold_studio.gui.run_faithfulness`)
TRUST_KEY = f"local_trustworthiness_k{TRUST_K}"
SAMPLE_KEY = "local_trustworthiness_sample_rows"
Z_NEIGHBOURS = 25
#: above this many values a sparse data set is not densified for neighbours
MAX_DENSE_VALUES = 50_000_000


def feature_space(dataset, run):
    """The matrix the neighbours are searched in: the run's prepared data (its preparation
    steps applied) or the data set's features; the cache key says which."""
    if dataset.distance_matrix:
        return None, None
    if dataset.is_sparse and dataset.n_samples * dataset.n_features > MAX_DENSE_VALUES:
        raise DataError(f"Data set '{dataset.name}' is sparse with {dataset.n_samples:,} × "
                        f"{dataset.n_features:,} values: too large to search neighbours densely.")
    X = dataset.dense()
    est = getattr(run, "estimator", None)
    prep = getattr(est, "preparation", None) if est is not None else None
    if prep and run is not None and (run.rows is None or len(run.rows) == dataset.n_samples):
        foreign = third_party_parts([getattr(step, "id", "") for _, step in prep])
        if foreign:   # its transform would run here: the session's prepared data refuse it alike
            raise DataError(f"Run #{run.id}'s preparation goes through the third-party step '{foreign[0]}', which "
                            "runs in a worker process only, never in the window's: no neighbours in its prepared "
                            "space.")
        X = np.asarray(est.prepare(X), dtype=float)
        return X, (dataset.name, id(dataset.X), run.id)
    return X, (dataset.name, id(dataset.X), None)


def neighbours_task(cache: IndexCache, dataset, run, row: int, k: int, progress=None) -> Neighbours:
    if dataset.distance_matrix:
        return distance_row_neighbours(dataset.X, row, k)
    X, key = feature_space(dataset, run)
    return original_neighbours(cache.get(key, X, progress=progress), row, k)


def faithfulness_task(cache: IndexCache, dataset, run, xy, rows, progress=None):
    if len(rows) != dataset.n_samples or not np.array_equal(rows, np.arange(dataset.n_samples)):
        raise DataError("Map faithfulness needs a map of every row of the data set (this map shows "
                        f"{len(rows):,} of {dataset.n_samples:,}).")
    if dataset.distance_matrix:
        return xy, map_faithfulness(None, xy, TRUST_K, distances=dataset.X)
    X, key = feature_space(dataset, run)
    return xy, map_faithfulness(cache.get(key, X, progress=progress), xy, TRUST_K, progress=progress)


class NeighbourLayer(QObject):
    #: neighbours were shown (Neighbours)
    shown = Signal(object)

    def __init__(self, window, view, cache: IndexCache):
        super().__init__(view)
        self.window, self.view, self.cache = window, view, cache
        self.result: Neighbours | None = None
        self.latest = LatestJob()
        self._trust = (None, None)
        self._trust_job = LatestJob()
        self.box = QCheckBox("Neighbours")
        self.box.setObjectName("neighbour_layer")
        self.box.setToolTip("Click a point: its k nearest neighbours in the original (prepared) feature "
                            "space are highlighted and listed with their distances.")
        self.k_spin = QSpinBox()
        self.k_spin.setRange(1, 100)
        self.k_spin.setValue(10)
        self.k_spin.setPrefix("k=")
        self.list = QListWidget()
        self.select_action = QAction("Select the point and its neighbours", self.list)
        self.select_action.triggered.connect(lambda _=False: self.select())
        self.list.addAction(self.select_action)   # the list's context menu
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.lines = pg.PlotCurveItem(pen=pg.mkPen(200, 30, 30, 200, width=1.5), connect="pairs")
        self.rings = pg.ScatterPlotItem(size=11, pen=pg.mkPen(200, 30, 30, width=2), brush=None)
        self.centre = pg.ScatterPlotItem(size=15, symbol="star", pen=pg.mkPen("k"), brush=pg.mkBrush(200, 30, 30))
        for item in (self.lines, self.rings, self.centre):
            item.setZValue(Z_NEIGHBOURS)
            view.plot.addItem(item, ignoreBounds=True)
        self.box.toggled.connect(lambda on: None if on else self.clear())
        self.k_spin.valueChanged.connect(lambda _k: self.result and self.show_row(self.result.row))
        view.plot.scene().sigMouseClicked.connect(self._clicked)
        view.runShown.connect(lambda _run: self.clear())
        view.add_color_source(FAITHFUL_COLOR_KEY, f"map faithfulness (k={TRUST_K})", self.faithfulness_values)

    def widget(self):
        return group(self.box, self.k_spin)

    def _clicked(self, ev):
        if not self.box.isChecked() or ev.button() != Qt.MouseButton.LeftButton:
            return
        vb = self.view.plot_item.getViewBox()
        if not vb.sceneBoundingRect().contains(ev.scenePos()):
            return
        p = vb.mapSceneToView(ev.scenePos())
        i = self.view.nearest_point(p.x(), p.y())
        if i >= 0:
            self.show_row(int(self.view.rows[i]))

    def map_run(self):
        """The run whose map is drawn: its prepared data is the space of the neighbours (a
        clustering or classifier of a map: the run that made the map, not the 2-D input)."""
        finder = getattr(self.view, "map_run_for", None)
        run = self.view.run
        mapped = finder(run) if finder is not None else None
        return mapped if mapped is not None else run

    def show_row(self, row: int) -> None:
        """Find and show the neighbours of data-set ``row`` (on a worker thread)."""
        ds = self.view.dataset
        if ds is None:
            return
        self.latest.start(self.window, neighbours_task, self.cache, ds, self.map_run(), row,
                          self.k_spin.value(), title="Neighbours", on_success=self._draw,
                          on_failure=self._failed)

    def _failed(self, message, _detail):
        self.clear()
        self.list.addItem(f"Neighbours: {message}")
        status = self.window.show_status if self.window is not None else None
        if status is not None:
            status(f"Neighbours: {message}")

    def map_positions(self, rows: np.ndarray) -> np.ndarray:
        """Positions on the map of data-set ``rows`` (NaN for rows not drawn)."""
        view_rows = self.view.rows
        top = int(max(view_rows.max(initial=-1), rows.max(initial=-1))) + 1
        where = np.full(top, -1, dtype=np.intp)
        where[view_rows] = np.arange(len(view_rows))
        idx = where[rows]
        out = np.full((len(rows), 2), np.nan)
        out[idx >= 0] = self.view.xy[idx[idx >= 0]]
        return out

    def _draw(self, nb: Neighbours):
        self.result = nb
        centre = self.map_positions(np.array([nb.row]))[0]
        pos = self.map_positions(nb.rows)
        ok = np.isfinite(pos).all(axis=1)
        self.centre.setData(pos=[centre] if np.isfinite(centre).all() else [])
        self.rings.setData(pos=pos[ok])
        if np.isfinite(centre).all() and ok.any():
            pairs = np.empty((2 * int(ok.sum()), 2))
            pairs[0::2] = centre
            pairs[1::2] = pos[ok]
            self.lines.setData(pairs[:, 0], pairs[:, 1], connect="pairs")
        else:
            self.lines.setData([], [])
        ids = self.view.dataset.row_ids if self.view.dataset is not None else None
        self.list.clear()
        self.list.addItem(f"row {ids[nb.row] if ids is not None else nb.row}: {len(nb.rows)} nearest")
        for r, d in zip(nb.rows, nb.distances):
            self.list.addItem(f"  {ids[r] if ids is not None else r}   distance {d:.4g}")
        self.shown.emit(nb)

    def select(self) -> None:
        """Make the shown point and its neighbours the selection (linked with every view)."""
        ds = self.view.dataset
        if self.result is not None and ds is not None and self.window is not None:
            self.window.selection.select(ds.name, np.unique(np.r_[self.result.row, self.result.rows]))

    def clear(self):
        self.result = None
        self.lines.setData([], [])
        self.rings.setData(pos=np.zeros((0, 2)))
        self.centre.setData(pos=np.zeros((0, 2)))
        self.list.clear()

    # -- colour by map faithfulness -------------------------------------------------------
    def faithfulness_values(self):
        xy = self.view.xy
        if self._trust[0] is xy:
            return self._trust[1]
        ds = self.view.dataset
        if ds is not None and 0 < len(xy) <= TRUST_K + 1:
            status = self.window.show_status if self.window is not None else None
            if status is not None:
                status(f"Map faithfulness: it compares each point's {TRUST_K} nearest neighbours, so it needs "
                       f"at least {TRUST_K + 2} points; this map has {len(xy)}.")
        elif ds is not None and len(xy) > TRUST_K + 1:
            self._trust_job.start(self.window, faithfulness_task, self.cache, ds, self.map_run(), xy,
                                  self.view.rows, title="Map faithfulness", on_success=self._trust_ready,
                                  on_failure=self._failed)
        return None

    def _trust_ready(self, result):
        xy, values = result
        if xy is self.view.xy:
            self._trust = (xy, values)
            run = self.map_run()   # the figure of the map (a clustering of a map: its map run)
            if run is not None and isinstance(getattr(run, "summary", None), dict):
                run.summary[TRUST_KEY] = round(float(np.mean(values)), 4)   # every point's
                run.summary.pop(SAMPLE_KEY, None)
                if self.window is not None and self.window.run_log is not None:
                    self.window.run_log.refresh_run(run)   # the runs table shows the new figure
            self.view.encoding.changed.emit()
