"""Take the 'Compare runs' screenshot of the README: 800 digits embedded by PCA, Isomap, LLE and
t-SNE, each small map Procrustes-aligned to the PCA map (disparity and RMS in the titles),
with a rectangle selection drawn in the t-SNE map highlighted in all four and on the main map.

    xvfb-run -a .venv/bin/python scripts/screenshot_compare.py resources/screenshot_compare.png
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def settle_for(app, seconds: float) -> None:
    import time

    end = time.monotonic() + seconds
    while time.monotonic() < end:
        app.processEvents()


def main(path: str = "resources/screenshot_compare.png", size=(1900, 1000)) -> int:
    import numpy as np
    from PySide6.QtCore import QPointF, Qt

    from manifold_studio.gui.views import compare_view  # noqa: F401  (registers the view)

    with main_window(size, initial_algorithm="pca") as (app, w):
        if not hasattr(w, "map_selection"):
            try:
                from manifold_studio.gui.views.selection_overlay import install_selection
                install_selection(w)
            except ImportError:
                pass
        s = w.session
        s.load("sample:digits", n_samples=800, random_state=0)
        pca = s.run("pca", n_components=2)
        s.run("isomap", n_neighbors=10, n_components=2)
        s.run("lle", n_neighbors=15, n_components=2)
        tsne = s.run("tsne", n_components=2, perplexity=30, random_state=0)
        view = w.views["compare"]
        dock = w.docks["view:compare"]
        dock.show()
        dock.raise_()
        wait(app, lambda: view.isVisible() and len(view.maps) == 4 and not view.latest.busy)
        for key in ("data", "algorithm"):  # room for the grid: the screenshot is about the comparison
            w.docks[key].hide()
        settle_for(app, 0.3)
        w.resizeDocks([dock], [int(size[0] * 0.45)], Qt.Orientation.Horizontal)
        view.set_chosen(view._eligible, reference_id=pca.id)
        wait(app, lambda: len(view.maps) == 4)
        m = view.map_for(tsne.id)
        wait(app, lambda: m.getPlotItem().getViewBox().sceneBoundingRect().width() > 100)
        digits = s.current_dataset.labels
        # a rectangle around the main group of 3s on the t-SNE map
        xy = m.xy[np.asarray(digits)[m.rows].astype(str) == "3"]
        centre, half = np.median(xy, axis=0), 0.09 * (m.xy.max(axis=0) - m.xy.min(axis=0))
        (x0, y0), (x1, y1) = centre - half, centre + half
        if m.overlay is not None:
            vb = m.getPlotItem().getViewBox()
            m.overlay.bar.set_mode("rect")
            a, b = vb.mapViewToScene(QPointF(x0, y0)), vb.mapViewToScene(QPointF(x1, y1))
            m.overlay.press(a)
            m.overlay.move(b)
            m.overlay.release(b)
        else:
            inside = (m.xy[:, 0] >= x0) & (m.xy[:, 0] <= x1) & (m.xy[:, 1] >= y0) & (m.xy[:, 1] <= y1)
            w.selection.select(s.current_dataset_name, m.rows[inside])
        w.resizeDocks([w.docks["runs"]], [110], Qt.Orientation.Vertical)
        return settle_and_save(app, w, path, f"{w.selection.describe(s.current_dataset_name)}")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
