"""Take the violin screenshot of the README: the Distribution view of the wine sample's proline by
cultivar as violins (box, median and whiskers inside each), the first cultivar's rows selected
and ringed; the dock alone is saved.

    MANIFOLD_STUDIO_SETTINGS=/tmp/violin.ini xvfb-run -a .venv/bin/python scripts/screenshot_violin.py \\
        resources/screenshot_violin.png
"""
from __future__ import annotations

import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import mapped_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_violin.png", size=(1366, 768)) -> int:
    from manifold_studio.gui.views.distribution_view import VIOLIN

    with mapped_window(size, "wine") as (app, w):
        w.window_layout.open("view:distribution")
        view = w.views["distribution"]
        view.redraw()
        wait(app, lambda: view.column_combo.findText("proline") >= 0)
        view.column_combo.setCurrentText("proline")
        view.mode_combo.setCurrentText(VIOLIN)
        ds = w.session.current_dataset
        w.selection.select(ds.name, np.flatnonzero(np.asarray(ds.labels) == np.unique(ds.labels)[0]))
        wait(app, lambda: not w.busy)
        return settle_and_save(app, w.docks["view:distribution"], path, note="the Distribution dock")


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
