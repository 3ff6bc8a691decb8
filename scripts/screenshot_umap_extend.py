"""Take the UMAP screenshot of the README: the 1,797 digits, UMAP (random_state=0) fitted on a
seeded 80 % of them through the Out-of-sample panel's "Hold out part of the data" (held out
20 %, seed 0), the held-out 20 % then placed into the finished map by the panel's extension
(drawn as ×). Prints how often an extended point lands among its own digit: the share of
extended points whose 10 nearest fitted points on the map are mostly (the most common label)
of the same digit, next to the same share for the fitted points themselves.

    MANIFOLD_STUDIO_SETTINGS=/tmp/us.ini xvfb-run -a -s "-screen 0 1600x1000x24" \\
        .venv/bin/python scripts/screenshot_umap_extend.py resources/screenshot_umap_digits_extend.png
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402

K = 10  # neighbours on the map for the "lands in its digit's cluster" check


def majority_share(fitted_xy, fitted_labels, query_xy, query_labels, skip_self: bool = False) -> float:
    """Share of query points whose K nearest fitted points (on the map) most often carry the
    query point's own label."""
    from scipy.spatial import cKDTree

    k = K + 1 if skip_self else K
    _d, idx = cKDTree(fitted_xy).query(query_xy, k=k)
    idx = idx[:, 1:] if skip_self else idx
    classes, codes = np.unique(fitted_labels, return_inverse=True)
    votes = np.zeros((len(query_xy), len(classes)), dtype=int)
    np.add.at(votes, (np.repeat(np.arange(len(query_xy)), K), codes[idx].ravel()), 1)
    winner = classes[np.argmax(votes, axis=1)]
    return float(np.mean(winner == np.asarray(query_labels)))


def main(path: str = "resources/screenshot_umap_digits_extend.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt

    with main_window(size) as (app, w):
        job = w.load_source("sample:digits", {})
        wait(app, lambda: job.finished and w.session.current_dataset is not None)
        ds = w.session.current_dataset
        w.algorithm_panel.select_algorithm("umap")
        w.algorithm_panel.form.editor("random_state").set_value(0)
        panel = w.views["extend"]
        w.docks["view:extend"].raise_()
        panel.holdout_fraction.setValue(20.0)
        panel.holdout_seed.setValue(0)
        run = panel.fit_with_holdout()  # the "Fit on the rest, extend the held-out part" button
        if run is None:
            raise SystemExit("the hold-out fit did not start")
        wait(app, lambda: run.finished, timeout=600)
        if not run.succeeded:
            raise SystemExit(f"UMAP failed: {run.error}")
        wait(app, lambda: run.extensions and not panel.busy, timeout=600)
        ext = run.extensions[-1]
        w.session.set_current_run(run.id)

        fitted_rows, held_rows = np.asarray(run.rows), np.asarray(ext.rows)
        labels = ds.labels
        fit_xy, ext_xy = np.asarray(run.embedding)[:, :2], np.asarray(ext.values)[:, :2]
        ext_share = majority_share(fit_xy, labels[fitted_rows], ext_xy, labels[held_rows])
        fit_share = majority_share(fit_xy, labels[fitted_rows], fit_xy, labels[fitted_rows], skip_self=True)
        print(f"UMAP fitted on {fitted_rows.size:,} digits, extended to {held_rows.size:,} held-out ones")
        print(f"extended points whose {K} nearest fitted points are mostly their own digit: "
              f"{ext_share:.1%} ({round(ext_share * held_rows.size)} of {held_rows.size})")
        print(f"fitted points, same check against the other fitted points: {fit_share:.1%}")

        for _ in range(20):
            app.processEvents()
        # the map first: on the right only the Out-of-sample panel (the other views tabbed with
        # it want 416 px), narrower side docks, a short Runs table
        extend_dock = w.docks["view:extend"]
        for d in w.docks.values():
            if d is not extend_dock and w.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea:
                d.hide()
        for _ in range(20):
            app.processEvents()
        w.resizeDocks([w.docks["data"], extend_dock], [340, 330], Qt.Orientation.Horizontal)
        w.resizeDocks([w.docks["runs"]], [110], Qt.Orientation.Vertical)
        for _ in range(20):
            app.processEvents()
        w.map_view.fit_to_points()
        w.map_view.place_legend()
        return settle_and_save(app, w, path, f"extended share {ext_share:.3f}")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:2]))
