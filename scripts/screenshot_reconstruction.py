"""Take the reconstruction screenshot of the README: PCA of the 8×8 digits, the Reconstruction
view showing originals beside their reconstructions with M = 1, 3, 10, 20, 50 components,
and (second file) its Components tab (the eigen-images) and error curve.

    xvfb-run -a -s "-screen 0 1600x1000x24" .venv/bin/python scripts/screenshot_reconstruction.py \
        resources/screenshot_reconstruction.png
"""
from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, __import__('os').path.dirname(__import__('os').path.abspath(__file__)))
from screenshot_tools import main_window, settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_reconstruction.png", size=(1440, 900)) -> int:
    from PySide6.QtCore import Qt

    with main_window(size, initial_algorithm="pca") as (app, w):
        w.load_source("sample:digits")
        wait(app, lambda: not w.busy and w.session.current_dataset is not None)
        ds = w.session.current_dataset
        run = w.run_algorithm("pca", {"n_components": 10})
        wait(app, lambda: run.finished)
        if not run.succeeded:
            raise SystemExit(f"PCA failed: {run.error}")
        recon = w.views["reconstruction"]
        recon.show_run(run, ds)
        job = recon.compute()
        wait(app, lambda: job.finished)
        dock = w.docks["view:reconstruction"]
        dock.show()
        dock.raise_()
        w.resizeDocks([dock], [int(size[1] * 0.5)], Qt.Orientation.Vertical)
        status = settle_and_save(app, w, path, "originals and reconstructions")
        recon.tabs.setCurrentIndex(2)
        second = str(Path(path).with_name(Path(path).stem + "_components.png"))
        return status or settle_and_save(app, w, second, "components (eigen-images)")


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:2]))
