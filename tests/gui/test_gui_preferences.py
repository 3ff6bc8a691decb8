"""Preferences, window layout and recent files survive a restart (a temporary settings file:
the real user configuration is never read or written)."""
from __future__ import annotations

import os

import numpy as np
import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSettings, Qt  # noqa: E402
from threadpoolctl import threadpool_info  # noqa: E402

from gui_helpers import wait_idle  # noqa: E402
from manifold_studio.gui.main_window import MainWindow  # noqa: E402
from manifold_studio.gui.preferences import (  # noqa: E402
    COLORMAPS, DEFAULTS, SETTINGS_ENV, THREAD_ENV_VARS, apply_thread_limit, install_preferences, map_point_size,
    open_preferences, open_settings, startup_sample,
)
from manifold_studio.gui.recent_files import MAX_RECENT, install_recent_files  # noqa: E402
from manifold_studio.plugins.host import PluginHost  # noqa: E402

WINDOW_DIALOGS = False
RIGHT = Qt.DockWidgetArea.RightDockWidgetArea
#: a colour map other than the default (the map's own list)
OTHER_MAP = next((c for c in COLORMAPS if c != DEFAULTS["colormap"]), DEFAULTS["colormap"])


@pytest.fixture(autouse=True)
def settings_file(tmp_path, monkeypatch):
    path = tmp_path / "settings.ini"
    monkeypatch.setenv(SETTINGS_ENV, str(path))
    yield path
    apply_thread_limit(0)


@pytest.fixture(scope="module")
def host():
    return PluginHost().discover()


@pytest.fixture
def new_window(qtbot):
    """A real main window with the desktop habits installed, shown at the size it restored."""
    windows = []

    def make(host):
        w = MainWindow(host=host, initial_sample=None, dialogs=False)
        qtbot.addWidget(w)
        install_preferences(w)
        install_recent_files(w)
        w.show()
        qtbot.waitExposed(w)
        windows.append(w)
        return w

    yield make
    for w in windows:
        w.shutdown()


def test_the_settings_file_is_the_temporary_one(settings_file):
    store = open_settings()
    assert store.format() == QSettings.Format.IniFormat
    assert os.path.samefile(os.path.dirname(store.fileName()), settings_file.parent)
    assert startup_sample() == "iris"  # nothing stored yet: the application's usual start


def test_preferences_and_layout_survive_a_restart(qtbot, new_window, host, settings_file):
    w = new_window(host)
    assert w.preferences.values() == DEFAULTS  # a fresh settings file: the defaults
    assert not w.isMaximized()
    w.showMaximized()  # (the offscreen screen is smaller than the window's minimum size, so a
    # plain size would come back clamped to the screen: the maximised state is the geometry test)
    w.addDockWidget(RIGHT, w.docks["runs"])
    w.docks["messages"].hide()
    w.preferences.update(point_size=11, colormap=OTHER_MAP, default_sample="moons")
    assert map_point_size(w) == 11
    if hasattr(w.map_view, "settings"):
        assert w.map_view.settings()["colormap"] == OTHER_MAP
    qtbot.wait(50)
    w.close()
    assert settings_file.exists()

    again = new_window(host)
    assert again.preferences.values() == {"point_size": 11, "colormap": OTHER_MAP, "threads": 0,
                                          "default_sample": "moons", "restore_layout": True}
    assert map_point_size(again) == 11
    if hasattr(again.map_view, "settings"):
        assert again.map_view.settings()["colormap"] == OTHER_MAP
    assert again.isMaximized() and again.layout_restored
    assert again.dockWidgetArea(again.docks["runs"]) == RIGHT
    assert not again.docks["messages"].isVisible() and again.docks["data"].isVisible()
    assert startup_sample() == "moons"


def test_the_point_size_last_used_on_the_map_is_remembered(new_window, host):
    w = new_window(host)
    w.map_view.size_spin.setValue(4)  # changed in the map's own toolbar, not in Preferences
    w.close()
    again = new_window(host)
    assert again.preferences.get("point_size") == 4 and map_point_size(again) == 4


def test_layout_is_not_restored_when_the_preference_is_off(qtbot, new_window, host):
    w = new_window(host)
    w.showMaximized()
    w.addDockWidget(RIGHT, w.docks["runs"])
    w.preferences.update(restore_layout=False)
    w.close()
    again = new_window(host)
    assert again.dockWidgetArea(again.docks["runs"]) == Qt.DockWidgetArea.BottomDockWidgetArea
    assert not again.isMaximized() and not again.layout_restored
    assert not again.preferences.get("restore_layout")


def test_preferences_dialog_stores_on_ok_only(qtbot, new_window, host):
    w = new_window(host)
    dialog = open_preferences(w)
    dialog.point_size.setValue(13)
    dialog.colormap.setCurrentText(OTHER_MAP)
    dialog.default_sample.setCurrentIndex(dialog.default_sample.findData(""))
    dialog.reject()
    assert w.preferences.values() == DEFAULTS
    dialog = open_preferences(w)
    dialog.point_size.setValue(13)
    dialog.colormap.setCurrentText(OTHER_MAP)
    dialog.default_sample.setCurrentIndex(dialog.default_sample.findData(""))
    dialog.accept()
    assert w.preferences.get("point_size") == 13 and w.preferences.get("colormap") == OTHER_MAP
    assert map_point_size(w) == 13
    assert startup_sample() is None  # "(none)": an empty window at start
    assert w.preferences_action.shortcut().toString() == "Ctrl+,"
    assert w.preferences_action in w.menus["edit"].actions()


