"""Tools ▸ Plugins (issue 8): install the template's wheel from the window, fit with it without
restarting, disable/enable by checkbox, see a refused wheel's message, a failed plugin's
traceback, uninstall."""
import sys

import numpy as np
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QPlainTextEdit

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import host as plugins
from manifold_studio.gui.plugin_manager_dialog import PluginManagerDialog, open_plugin_manager
from manifold_studio.plugins.selfcheck import build_pure_wheel, template_dir

WINDOW_DIALOGS = False
DIST, ALGO = "manifold-studio-example-plugin", "example_random_projection"


def tools_action(window):
    return next(a for a in window.menus["tools"].actions() if a.objectName() == "plugin_manager_action")


def test_install_fit_disable_uninstall_from_the_window(qtbot, make_window, folder, tmp_path):
    w = make_window(plugins.get_host(), initial_sample="iris")
    assert tools_action(w).text() == "&Plugins…"
    tools_action(w).trigger()
    dlg = w.plugin_manager_dialog
    assert isinstance(dlg, PluginManagerDialog) and dlg.isVisible()
    assert dlg.table.item(dlg.row_of("builtin_pca"), 2).text() == "built-in"

    # a refused wheel: message, nothing changed
    bad = tmp_path / "bad.whl"
    bad.write_text("not a zip")
    assert not dlg.install_file(bad)
    assert "Not installed: bad.whl is not a plugin wheel: it is not a zip archive" in dlg.message.property("plain")

    # installed while the sample may still be loading: loaded as soon as the window is idle
    assert dlg.install_file(build_pure_wheel(template_dir(), tmp_path / "dist"))
    qtbot.waitUntil(lambda: "Loaded without restarting" in dlg.message.property("plain"), timeout=20_000)
    row = dlg.row_of(ALGO)
    assert [dlg.table.item(row, c).text() for c in (2, 3, 4, 5)] == ["user folder", "0.1.0", ALGO, "loaded"]
    # the new algorithm is in the window's list and fits, without restarting
    assert ALGO in w.host.algorithms and w.algorithm_panel.select_algorithm(ALGO)
    wait_idle(qtbot, w)  # the iris sample is loaded (and its start-up run done)
    w.run_algorithm(ALGO)
    qtbot.waitUntil(lambda: any(r.algorithm_id == ALGO for r in w.session.runs.values()), timeout=20_000)
    run = wait_last_run(qtbot, w)
    assert run.algorithm_id == ALGO and run.embedding.shape == (150, 2)
    est = run.estimator  # the plugin's own class, fitted through the window
    np.testing.assert_allclose(run.embedding, est.extend(w.session.datasets[run.dataset_name].X))

    # disable by unchecking: persisted, and the algorithm leaves the list
    dlg.table.item(row, 0).setCheckState(Qt.CheckState.Unchecked)
    assert f"{ALGO} disabled" in dlg.message.property("plain")
    assert ALGO not in w.host.algorithms and not w.algorithm_panel.select_algorithm(ALGO)
    assert pm.normalise(ALGO) in pm.disabled_names()
    row = dlg.row_of(ALGO)
    assert dlg.table.item(row, 5).text() == "disabled"
    dlg.table.item(row, 0).setCheckState(Qt.CheckState.Checked)
    assert ALGO in w.host.algorithms

    # uninstall (only user-folder plugins can be)
    dlg.table.selectRow(dlg.row_of("builtin_pca"))
    assert not dlg.uninstall_button.isEnabled()
    dlg.table.selectRow(dlg.row_of(ALGO))
    assert dlg.uninstall_button.isEnabled() and dlg.uninstall_selected(confirm=False)
    assert dlg.row_of(ALGO) == -1 and ALGO not in w.host.algorithms


def test_failed_plugin_shows_error_and_traceback(qtbot, make_window, folder, tmp_path):
    target = folder / "broken"
    (target / "broken_gui_plugin").mkdir(parents=True)
    (target / "broken_gui_plugin" / "__init__.py").write_text("raise ImportError('needs something odd')\n")
    di = target / "broken_gui_plugin-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-gui-plugin\nVersion: 1.0\n")
    (di / "entry_points.txt").write_text("[manifold_studio.plugins]\nbroken_gui = broken_gui_plugin\n")
    w = make_window(plugins.get_host())
    dlg = open_plugin_manager(w)
    row = dlg.row_of("broken_gui")
    # its import probe raised: quarantined, unticked (ticking it retries the probe), with the way back
    status = dlg.table.item(row, 5).text()
    assert status.startswith("quarantined: ImportError: needs something odd")
    assert "manifold-studio plugins enable broken_gui" in status
    assert dlg.table.item(row, 0).checkState() == Qt.CheckState.Unchecked
    # ticking it retries the probe: still broken, so still quarantined, and the message line says so
    assert dlg.set_enabled("broken_gui", True)
    assert "broken_gui is still quarantined: ImportError: needs something odd" in dlg.message.property("plain")
    assert dlg.table.item(dlg.row_of("broken_gui"), 0).checkState() == Qt.CheckState.Unchecked
    # fixed: ticking it loads it
    (target / "broken_gui_plugin" / "__init__.py").write_text("x = 1\n")
    assert dlg.set_enabled("broken_gui", True)
    assert dlg.records[dlg.row_of("broken_gui")].status == "loaded"
    row = dlg.row_of("broken_gui")
    assert dlg.table.item(row, 0).checkState() == Qt.CheckState.Checked
    (target / "broken_gui_plugin" / "__init__.py").write_text("raise ImportError('needs something odd')\n")
    dlg.set_enabled("broken_gui", True)
    assert any("Plugin not loaded: plugin 'broken_gui' quarantined" in e.message and e.level == "error"
               for e in w.session.history)  # the window's log says so
    dlg.table.selectRow(row)
    assert dlg.traceback_button.isEnabled()
    dlg.show_traceback()

    text = dlg.traceback_view.findChild(QPlainTextEdit).toPlainText()
    assert "Traceback" in text and "needs something odd" in text


def test_window_opens_despite_a_plugin_that_hangs_at_import(qtbot, make_window, folder, monkeypatch):
    import time

    monkeypatch.setenv(pm.IMPORT_TIMEOUT_ENV, "0.5")
    target = folder / "hanging"
    (target / "hanging_gui_plugin").mkdir(parents=True)
    (target / "hanging_gui_plugin" / "__init__.py").write_text("import threading\nthreading.Event().wait()\n")
    di = target / "hanging_gui_plugin-2.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: hanging-gui-plugin\nVersion: 2.0\n")
    (di / "entry_points.txt").write_text("[manifold_studio.plugins]\nhanging_gui = hanging_gui_plugin\n")
    t0 = time.monotonic()
    w = make_window(plugins.get_host())  # discovery happens here, time-boxed
    assert w.isVisible() and time.monotonic() - t0 < 30
    assert "pca" in w.host.algorithms
    dlg = open_plugin_manager(w)
    row = dlg.row_of("hanging_gui")
    assert dlg.table.item(row, 5).text().startswith("quarantined: did not finish importing within 0.5 s")
    assert "hanging_gui_plugin" not in sys.modules  # never imported into the window's process
    assert dlg.table.item(row, 3).text() == "2.0"
