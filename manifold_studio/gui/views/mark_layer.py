"""Marks on the map for a subset of its points (search matches, rows passing the cross-filters).

Up to :data:`FEW_POINTS` marked points are drawn one by one in one colour
(:class:`~manifold_studio.gui.views.selection_items.MarkedPointsItem`); above, as a one-colour
image of the screen cells that hold a marked point (the density image's binning,
:class:`~manifold_studio.gui.views.density_item.DensityItem`, recomputed shortly after the view
range changes): its cost does not grow with the number of marked points, so marking 700,000 of a
million points neither stalls the update nor slows every frame.

The work over the rows (which drawn points are marked, their positions or their image's counts:
30-50 ms at a million points) can be done on a worker thread: :meth:`MarkLayer.view_now` takes
what the marks are drawn for on the main thread, :func:`plan_marks` computes them anywhere, and
:meth:`MarkLayer.show_plan` only hands the result to the items (when the map still draws the same
points in the same range; otherwise :meth:`MarkLayer.draw_mask` does it all again at once).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QTimer

from manifold_studio.gui.views.density_item import DensityItem, bins_for, density_counts, lut_indices
from manifold_studio.gui.worker import LatestJob
from manifold_studio.gui.views.selection_items import MarkedPointsItem

FEW_POINTS = 100_000
RANGE_DELAY_MS = 40


@dataclass(frozen=True, eq=False)
class MarkView:
    """What marks are drawn for: the map's points, its drawn rows and visible mask, its range and
    its size in pixels (taken on the main thread; the arrays are the map's own, not copies)."""

    xy: np.ndarray
    rows: np.ndarray
    visible: np.ndarray | None
    x_range: tuple
    y_range: tuple
    pixels: tuple

    def same(self, other: "MarkView") -> bool:
        """The same arrays (identity) in the same range and size."""
        return (self.xy is other.xy and self.rows is other.rows and self.visible is other.visible
                and (self.x_range, self.y_range, self.pixels) == (other.x_range, other.y_range, other.pixels))


@dataclass(frozen=True, eq=False)
class MarkPlan:
    """The marks of one mask on one :class:`MarkView` (:func:`plan_marks`): the marked drawn
    points, their positions (up to :data:`FEW_POINTS`) or the counts of the image's cells."""

    view: MarkView
    hit: np.ndarray | None
    count: int
    points: np.ndarray | None = None
    counts: np.ndarray | None = None
    #: the counts as entries of the image's lookup table (uint8)
    indices: np.ndarray | None = None


def plan_marks(mask: np.ndarray | None, view: MarkView) -> MarkPlan:
    """The marks of the rows where ``mask`` (one bool per row of the data set) holds, among the
    points ``view`` draws (any thread: numpy only)."""
    rows = view.rows
    if mask is None or not len(rows) or rows.max() >= mask.size:
        return MarkPlan(view, None, 0)
    hit = mask[rows]
    if view.visible is not None:
        hit &= view.visible
    count = int(np.count_nonzero(hit))
    if count == 0:
        return MarkPlan(view, hit, 0)
    if count <= FEW_POINTS:
        return MarkPlan(view, hit, count, points=np.ascontiguousarray(view.xy[hit]))
    counts, indices = _bin_marks(view, hit)
    return MarkPlan(view, hit, count, counts=counts, indices=indices)


class MarkLayer(QObject):
    def __init__(self, view, color, z: float):
        super().__init__(view)
        self.view = view
        self.count = 0
        self._mask: np.ndarray | None = None
        self.points = MarkedPointsItem(color)
        rgb = np.array([color[:3], color[:3]], dtype=np.uint8)
        self.image = DensityItem(rgb)
        for item in (self.points, self.image):
            item.setZValue(z)
            item.setVisible(False)
            view.plot.addItem(item, ignoreBounds=True)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(RANGE_DELAY_MS)
        self.timer.timeout.connect(self._update_image)
        #: marks of a new mask, and the image of the marks for a new range, on worker threads
        self._planning, self._binning = LatestJob(), LatestJob()
        view.plot_item.getViewBox().sigRangeChanged.connect(lambda *_: self._mask is not None and self.timer.start())

    def isVisible(self) -> bool:
        return self.points.isVisible() or self.image.isVisible()

    def view_now(self) -> MarkView:
        """What the marks would be drawn for now (cheap: references and the view's range)."""
        vb = self.view.plot_item.getViewBox()
        (x0, x1), (y0, y1) = vb.viewRange()
        rect = vb.sceneBoundingRect()
        return MarkView(self.view.xy, self.view.rows, self.view.visible, (float(x0), float(x1)),
                        (float(y0), float(y1)), (max(rect.width(), 1.0), max(rect.height(), 1.0)))

    def draw_mask(self, mask: np.ndarray | None) -> None:
        """Mark the drawn points whose rows ``mask`` holds: computed on a worker thread when the
        map belongs to a window (shown when done), here and now otherwise."""
        self._binning.drop()
        window = getattr(self.view, "window", None)
        if mask is None or window is None:
            self._planning.drop()
            self.show_plan(plan_marks(mask, self.view_now()), force=True)
            return
        self._planning.start(window, _plan_task, mask, self.view_now(), title="Marks",
                             on_success=lambda plan: self._apply(plan) or self.draw_mask(mask),
                             on_failure=lambda message, _detail: window.show_status(f"Marks: {message}"))

    def show_plan(self, plan: MarkPlan, force: bool = False) -> bool:
        """Show marks computed by :func:`plan_marks` (main thread: only the items change). False
        (and nothing shown) when the map no longer draws what the plan was made for."""
        self._planning.drop()   # an older mask's marks, still being computed, must not follow
        self._binning.drop()
        return self._apply(plan, force)

    def _apply(self, plan: MarkPlan, force: bool = False) -> bool:
        if not force and not plan.view.same(self.view_now()):
            return False
        self.count = plan.count
        self._mask = None
        if plan.count == 0:
            self.points.setVisible(False)
            self.image.setVisible(False)
        elif plan.points is not None:
            self.points.set_points(plan.points)
            self.points.setVisible(True)
            self.image.setVisible(False)
        else:
            self._mask = plan.hit
            self.image.show_counts(plan.counts, plan.view.x_range, plan.view.y_range, plan.indices)
            self.points.setVisible(False)
            self.image.setVisible(True)
        return True

    def _update_image(self) -> None:
        """The view's range changed: bin the marked points again for it (on a worker thread when
        the map belongs to a window)."""
        if self._mask is None or len(self._mask) != len(self.view.xy) or self._planning.busy:
            return   # (new marks are coming: made for the new range, or made again for it)
        view, hit = self.view_now(), self._mask
        window = getattr(self.view, "window", None)
        if window is None:
            self._show_image(view, hit, *_bin_marks(view, hit))
            return
        self._binning.start(window, _bin_marks, view, hit, title="Marks",
                            on_success=lambda binned: self._show_image(view, hit, *binned),
                            on_failure=lambda message, _detail: window.show_status(f"Marks: {message}"))

    def _show_image(self, view: MarkView, hit: np.ndarray, counts: np.ndarray, indices: np.ndarray) -> None:
        if self._mask is hit and view.same(self.view_now()):
            self.image.show_counts(counts, view.x_range, view.y_range, indices)


def _plan_task(mask: np.ndarray, view: MarkView, progress=None) -> MarkPlan:
    return plan_marks(mask, view)


def _bin_marks(view: MarkView, hit: np.ndarray, progress=None) -> tuple[np.ndarray, np.ndarray]:
    """(counts of the marked points per image cell, their lookup-table entries)."""
    counts = density_counts(view.xy, view.x_range, view.y_range, bins_for(view.pixels), hit)
    return counts, lut_indices(counts)
