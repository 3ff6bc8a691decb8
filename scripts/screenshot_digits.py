"""Take the digits screenshot of the README: t-SNE of 1,500 digits fitted on 1,000 and extended
to the 500 others (drawn as ×) by the out-of-sample panel.

    xvfb-run -a .venv/bin/python scripts/screenshot_digits.py resources/screenshot_digits.png
"""
from __future__ import annotations

import sys

import numpy as np

sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_digits.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt

    with main_window(size, initial_algorithm="pca") as (app, w):
        w.load_source("sample:digits", {"n_samples": 1500})
        wait(app, lambda: not w.busy and w.session.current_dataset is not None)
        ds = w.session.current_dataset
        # t-SNE fitted on the first 1,000 digits, extended to the other 500
        fit_rows = np.arange(1000)
        run = w.run_algorithm("tsne", {"perplexity": 30.0, "random_state": 0}, rows=fit_rows)
        wait(app, lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"t-SNE failed: {run.error}")
        panel = w.views["extend"]
        ext_job = panel.extend_rows(run, ds.name, np.arange(1000, 1500))
        if ext_job is None:
            values = run.estimator.extend(ds.X[1000:])
            w.session.add_extension(run.id, values, ds.name, rows=np.arange(1000, 1500))
        else:
            wait(app, lambda: ext_job.finished)
        w.session.set_current_run(run.id)
        w.map_view.size_spin.setValue(6)
        for d in w.docks.values():  # the map over the whole width: the views on the right hidden
            if w.dockWidgetArea(d) == Qt.DockWidgetArea.RightDockWidgetArea:
                d.hide()
        w.resizeDocks([w.docks["runs"]], [170], Qt.Orientation.Vertical)
        return settle_and_save(app, w, path)


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
