"""Dendrogram of a hierarchical clustering run, with a cut line to choose the number of clusters.

The coordinates come from ``scipy.cluster.hierarchy.dendrogram(no_plot=True)`` on the run's
``linkage_matrix_`` (computed on a worker thread, truncated to the last merges for large trees).
Dragging the horizontal cut line shows how many clusters a cut at that height gives; releasing
it recolours the map with the clusters of the cut (``fcluster`` on the linkage, no refit), and
the silhouette and contingency views follow. "Run's cut" restores the run's own partition.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QVBoxLayout

from manifold_studio.gui.cluster_overlay import ClusterOverlay
from manifold_studio.gui.cluster_tasks import DendrogramResult, cut_labels, dendrogram_task, n_clusters_at
from manifold_studio.gui.views.base import ResultView, register_view
from manifold_studio.gui.worker import LatestJob

MAX_LEAF_LABELS = 40


def _linkage(run):
    Z = getattr(run.estimator, "linkage_matrix_", None) if run is not None else None
    if Z is None:
        return None
    Z = np.asarray(Z, dtype=float)
    return Z if Z.ndim == 2 and Z.shape[0] >= 1 and Z.shape[1] == 4 else None


def height_for(Z: np.ndarray, k: int) -> float:
    """A cut height that gives ``k`` clusters: midway between the merge heights around it."""
    hs = np.sort(Z[:, 2])
    L = hs.size + 1
    k = int(min(max(k, 1), L))
    if k == 1:
        return float(hs[-1] * 1.05 + 1e-12)
    upper = hs[L - k]
    lower = hs[L - k - 1] if L - k - 1 >= 0 else 0.0
    return float((lower + upper) / 2.0)


@register_view
class DendrogramView(ResultView):
    view_id = "dendrogram"
    title = "Dendrogram"
    area = "right"
    order = 30

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.result: DendrogramResult | None = None
        self.Z: np.ndarray | None = None
        self.latest = LatestJob()
        self._curve = pg.PlotCurveItem(pen=pg.mkPen(40, 40, 40, width=1.2), connect="pairs")
        self.info = QLabel("Dendrogram of a hierarchical clustering run.")
        self.info.setWordWrap(True)
        self.cut_label = QLabel("")
        self.cut_label.setStyleSheet("font-weight: bold; color: #b00020;")
        self.reset_button = QPushButton("Run's cut")
        self.reset_button.setToolTip("Back to the partition the run computed.")
        self.reset_button.clicked.connect(self.reset_cut)
        self.reset_button.setEnabled(False)
        self.plot = pg.PlotWidget()
        self.plot.setMenuEnabled(False)
        self.plot.setLabel("left", "merge height")
        self.plot.showGrid(x=False, y=True, alpha=0.2)
        self.plot.addItem(self._curve)
        self.cut_line = pg.InfiniteLine(angle=0, movable=True,
                                        pen=pg.mkPen(200, 0, 30, width=2, style=Qt.PenStyle.DashLine),
                                        hoverPen=pg.mkPen(255, 0, 40, width=3))
        self.cut_line.setToolTip("Drag to cut the tree at another height: the map is recoloured "
                                 "with the clusters of the cut (no refit).")
        self.cut_line.setZValue(10)
        self.cut_line.hide()
        self.plot.addItem(self.cut_line)
        self.cut_line.sigPositionChanged.connect(self._line_moving)
        self.cut_line.sigPositionChangeFinished.connect(lambda _l: self.apply_cut())
        top = QHBoxLayout()
        top.addWidget(self.cut_label, 1)
        top.addWidget(self.reset_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addLayout(top)
        lay.addWidget(self.plot, 1)

    def applies_to(self, run) -> bool:
        return run is not None and run.succeeded and _linkage(run) is not None

    @property
    def busy(self) -> bool:
        return self.latest.busy

    @property
    def leaves(self) -> str:
        return getattr(self.run.estimator, "linkage_leaves_", "points") if self.run is not None else "points"

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.latest.drop()
        self.Z = _linkage(run)
        if self.Z is None or self.window is None:
            self._draw(None)
            return
        sizes = getattr(run.estimator, "cluster_sizes_", None)
        self.info.setText(f"{run.title()}: drawing the dendrogram…")
        self.latest.start(
            self.window, dendrogram_task, self.Z, leaves=self.leaves, leaf_sizes=sizes, title="Dendrogram",
            on_success=lambda res, run=run: self._done(run, res),
            on_failure=lambda msg, detail: self._failed(msg))

    def _done(self, run, result: DendrogramResult) -> None:
        self._draw(result)
        leaves = "clusters (divisive tree)" if self.leaves == "clusters" else "points"
        trunc = f"; the last {result.n_leaves} merges are drawn" if result.truncated else ""
        self.info.setText(f"{run.title()} ({run.params.get('method', '')}): {self.Z.shape[0] + 1:,} leaves "
                          f"= {leaves}{trunc}. Drag the red line to cut the tree.")
        labels = ClusterOverlay.for_window(self.window).labels_for(run)
        k = int(np.unique(labels).size) if labels is not None else 1
        h = ClusterOverlay.for_window(self.window).labels_note(run)
        self.cut_line.blockSignals(True)
        self.cut_line.setValue(self._cut_height if h and self._cut_height is not None else height_for(self.Z, k))
        self.cut_line.blockSignals(False)
        self.cut_line.show()
        self._line_moving()
        self.reset_button.setEnabled(bool(h))

    def _failed(self, message) -> None:
        self._draw(None)
        self.info.setText(f"No dendrogram: {message}")

    _cut_height = None

    def _draw(self, result: DendrogramResult | None) -> None:
        self.result = result
        axis = self.plot.getPlotItem().getAxis("bottom")
        if result is None:
            self._curve.setData([], [])
            self.cut_line.hide()
            self.cut_label.setText("")
            axis.setTicks(None)
            return
        # each U link is three segments: (x0,y0)-(x1,y1), (x1,y1)-(x2,y2), (x2,y2)-(x3,y3)
        ic, dc = result.icoord, result.dcoord
        xs = np.stack([ic[:, 0], ic[:, 1], ic[:, 1], ic[:, 2], ic[:, 2], ic[:, 3]], axis=1).ravel()
        ys = np.stack([dc[:, 0], dc[:, 1], dc[:, 1], dc[:, 2], dc[:, 2], dc[:, 3]], axis=1).ravel()
        self._curve.setData(xs, ys)
        positions = 5.0 + 10.0 * np.arange(result.n_leaves)
        if result.n_leaves <= MAX_LEAF_LABELS:
            axis.setTicks([[(float(p), t) for p, t in zip(positions, result.leaf_text)]])
            self.plot.setLabel("bottom", "leaves")
        else:
            axis.setTicks([[]])
            self.plot.setLabel("bottom", f"{result.n_leaves} leaves" + (" (subtrees)" if result.truncated else ""))
        self.plot.setXRange(0, 10.0 * result.n_leaves, padding=0.02)
        self.plot.setYRange(0, result.max_height * 1.08, padding=0.0)

    # -- the cut --------------------------------------------------------------------------------
    @property
    def cut_height(self) -> float:
        return float(self.cut_line.value())

    def clusters_at(self, height: float) -> int:
        if self.Z is None:
            return 0
        return n_clusters_at(self.Z, height)

    def _line_moving(self, *_):
        if self.Z is None:
            return
        h = self.cut_height
        self.cut_label.setText(f"cut at {h:.4g}: {self.clusters_at(h)} clusters")

    def set_cut_height(self, height: float) -> np.ndarray | None:
        """Move the cut line to ``height`` and apply the cut (as when the user releases it)."""
        self.cut_line.setValue(float(height))
        return self.apply_cut()

    def apply_cut(self) -> np.ndarray | None:
        """Recolour the map with the clusters of the current cut (fcluster; no refit)."""
        run = self.run
        if run is None or self.Z is None or self.window is None:
            return None
        h = max(self.cut_height, 0.0)
        labels = cut_labels(self.Z, h, leaves=self.leaves, leaf_labels=run.labels)
        k = int(np.unique(labels).size)
        self._cut_height = h
        if run.labels is not None and np.array_equal(labels, run.labels):
            ClusterOverlay.for_window(self.window).set_labels(run, None)
            self.reset_button.setEnabled(False)
        else:
            ClusterOverlay.for_window(self.window).set_labels(
                run, labels, f"dendrogram cut at {h:.4g} ({k} clusters)")
            self.reset_button.setEnabled(True)
        self._line_moving()
        self.window.show_status(f"Dendrogram cut at {h:.4g}: {k} clusters (map recoloured, no refit).")
        return labels

    def reset_cut(self) -> None:
        run = self.run
        if run is None or self.Z is None:
            return
        ClusterOverlay.for_window(self.window).set_labels(run, None)
        self._cut_height = None
        k = int(np.unique(run.labels).size) if run.labels is not None else 1
        self.cut_line.blockSignals(True)
        self.cut_line.setValue(height_for(self.Z, k))
        self.cut_line.blockSignals(False)
        self._line_moving()
        self.reset_button.setEnabled(False)