def test_bad_stored_values_fall_back_to_defaults(new_window, host, settings_file):
    store = open_settings()
    store.setValue("preferences/point_size", "huge")
    store.setValue("preferences/colormap", "no-such-map")
    store.setValue("preferences/threads", -4)
    store.sync()
    w = new_window(host)
    assert w.preferences.get("point_size") == DEFAULTS["point_size"]
    assert w.preferences.get("colormap") == DEFAULTS["colormap"]
    assert w.preferences.get("threads") == 0
    with pytest.raises(KeyError, match="Unknown preference"):
        w.preferences.update(pointsize=3)


def _blas_threads():
    return {info["filepath"]: info["num_threads"] for info in threadpool_info() if info["user_api"] == "blas"}


def test_threads_preference_limits_blas_also_in_worker_threads(qtbot, new_window, host):
    before = _blas_threads()
    env_before = {var: os.environ.get(var) for var in THREAD_ENV_VARS}
    w = new_window(host)
    w.preferences.update(threads=1)
    assert set(_blas_threads().values()) == {1}
    assert all(os.environ[var] == "1" for var in THREAD_ENV_VARS)  # for fits in a separate process
    seen = []
    job = w.start_job(lambda progress=None: _blas_threads(), title="threads", on_success=seen.append)
    qtbot.waitUntil(lambda: job.finished, timeout=10_000)
    assert seen and set(seen[0].values()) == {1}
    w.preferences.update(threads=0)
    assert _blas_threads() == before
    assert {var: os.environ.get(var) for var in THREAD_ENV_VARS} == env_before


# -- recent files -----------------------------------------------------------------------------
def _csv(path, rng, n=30):
    X = rng.normal(size=(n, 3))
    path.write_text("a,b,c\n" + "\n".join(",".join(f"{v:.6f}" for v in row) for row in X) + "\n")
    return path


def _load(qtbot, w, path):
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        w.open_file(path, ask=False)
    wait_idle(qtbot, w)


def test_recent_files_newest_first_and_missing_file_removed_with_a_message(qtbot, new_window, host, tmp_path):
    rng = np.random.default_rng(0)
    first, second = _csv(tmp_path / "first.csv", rng), _csv(tmp_path / "second.csv", rng)
    w = new_window(host)
    _load(qtbot, w, first)
    _load(qtbot, w, second)
    w.load_source("sample:iris")  # a sample is not a file: not in the list
    wait_idle(qtbot, w)
    assert w.recent.files.paths() == [str(second.resolve()), str(first.resolve())]
    _load(qtbot, w, first)  # opened again: back to the top, not twice
    assert w.recent.files.paths() == [str(first.resolve()), str(second.resolve())]
    w.recent.rebuild_menu()
    assert w.recent.entries() == [("files", str(first.resolve()), True), ("files", str(second.resolve()), True)]
    assert w.recent.menu.menuAction() in w.menus["file"].actions()

    second.unlink()
    w.recent.rebuild_menu()
    missing = [a for a in w.recent.menu.actions() if a.data() == str(second.resolve())]
    assert missing and "(missing)" in missing[0].text()
    names = list(w.session.datasets)
    missing[0].trigger()
    assert "second.csv no longer exists" in w.statusBar().currentMessage()
    assert w.recent.files.paths() == [str(first.resolve())]
    assert list(w.session.datasets) == names  # nothing loaded is lost

    # choosing an existing entry opens it again
    w.ask_loader_options = False
    [entry] = [a for a in w.recent.menu.actions() if a.data() == str(first.resolve())]
    with qtbot.waitSignal(w.datasetLoaded, timeout=10_000):
        entry.trigger()
    wait_idle(qtbot, w)
    assert len(w.session.datasets) == len(names) + 1


def test_recent_lists_keep_ten_and_survive_a_restart(qtbot, new_window, host, tmp_path):
    w = new_window(host)
    files = [tmp_path / f"f{i}.csv" for i in range(MAX_RECENT + 2)]
    for f in files:
        f.write_text("a\n1\n")
        w.recent.files.add(f)
    expected = [str(f.resolve()) for f in reversed(files)][:MAX_RECENT]
    assert w.recent.files.paths() == expected

    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    project = tmp_path / "desk.msproj"
    w.project.save_project(project)
    wait_idle(qtbot, w)
    assert w.recent.projects.paths() == [str(project.resolve())]
    w.close()

    again = new_window(host)
    assert again.recent.files.paths() == expected
    assert again.recent.projects.paths() == [str(project.resolve())]
    again.recent.rebuild_menu()
    [entry] = [a for a in again.recent.menu.actions() if a.data() == str(project.resolve())]
    entry.trigger()  # opens the project
    wait_idle(qtbot, again)
    assert list(again.session.datasets) == ["Iris"]
    [clear] = [a for a in again.recent.menu.actions() if a.text() == "Clear the lists"]
    clear.trigger()
    assert again.recent.files.paths() == [] and again.recent.projects.paths() == []
