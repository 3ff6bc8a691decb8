"""Decision view of a classification run.

- Fitted on 2-D points (2-D data, or "Classify this map": a map's embedding): the decision
  regions as an image (the predicted class of every grid point, through ``predict``, computed
  on a worker thread), the decision boundary (decision function = 0 for two classes, the region
  edges for more), the SVM margins (decision = ±1) and the support vectors ringed when the
  estimator has ``support_``, the points in their true class colour and the misclassified ones
  marked with a cross.
- Fitted on data of higher dimension: the map of the current embedding, points coloured by
  predicted class, misclassified points marked.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout

from manifold_studio.analysis.classification_tasks import (
    DecisionGrid,
    decision_grid_task,
)
from manifold_studio.evaluation import label_indices
from manifold_studio.gui.lazy_slot import LazyPart, LazySlot, legend_plot
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import CATEGORICAL
from manifold_studio.gui.widgets import heading_label, message_label, say
from manifold_studio.gui.worker import LatestJob
from manifold_studio.session.lifecycle import run_model
from manifold_studio.analysis.map_coords import as_map_xy

REGION_ALPHA = 0.30  # region colour = white blended with this much of the class colour


def class_colors(k: int) -> np.ndarray:
    reps = int(np.ceil(max(k, 1) / len(CATEGORICAL)))
    return np.tile(CATEGORICAL, (reps, 1))[:k].astype(float)


def region_image(class_index: np.ndarray, k: int) -> np.ndarray:
    """(ny, nx, 3) uint8: each grid cell in a light tint of its predicted class colour."""
    light = (255 * (1 - REGION_ALPHA) + REGION_ALPHA * class_colors(k)).round().astype(np.uint8)
    return light[class_index]


def _text(v) -> str:
    if isinstance(v, (float, np.floating)) and float(v).is_integer():
        return str(int(v))
    return str(v)


class DecisionView(ResultView):
    view_id = "decision"
    title = "Decision regions"
    area = "right"
    order = 30

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.grid: DecisionGrid | None = None
        self.image: np.ndarray | None = None
        self.latest = LatestJob()
        self.items: list = []
        self.mode = ""  # "regions", "map" or ""
        self.title_label = heading_label("Decision regions of a classification run.")
        self.info = message_label("")
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop computing the decision regions.")
        self.cancel_button.clicked.connect(self.cancel)
        self._lazy_slot = LazySlot(self._make_content)   # the plot: made when first shown or drawn
        row = QHBoxLayout()
        row.addWidget(self.info, 1)
        row.addWidget(self.cancel_button)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.title_label)
        lay.addLayout(row)
        lay.addWidget(self._lazy_slot, 1)

    plot, plot_item, legend = LazyPart(), LazyPart(), LazyPart()

    def _make_content(self) -> pg.PlotWidget:
        return legend_plot(self, 0.12, (-6, -6), "8pt", pen=(190, 190, 190))

    def applies_to(self, run) -> bool:
        return run is not None and run.kind == "classification"

    @property
    def busy(self) -> bool:
        return self.latest.busy

    def cancel(self) -> None:
        if self.latest.busy:
            self.latest.job.cancel()

    def _update_enabled(self) -> None:
        self.cancel_button.setEnabled(self.busy)

    # -- the run ------------------------------------------------------------------------------
    def _fit_points(self, run):
        """(X the run was fitted on, its true labels) or (None, None)."""
        try:
            return self.window.session.training_data(run)
        except Exception:  # noqa: BLE001 - data set removed
            return None, None

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.latest.drop()
        self._clear()
        if run is None or not run.succeeded or run.estimator is None or self.window is None:
            self.title_label.setText("Decision regions of a classification run.")
            return
        X, y = self._fit_points(run)
        self.title_label.setText(f"{run.title()} — {run.algorithm_name or run.algorithm_id}")
        if X is not None and X.ndim == 2 and X.shape[1] == 2:
            say(self.info, "Computing the decision regions…")
            # a third-party classifier predicts the grid in worker processes, not in the window's
            self.latest.start(self.window, decision_grid_task, run_model(run), X, y, title="Decision regions",
                              on_success=lambda res, run=run: self._grid_done(run, res),
                              on_failure=lambda msg, _d: say(self.info, f"No decision regions: {msg}", True))
            self.latest.job.ended.connect(self._update_enabled)
            self._update_enabled()
        else:
            self._draw_on_map(run, y)

    def _clear(self) -> None:
        for item in self.items:
            self.plot.removeItem(item)
        self.items = []
        self.legend.clear()
        self.grid, self.image, self.mode = None, None, ""

    def _add(self, item, ignore_bounds: bool = False):
        self.plot.addItem(item, ignoreBounds=ignore_bounds)
        self.items.append(item)
        return item

    def _names(self, classes) -> list[str]:
        label = ""
        if self.dataset is not None and self.dataset.label_name:
            label = f"{self.dataset.label_name} = "
        return [f"{label}{_text(c)}" for c in classes]

    # -- 2-D: regions -------------------------------------------------------------------------
    def _grid_done(self, run, g: DecisionGrid) -> None:
        self._clear()
        self.grid, self.mode = g, "regions"
        k = len(g.classes)
        colors = class_colors(k)
        self.image = region_image(g.class_index, k)
        dx = g.xs[1] - g.xs[0] if len(g.xs) > 1 else 1.0
        dy = g.ys[1] - g.ys[0] if len(g.ys) > 1 else 1.0
        x0, y0 = g.xs[0] - dx / 2, g.ys[0] - dy / 2
        img = pg.ImageItem(self.image, axisOrder="row-major", levels=(0, 255))
        img.setRect(QRectF(x0, y0, dx * len(g.xs), dy * len(g.ys)))
        img.setZValue(-100)
        self._add(img)

        def curves(field, level, pen, name=None):
            first = True
            for line in pg.functions.isocurve(field.T, level, connected=True, extendToEdge=True):
                pts = np.asarray(line, dtype=float)
                if len(pts) < 2:
                    continue
                item = pg.PlotDataItem(x0 + pts[:, 0] * dx, y0 + pts[:, 1] * dy, pen=pen,
                                       name=name if first else None)
                self._add(item, ignore_bounds=True)
                first = False

        boundary_pen = pg.mkPen(20, 20, 20, width=2)
        if g.decision is not None:
            curves(g.decision, 0.0, boundary_pen, "decision boundary")
            if g.support is not None:  # SVM margins: decision = ±1
                margin_pen = pg.mkPen(60, 60, 60, width=1.5, style=Qt.PenStyle.DashLine)
                curves(g.decision, 1.0, margin_pen, "margins (decision = ±1)")
                curves(g.decision, -1.0, margin_pen)
        else:
            first = True
            for c in range(k):
                mask = (g.class_index == c).astype(float)
                if mask.any() and not mask.all():
                    curves(mask, 0.5, boundary_pen, "region edges" if first else None)
                    first = False
        truth = g.true_class if g.true_class is not None else g.point_class
        names = self._names(g.classes)
        for c in range(k):
            sel = truth == c
            if sel.any():
                self._add(pg.ScatterPlotItem(g.points[sel, 0], g.points[sel, 1], size=7,
                                             pen=pg.mkPen(255, 255, 255, 160, width=0.6),
                                             brush=pg.mkBrush(*(int(v) for v in colors[c]), 235), name=names[c]))
        self._mark(g.points, g.misclassified)
        if g.support is not None and len(g.support):
            self._add(pg.ScatterPlotItem(g.support[:, 0], g.support[:, 1], size=15, symbol="o",
                                         pen=pg.mkPen(0, 0, 0, width=1.8), brush=None,
                                         name=f"support vectors ({len(g.support)})"))
        axes = self._axis_names(run)
        self.plot_item.setLabel("bottom", axes[0])
        self.plot_item.setLabel("left", axes[1])
        self.plot_item.autoRange()
        n_bad = int(g.misclassified.sum())
        say(self.info, f"Regions of the predicted class on a {len(g.xs)}×{len(g.ys)} grid; "
                       f"{n_bad:,} of {len(g.points):,} training points misclassified (×).")

    def _mark(self, points, bad) -> None:
        if np.any(bad):
            self._add(pg.ScatterPlotItem(points[bad, 0], points[bad, 1], size=11, symbol="x",
                                         pen=pg.mkPen(200, 0, 0, width=1.2), brush=pg.mkBrush(200, 0, 0),
                                         name=f"misclassified ({int(np.sum(bad))})"))

    def _axis_names(self, run) -> tuple[str, str]:
        if run.source_run is not None:
            return f"run #{run.source_run} component 1", f"run #{run.source_run} component 2"
        names = (self.dataset.feature_names if self.dataset is not None else None) or ["x1", "x2"]
        return str(names[0]), str(names[1] if len(names) > 1 else "")

    # -- higher dimension: the map coloured by predicted class ---------------------------------------
    def _draw_on_map(self, run, y) -> None:
        view = self.window.map_view
        map_run = view.map_run_for(run) if view is not None else None
        if map_run is None or run.labels is None:
            say(self.info, "The data have more than two dimensions: run an embedding (e.g. PCA) to see "
                           "the predictions on its map, or use Tools ▸ Classify this map.")
            return
        xy = as_map_xy(map_run.embedding)
        pred = np.asarray(run.labels)
        if len(xy) != len(pred):
            say(self.info, f"The map of run #{map_run.id} has other points than run #{run.id}.", True)
            return
        self.mode = "map"
        classes = np.asarray(run.estimator.classes_)
        pidx = label_indices(pred, classes)
        colors = class_colors(len(classes))
        names = self._names(classes)
        for c in range(len(classes)):
            sel = pidx == c
            if sel.any():
                self._add(pg.ScatterPlotItem(xy[sel, 0], xy[sel, 1], size=7, pen=None,
                                             brush=pg.mkBrush(*(int(v) for v in colors[c]), 220),
                                             name=f"predicted {names[c]}"))
        bad = np.zeros(len(pred), bool)
        if y is not None:
            try:
                bad = pidx != label_indices(np.asarray(y), classes)
            except Exception:  # noqa: BLE001 - labels of another kind: nothing marked
                pass
        self._mark(xy, bad)
        self.plot_item.setLabel("bottom", f"run #{map_run.id} component 1")
        self.plot_item.setLabel("left", f"run #{map_run.id} component 2")
        self.plot_item.autoRange()
        say(self.info, f"Predicted class on the map of run #{map_run.id} ({map_run.algorithm_id}); "
                       f"{int(bad.sum()):,} of {len(pred):,} points misclassified (×). For regions, "
                       "use Tools ▸ Classify this map.")
