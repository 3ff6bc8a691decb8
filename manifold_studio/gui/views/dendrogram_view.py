"""Dendrogram of a hierarchical clustering run, with a cut line to choose the number of clusters.

The coordinates come from ``scipy.cluster.hierarchy.dendrogram(no_plot=True)`` on the run's
``linkage_matrix_`` (computed on a worker thread, truncated to the last merges for large trees).
Dragging the horizontal cut line shows how many clusters a cut at that height gives; releasing
it recolours the map with the clusters of the cut (``fcluster`` on the linkage, no refit), and
the silhouette and contingency views follow. The cut becomes the run's ``cut_labels`` (with its
height in ``run.meta["cut"]``): the CSV export writes it and the project saves and restores it. "Run's cut" restores the run's own partition.

Under the leaves, a strip shows the data set's classes (each leaf split by the share of its rows
in each class, in the map's class colours, with a legend): :mod:`.leaf_classes`.

Selection (linked brushing): a triangle under each leaf holding selected rows, larger the
larger the selected share of its rows; a rectangle selects the rows of the leaves under it, a
lasso those whose leaf (on the axis) it encloses, and a click selects the subtree under the
click (the cluster of the nearest leaf when the tree is cut at the click's height) —
:class:`DendrogramSelection`.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QSpinBox, QVBoxLayout

from manifold_studio.analysis.cluster_tasks import (
    DENDROGRAM_MAX_LEAVES,
    DendrogramResult,
    cut_labels,
    dendrogram_task,
    n_clusters_at,
)
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.gui.cluster_overlay import ClusterOverlay
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.leaf_classes import LeafClassStrip
from manifold_studio.gui.views.selection_overlay import RECT, SelectionOverlay
from manifold_studio.gui.worker import LatestJob
from manifold_studio.session.state import cut_height_for

MAX_LEAF_LABELS = 40


def _linkage(run):
    Z = getattr(run.estimator, "linkage_matrix_", None) if run is not None else None
    if Z is None:
        return None
    Z = np.asarray(Z, dtype=float)
    return Z if Z.ndim == 2 and Z.shape[0] >= 1 and Z.shape[1] == 4 else None


#: a cut height that gives k clusters (the session's, so the window and scripts cut alike)
height_for = cut_height_for


def leaf_positions(Z: np.ndarray, max_leaves: int = DENDROGRAM_MAX_LEAVES) -> np.ndarray:
    """For each leaf of linkage ``Z``, the position (0 = leftmost) of the drawn leaf it lies under
    in :func:`dendrogram_task`'s drawing (itself, or the truncated subtree holding it). O(n):
    the drawn subtrees of a truncated tree are the clusters left after the first n - p merges
    (``fcluster`` on the merge order), named by their root node (``leaders``)."""
    Z = np.asarray(Z, dtype=float)
    n = Z.shape[0] + 1
    truncated = n > max_leaves
    kw = dict(no_plot=True, truncate_mode="lastp", p=max_leaves) if truncated else dict(no_plot=True)
    from scipy.cluster import hierarchy  # lazy: kept off the start-up

    drawn = hierarchy.dendrogram(Z, **kw)["leaves"]
    if not truncated:
        out = np.empty(n, dtype=np.intp)
        out[np.asarray(drawn, dtype=np.intp)] = np.arange(len(drawn))
        return out
    pos_of_node = {int(node): i for i, node in enumerate(drawn)}
    order = Z.copy()
    order[:, 2] = np.arange(n - 1, dtype=float)  # heights = merge order: a cut after n - p merges
    flat = hierarchy.fcluster(order, n - max_leaves - 0.5, criterion="distance")
    roots, ids = hierarchy.leaders(order, flat)
    lookup = np.zeros(int(flat.max()) + 1, dtype=np.intp)
    lookup[ids] = [pos_of_node[int(r)] for r in roots]
    return lookup[flat]


class DendrogramSelection(SelectionOverlay):
    """Selection on the dendrogram: every point of the run sits at its leaf's position on the axis."""

    def __init__(self, view):
        super().__init__(view.window, view.plot, view.leaf_points)
        self.view = view
        self.set_mode(RECT)

    def rows_in_rect(self, x0, y0, x1, y1, xy, rows):
        """The rows of the leaves under the rectangle (whatever its height)."""
        xa, xb = sorted((x0, x1))
        return rows[(xy[:, 0] >= xa) & (xy[:, 0] <= xb)]

    def click_at(self, x, y, mode="replace"):
        """The subtree under the click: cut the tree at the click's height and take the cluster
        of the nearest leaf; a plain click beside the tree clears."""
        xy, rows, name = self.current()
        if name is None:
            return self._nothing_drawn()
        hit = np.zeros(0, dtype=np.intp)
        view = self.view
        n_leaves = view.result.n_leaves if view.result is not None else 0
        if len(xy) and n_leaves and -5.0 <= x <= 10.0 * n_leaves + 5.0:
            leaf = int(np.clip(np.rint((x - 5.0) / 10.0), 0, n_leaves - 1))
            members = np.flatnonzero(view.leaf_of_point == leaf)
            if members.size:
                labels = cut_labels(view.Z, max(float(y), 0.0), leaves=view.leaves, leaf_labels=view.run.labels)
                hit = rows[labels == labels[members[0]]]
        return self._apply(name, hit, mode, "click")

    def draw_highlight(self, xy, drawn):
        self._highlighted = np.flatnonzero(drawn)
        view = self.view
        if self._highlight is None:
            self._highlight = pg.ScatterPlotItem(symbol="t1", pen=None, hoverable=False)
            self._highlight.setZValue(30)
            self.plot_item.addItem(self._highlight, ignoreBounds=True)
        if view.result is None or not len(view.leaf_of_point):
            view.leaf_fraction = np.zeros(0)
            self._highlight.setData([], [])
            return
        n_leaves = view.result.n_leaves
        total = np.bincount(view.leaf_of_point, minlength=n_leaves)
        chosen = np.bincount(view.leaf_of_point[drawn], minlength=n_leaves)
        view.leaf_fraction = chosen / np.maximum(total, 1)
        marked = np.flatnonzero(chosen)
        frac = view.leaf_fraction[marked]
        self._highlight.setData(x=5.0 + 10.0 * marked, y=np.zeros(marked.size), size=7 + 9 * frac,
                                brush=[pg.mkBrush(20, 20, 20, int(110 + 145 * f)) for f in frac])


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
        self.class_strip = LeafClassStrip(self.plot)  #: the data set's classes under the leaves
        self.cut_line = pg.InfiniteLine(angle=0, movable=True,
                                        pen=pg.mkPen(200, 0, 30, width=2, style=Qt.PenStyle.DashLine),
                                        hoverPen=pg.mkPen(255, 0, 40, width=3))
        self.cut_line.setToolTip("Drag to cut the tree at another height: the map is recoloured "
                                 "with the clusters of the cut (no refit).")
        self.cut_line.setZValue(10)
        self.cut_line.hide()
        self.plot.addItem(self.cut_line)
        self.cut_line.sigPositionChanged.connect(self._line_moving)
        if window is not None and window.map_view is not None:
            ClusterOverlay.for_window(window).labelsChanged.connect(self._follow_cut)
        self.cut_line.sigPositionChangeFinished.connect(lambda _l: self.apply_cut())
        self.k_spin = QSpinBox()
        self.k_spin.setObjectName("dendrogram_k")
        self.k_spin.setPrefix("k = ")
        self.k_spin.setRange(1, 2)
        self.k_spin.setKeyboardTracking(False)
        self.k_spin.setToolTip("Cut the tree into this many clusters (no refit): the run's labels become "
                               "the cut's, for the map, the title, the export, the project and the report.")
        self.k_spin.valueChanged.connect(self.cut_into)
        top = QHBoxLayout()
        top.addWidget(self.cut_label, 1)
        top.addWidget(self.k_spin)
        top.addWidget(self.reset_button)
        #: drawn leaf (0 = leftmost) of each point of the run; share of each leaf's rows selected
        self.leaf_of_point = np.zeros(0, dtype=np.intp)
        self.leaf_fraction = np.zeros(0)
        self._leaf_xy = np.zeros((0, 2))
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addLayout(top)
        self.selection_overlay = None
        if window is not None:
            self.selection_overlay = DendrogramSelection(self)
            lay.addWidget(self.selection_overlay.bar)
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

    # -- selection ------------------------------------------------------------------------------
    def leaf_points(self):
        """(xy, rows, data set) for the selection overlay: each point of the run at its leaf."""
        run = self.run
        name = run.dataset_name if run is not None and self.result is not None and len(self._leaf_xy) else None
        rows = run.point_index if name is not None else np.zeros(0, dtype=np.intp)
        return self._leaf_xy, rows, name

    def _set_leaves(self, run, result) -> None:
        self.leaf_of_point, self._leaf_xy = np.zeros(0, dtype=np.intp), np.zeros((0, 2))
        if result is None or run is None or self.Z is None:
            return
        try:
            pos = leaf_positions(self.Z)
            if self.leaves == "clusters":
                pos = pos[np.asarray(run.labels, dtype=np.intp)]
        except Exception:  # noqa: BLE001 - no leaf marks, the tree is still drawn
            return
        if pos.shape[0] != run.n_points:
            return
        self.leaf_of_point = pos
        self._leaf_xy = np.column_stack([5.0 + 10.0 * pos, np.zeros(pos.shape[0])])

    def _done(self, run, result: DendrogramResult) -> None:
        self._draw(result)
        self._set_leaves(run, result)
        self._draw_classes(run, result)
        if self.selection_overlay is not None:
            self.selection_overlay.refresh()
        leaves = "clusters (divisive tree)" if self.leaves == "clusters" else "points"
        trunc = f"; the last {result.n_leaves} merges are drawn" if result.truncated else ""
        self.info.setText(f"{run.title()} ({run.params.get('method', '')}): {self.Z.shape[0] + 1:,} leaves "
                          f"= {leaves}{trunc}. Drag the red line to cut the tree.")
        labels = ClusterOverlay.for_window(self.window).labels_for(run)
        k = int(np.unique(labels).size) if labels is not None else 1
        h = ClusterOverlay.for_window(self.window).labels_note(run)
        saved = run.meta.get("cut", {}).get("height") if run.cut_labels is not None else None
        self.cut_line.blockSignals(True)
        self.cut_line.setValue(float(saved) if saved is not None else height_for(self.Z, k))
        self.cut_line.blockSignals(False)
        self.cut_line.show()
        self._line_moving()
        self.reset_button.setEnabled(bool(h))
        self._show_k(run)

    def _draw_classes(self, run, result: DendrogramResult) -> None:
        """The strip of the data set's classes under the leaves (none without classes)."""
        ds = self.dataset
        labels = ds.labels[run.point_index] if ds is not None and ds.labels is not None \
            and len(self.leaf_of_point) else None
        strip = self.class_strip.draw(self.leaf_of_point, labels, result.n_leaves, result.max_height,
                                      (ds.label_name or "class") if ds is not None else "class")
        if strip:
            self.plot.setYRange(-1.3 * strip, result.max_height * 1.08, padding=0.0)

    def _failed(self, message) -> None:
        self._draw(None)
        self.info.setText(f"No dendrogram: {message}")

    def _draw(self, result: DendrogramResult | None) -> None:
        self.result = result
        axis = self.plot.getPlotItem().getAxis("bottom")
        if result is None:
            self._set_leaves(None, None)
            self.class_strip.clear()
            if self.selection_overlay is not None:
                self.selection_overlay.refresh()
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
        """Cut the run's tree at the line's height (``session.cut``: fcluster, no refit, undoable):
        the run's labels become the cut's, and the map, the title and the views follow."""
        run = self.run
        if run is None or self.Z is None or self.window is None:
            return None
        h = max(self.cut_height, 0.0)
        if not self._cut(run, height=h):
            return None
        k = int(np.unique(run.shown_labels).size)
        self._line_moving()
        self.window.show_status(f"Dendrogram cut at {h:.4g}: {k} clusters (map recoloured, no refit).")
        return run.shown_labels

    def cut_into(self, k: int) -> np.ndarray | None:
        """A chosen k: cut the run's tree into ``k`` clusters (``session.cut``, undoable); the
        line moves to the cut's height. Returns the run's labels shown after it."""
        run = self.run
        if run is None or self.Z is None or self.window is None:
            return None
        if run.shown_labels is not None and np.unique(run.shown_labels).size == int(k):
            return run.shown_labels
        return run.shown_labels if self._cut(run, n_clusters=int(k)) else None

    def _cut(self, run, **where) -> bool:
        """``session.cut(run.id, **where)``; a refusal (the data set was removed) is said and
        the line goes back to the run's partition."""
        try:
            self.window.session.cut(run.id, **where)
        except ManifoldStudioError as exc:
            self.window.report_error(f"Could not cut run #{run.id}: {exc}")
            self._follow_cut(run)
            return False
        return True

    def reset_cut(self) -> None:
        run = self.run
        if run is None or self.Z is None:
            return
        if run.cut_labels is not None:
            ClusterOverlay.for_window(self.window).set_labels(run, None)
        self._follow_cut(run)

    def _follow_cut(self, run) -> None:
        """Put the line where the run's partition is cut (its cut's height, else its own k):
        after a cut made elsewhere (Edit ▸ Undo, a script) or refused."""
        if run is not self.run or self.Z is None:
            return
        saved = run.meta.get("cut", {}).get("height") if run.cut_labels is not None else None
        k = int(np.unique(run.labels).size) if run.labels is not None else 1
        self.cut_line.blockSignals(True)
        self.cut_line.setValue(float(saved) if saved is not None else height_for(self.Z, k))
        self.cut_line.blockSignals(False)
        self._line_moving()
        self.reset_button.setEnabled(run.cut_labels is not None)
        self._show_k(run)

    def _show_k(self, run) -> None:
        """The k box: the number of clusters shown, from 1 to the tree's leaves."""
        shown = run.shown_labels if run is not None else None
        self.k_spin.blockSignals(True)
        self.k_spin.setRange(1, max(int(self.Z.shape[0]) + 1, 2) if self.Z is not None else 2)
        if shown is not None:
            self.k_spin.setValue(int(np.unique(shown).size))
        self.k_spin.blockSignals(False)
