"""File ▸ Open recent: the last data files and projects, newest first, remembered in QSettings.

A data file enters the list when it has loaded (``window.datasetLoaded``: the data set's
``source`` is its path; samples are not files and stay out); a project when it is opened or
saved (``window.project.path_listeners``). Choosing an entry opens it again; an entry whose file
has gone is marked "(missing)" in the menu and, when chosen, removed with a message.
"""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtCore import QObject, QSettings, Signal
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QMenu

from manifold_studio.gui.preferences import settings_of

MAX_RECENT = 10
KINDS = {"files": "Data files", "projects": "Projects", "distance_matrices": "Distance matrices"}


class RecentList(QObject):
    """One list of recent paths (``kind``: "files" or "projects") stored as JSON in QSettings."""

    changed = Signal()

    def __init__(self, settings: QSettings, kind: str, limit: int = MAX_RECENT, parent=None):
        super().__init__(parent)
        if kind not in KINDS:
            raise ValueError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        self.settings, self.kind, self.limit = settings, kind, limit

    @property
    def key(self) -> str:
        return f"recent/{self.kind}"

    def paths(self) -> list[str]:
        """Newest first."""
        raw = self.settings.value(self.key, "[]")
        try:
            items = json.loads(raw) if isinstance(raw, str) else list(raw or ())
        except (TypeError, ValueError):
            items = []
        return [str(p) for p in items if isinstance(p, str) and p][: self.limit]

    def _store(self, paths: list[str]) -> None:
        self.settings.setValue(self.key, json.dumps(paths[: self.limit]))
        self.settings.sync()
        self.changed.emit()

    def add(self, path) -> None:
        text = str(Path(path).expanduser().resolve())
        self._store([text] + [p for p in self.paths() if p != text])

    def remove(self, path) -> None:
        text = str(path)
        self._store([p for p in self.paths() if p != text])

    def clear(self) -> None:
        self._store([])


class RecentFiles(QObject):
    """The recent data files and projects of a window, and the File ▸ Open recent menu."""

    def __init__(self, window, settings: QSettings):
        super().__init__(window)
        self.window = window
        self.files = RecentList(settings, "files", parent=self)
        self.projects = RecentList(settings, "projects", parent=self)
        # the recent files last opened as distance matrices (not a menu section: reopened as such)
        self.distance_matrices = RecentList(settings, "distance_matrices", limit=100, parent=self)
        self.menu = QMenu("Open &recent", window)
        self.menu.setObjectName("menu_recent")
        self.menu.aboutToShow.connect(self.rebuild_menu)
        self.files.changed.connect(self.rebuild_menu)
        self.projects.changed.connect(self.rebuild_menu)
        window.datasetLoaded.connect(self._on_dataset_loaded)
        project = window.project
        if project is not None:
            project.path_listeners.append(self._on_project_path)
        self.rebuild_menu()

    # -- hooks ------------------------------------------------------------------------------
    def _on_dataset_loaded(self, name: str) -> None:
        ds = self.window.session.datasets.get(name)
        source = getattr(ds, "source", "") or ""
        if source and not source.startswith("sample:") and Path(source).exists():
            self.files.add(source)
            if ds.distance_matrix:
                self.distance_matrices.add(source)
            else:
                self.distance_matrices.remove(str(Path(source).expanduser().resolve()))

    def _on_project_path(self, path, _what: str = "") -> None:
        self.projects.add(path)

    # -- the menu ---------------------------------------------------------------------------
    def rebuild_menu(self) -> None:
        self.menu.clear()
        empty = True
        for recent in (self.files, self.projects):
            paths = recent.paths()
            if not paths:
                continue
            self.menu.addSection(KINDS[recent.kind])
            for i, path in enumerate(paths):
                missing = not Path(path).exists()
                text = f"&{(i + 1) % 10} {Path(path).name}" + ("  (missing)" if missing else "")
                action = QAction(text, self.menu)
                action.setToolTip(path)
                action.setStatusTip(path + (" — no longer exists" if missing else ""))
                action.setData(path)
                action.setProperty("recent_kind", recent.kind)
                action.triggered.connect(lambda _=False, r=recent, p=path: self.open_recent(r.kind, p))
                self.menu.addAction(action)
                empty = False
        self.menu.addSeparator()
        clear = self.menu.addAction("Clear the lists")
        clear.triggered.connect(lambda: (self.files.clear(), self.projects.clear()))
        clear.setEnabled(not empty)
        if empty:
            none = self.menu.addAction("(nothing opened yet)")
            none.setEnabled(False)

    def entries(self) -> list[tuple[str, str, bool]]:
        """(kind, path, enabled) of the menu's entries, in menu order (for tests and tools)."""
        return [(a.property("recent_kind"), a.data(), a.isEnabled())
                for a in self.menu.actions() if a.property("recent_kind")]

    def open_recent(self, kind: str, path: str):
        """Open a recent entry; a missing file is removed from its list with a message."""
        recent = self.files if kind == "files" else self.projects
        if not Path(path).exists():
            recent.remove(path)
            self.window.report_error(f"{Path(path).name} no longer exists ({path}); it was removed "
                                     "from the recent list. Nothing loaded has changed.")
            return None
        if kind == "files" and path in self.distance_matrices.paths() and self.window.distance_matrices is not None:
            return self.window.distance_matrices.open_file(path)
        if kind == "files":
            return self.window.open_file(path)
        return self.window.project.open_project(path)


def _insert_in_file_menu(window, menu: QMenu) -> None:
    """After "Open data file…" / "Load sample data", before the Quit group."""
    file_menu = window.menus["file"]
    actions = file_menu.actions()
    quit_index = next((i for i, a in enumerate(actions) if a.text().replace("&", "") == "Quit"), len(actions))
    before = actions[quit_index - 1] if quit_index > 0 and actions[quit_index - 1].isSeparator() else (
        actions[quit_index] if quit_index < len(actions) else None)
    if before is None:
        file_menu.addMenu(menu)
    else:
        file_menu.insertMenu(before, menu)


def install_recent_files(window) -> RecentFiles:
    """File ▸ Open recent, fed by loaded files and opened/saved projects. Idempotent."""
    existing = window.recent
    if existing is not None:
        return existing
    window.recent = RecentFiles(window, settings_of(window))
    _insert_in_file_menu(window, window.recent.menu)
    return window.recent
