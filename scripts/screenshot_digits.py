"""Take the digits screenshot of the README: t-SNE of 1,500 digits fitted on 1,000 and extended
to the 500 others (drawn as ×) by the out-of-sample panel.

    xvfb-run -a .venv/bin/python scripts/screenshot_digits.py resources/screenshot_digits.png
"""
from __future__ import annotations

import sys
import time

import numpy as np


def main(path: str = "resources/screenshot_digits.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["manifold-studio"])
    from manifold_studio.gui.main_window import MainWindow

    w = MainWindow(initial_sample=None, dialogs=False)
    w.resize(*size)
    w.show()

    def wait(cond, timeout=300.0):
        end = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > end:
                raise SystemExit("timed out waiting for the GUI")
            app.processEvents()
            time.sleep(0.01)

    try:
        w.load_source("sample:digits", {"n_samples": 1500})
        wait(lambda: not w.busy and w.session.current_dataset is not None)
        ds = w.session.current_dataset
        # PCA first, for the reconstruction view
        pca = w.run_algorithm("pca", {"n_components": 10})
        wait(lambda: pca.finished)
        recon = w.views["reconstruction"]
        recon.show_run(pca, ds)
        job = recon.compute()
        wait(lambda: job.finished)
        # t-SNE fitted on the first 1,000 digits, extended to the other 500
        fit_rows = np.arange(1000)
        run = w.run_algorithm("tsne", {"perplexity": 30.0, "random_state": 0}, rows=fit_rows)
        wait(lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"t-SNE failed: {run.error}")
        panel = w.views["extend"]
        ext_job = panel.extend_rows(run, ds.name, np.arange(1000, 1500))
        if ext_job is None:
            values = run.estimator.extend(ds.X[1000:])
            w.session.add_extension(run.id, values, ds.name, rows=np.arange(1000, 1500))
        else:
            wait(lambda: ext_job.finished)
        w.session.set_current_run(run.id)
        w.map_view.size_spin.setValue(6)
        w.docks["view:reconstruction"].raise_()
        w.resizeDocks([w.docks["view:reconstruction"]], [330], Qt.Orientation.Vertical)
        end = time.monotonic() + 1.5
        while time.monotonic() < end:
            app.processEvents()
            time.sleep(0.02)
        pixmap = w.grab()
        if not pixmap.save(path):
            print(f"could not save {path}", file=sys.stderr)
            return 1
        print(f"saved {pixmap.width()}x{pixmap.height()} to {path}")
        return 0
    finally:
        w.shutdown()
        w.close()


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
