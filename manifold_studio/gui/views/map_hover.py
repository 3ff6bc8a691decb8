"""Hover on the map: the nearest visible point within a few screen pixels, found with a grid
index (:class:`~manifold_studio.render.spatial_grid.GridIndex`) built once per point set — at once up
to :data:`SYNC_INDEX_LIMIT` points, in a background thread above (a vectorised scan answers until it
is ready) — and a tip with the row's labels, the colour / size column values and its features.

:class:`MapHoverMixin` is part of :class:`~manifold_studio.gui.views.map_view.MapView`; it uses
the view's ``xy``, ``rows``, ``visible``, ``plot_item`` and hover items.
"""
from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

from PySide6.QtCore import QPointF

from manifold_studio.gui.views.map_encoding import row_summary, value_text
from manifold_studio.gui.views.palette import label_text
from manifold_studio.render.spatial_grid import GridIndex, brute_force_nearest

HOVER_RADIUS_PX = 12
#: up to this many points the index is built at once (about 20 ms at 100k points)
SYNC_INDEX_LIMIT = 100_000
#: builds the hover index of large maps off the GUI thread (numpy sorts release the GIL)
_INDEX_POOL = ThreadPoolExecutor(max_workers=1, thread_name_prefix="map-index")


class MapHoverMixin:
    """Hover text, spatial index and nearest-point queries of the map view."""

    def hover_text(self, i: int) -> str:
        """Text shown when hovering the i-th drawn point: its row and labels, the values of the
        colour / size columns, then its first features (one group per line)."""
        row = int(self.rows[i])
        parts = [f"point {row}"]
        if self._data_labels is not None:
            name = self._label_name or "label"
            parts.append(f"{name}: {label_text(self._data_labels, i)}")
        if self._run_labels is not None:
            parts.append(f"cluster/class: {label_text(self._run_labels, i)}")
        lines = [" · ".join(parts)]
        values = [f"{name}: {value_text(vals[i])}" for name, vals in
                  ((self._color_name, self._color_values), (self._size_name, self._size_values))
                  if vals is not None]
        if values:
            lines.append(" · ".join(values))
        features = row_summary(self._hover_dataset, row)
        if features:
            lines.append(features)
        return "\n".join(lines)

    def spatial_index(self, wait: bool = False) -> GridIndex | None:
        """The hover index of the drawn points: built at once up to :data:`SYNC_INDEX_LIMIT`
        points, in a background thread above (None until it is ready, unless ``wait``)."""
        if self._index is not None and self._index_xy is self.xy:
            return self._index
        xy = self.xy
        if len(xy) <= SYNC_INDEX_LIMIT:
            self._index, self._index_xy = GridIndex(xy), xy
            return self._index
        if self._index_future is None or self._index_future[0] is not xy:
            self._index_future = (xy, _INDEX_POOL.submit(GridIndex, xy))
        future = self._index_future[1]
        if wait or future.done():
            self._index, self._index_xy = future.result(), xy
            self._index_future = None
            return self._index
        return None

    def nearest_point(self, x: float, y: float, radius_px: float = HOVER_RADIUS_PX) -> int:
        """Index of the drawn (visible) point nearest to data coordinates (x, y) within
        ``radius_px`` screen pixels (x and y scales may differ), or -1."""
        if not len(self.xy):
            return -1
        vb = self.plot_item.getViewBox()
        px, py = vb.viewPixelSize()
        rx, ry = radius_px * (px or 1.0), radius_px * (py or 1.0)
        index = self.spatial_index()
        if index is None:  # still being built: a vectorised scan (about 15 ms at 1M points)
            return brute_force_nearest(self.xy, x, y, rx, ry, self.visible)
        return index.nearest(x, y, rx, ry, self.visible)

    def _place_tip(self, x: float, y: float) -> None:
        """Put the hover tip beside the point (data coordinates), on the side that keeps it
        inside the plot: left of points in the right half, below points in the upper half."""
        vb = self.plot_item.getViewBox()
        at = vb.mapViewToScene(QPointF(float(x), float(y)))
        box = vb.sceneBoundingRect()
        tip = self._hover_text
        tip.setAnchor((1 if at.x() > box.center().x() else 0, 0 if at.y() < box.center().y() else 1))
        tip.setPos(at)
        r = tip.sceneBoundingRect()  # still too wide or tall for the plot: clamp it inside
        dx = max(box.left() - r.left(), 0.0) + min(box.right() - r.right(), 0.0)
        dy = max(box.top() - r.top(), 0.0) + min(box.bottom() - r.bottom(), 0.0)
        if dx or dy:
            tip.setPos(at.x() + dx, at.y() + dy)

    def _hide_hover(self):
        self._hover_text.hide()
        self._highlight.setData([], [])
        self.hover_label.setText("")

    def _on_mouse_moved(self, event):
        pos = event[0]
        vb = self.plot_item.getViewBox()
        if not len(self.xy) or not vb.sceneBoundingRect().contains(pos):
            self._hide_hover()
            self.hovered.emit(-1, "")
            return
        p = vb.mapSceneToView(pos)
        self.hover_at(p.x(), p.y())

    def hover_at(self, x: float, y: float) -> int:
        """Show the hover tip for the point nearest to data coordinates (x, y); returns its
        index among the drawn points or -1."""
        i = self.nearest_point(x, y)
        if i < 0:
            self._hide_hover()
            self.hovered.emit(-1, "")
            return -1
        text = self.hover_text(i)
        px, py = self.xy[i]
        self._highlight.setData([px], [py])
        self._hover_text.setText(text)
        self._place_tip(px, py)
        self._hover_text.show()
        self.hover_label.setText(text.replace("\n", " · "))
        self.hovered.emit(int(self.rows[i]), text)
        return i
