"""Take the import-dialog screenshot of the README: the penguins sample's CSV opened with an impute
step in the preparation chain, at the dialog's own size on a 1366 x 768 screen (whole-column counts,
species proposed as the target and named in the Label column field, missing values kept because
the chain imputes, the reader's notes beside the tables).

    MANIFOLD_STUDIO_SETTINGS=/tmp/imp.ini xvfb-run -a .venv/bin/python scripts/screenshot_import_dialog.py \\
        resources/screenshot_import_dialog.png [WxH]   (run under a 1366x768 screen: -s "-screen 0 1366x768x24")
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from screenshot_tools import settle_and_save, wait  # noqa: E402


def main(path: str = "resources/screenshot_import_dialog.png", size: str | None = None) -> int:
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication(["manifold-studio"])
    import manifold_studio_builtins
    from manifold_studio.gui.import_dialog import options_dialog
    from manifold_studio.plugins.host import get_host

    data = Path(manifold_studio_builtins.__file__).parent / "data" / "penguins.csv"
    host = get_host()
    dlg = options_dialog(host.loader_for(data), data, None, chain=[("impute", {}), ("standardize", {})])
    if size:
        dlg.resize(*(int(v) for v in size.lower().split("x")))
    dlg.show()
    wait(app, lambda: not dlg.counting())
    status = settle_and_save(app, dlg, path, note=f"minimum size {dlg.minimumSizeHint().width()}x"
                                                  f"{dlg.minimumSizeHint().height()}")
    dlg.reject()
    return status


if __name__ == "__main__":
    raise SystemExit(main(*sys.argv[1:]))
