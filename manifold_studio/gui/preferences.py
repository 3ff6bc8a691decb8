"""Preferences remembered between sessions (QSettings) and the Edit ▸ Preferences… dialog.

What is remembered: the map's point size and colour map, the number of threads the fits use,
the sample data set loaded at start, and — when "restore the window layout" is on — the
window's geometry and dock layout (saved when the window closes, restored when it opens).

Where: ``QSettings("Manifold Studio", "Manifold Studio")`` (the platform's native place), or
the INI file named by the environment variable ``MANIFOLD_STUDIO_SETTINGS`` when it is set
(tests and portable installs), or any QSettings passed to :func:`install_preferences`.
Nothing else reads the user's configuration, so a test never touches the real one.

Threads: the fits run NumPy/SciPy linear algebra (OpenBLAS); :func:`apply_thread_limit`
limits its thread pools process-wide through threadpoolctl (worker threads included) and sets
``OMP_NUM_THREADS`` / ``OPENBLAS_NUM_THREADS`` / ``MKL_NUM_THREADS`` for the fits that run in a
separate process (they inherit the environment). 0 means "automatic" (the libraries' own choice).
"""
from __future__ import annotations

import os

from PySide6.QtCore import QByteArray, QEvent, QObject, QSettings, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QMenu,
    QSpinBox,
    QVBoxLayout,
)

from manifold_studio.algorithms.blas_limits import limits_changed
from manifold_studio.gui.views import palette as _palette

ORGANISATION = APPLICATION = "Manifold Studio"
#: an INI file used instead of the native settings when set (tests, portable installs)
SETTINGS_ENV = "MANIFOLD_STUDIO_SETTINGS"
#: the continuous colour maps the map offers (the palette's own list)
COLORMAPS = tuple(getattr(_palette, "COLOR_MAP_NAMES", ("viridis",)))
POINT_SIZE_RANGE = (1, 20)
MAX_THREADS = 64
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
#: the preferences and their defaults (the types are the defaults' types)
DEFAULTS = {"point_size": 7, "colormap": getattr(_palette, "DEFAULT_COLOR_MAP", "viridis"), "threads": 0, "default_sample": "iris",
            "restore_layout": True}
GEOMETRY_KEY, STATE_KEY = "window/geometry", "window/state"
#: bump when the dock layout changes incompatibly (an older saved state is then ignored);
#: 2: the map-centred layout of issue 33 (views open on demand)
STATE_VERSION = 2


def open_settings(path=None) -> QSettings:
    """The settings store: the INI file ``path`` (or ``$MANIFOLD_STUDIO_SETTINGS``), else the
    native per-user settings of "Manifold Studio"."""
    path = path or os.environ.get(SETTINGS_ENV)
    if path:
        return QSettings(str(path), QSettings.Format.IniFormat)
    return QSettings(ORGANISATION, APPLICATION)


def settings_of(window) -> QSettings:
    """The settings store shared by every desktop-habit tool of ``window`` (made on first use)."""
    store = window.settings_store
    if store is None:
        store = window.settings_store = open_settings()
    return store


def _as_bool(value) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def clean_value(key: str, value):
    """``value`` converted to the preference's type and range (the default when unusable)."""
    default = DEFAULTS[key]
    try:
        if key == "point_size":
            return min(max(int(value), POINT_SIZE_RANGE[0]), POINT_SIZE_RANGE[1])
        if key == "threads":
            return min(max(int(value), 0), MAX_THREADS)
        if key == "colormap":
            return value if value in COLORMAPS else default
        if key == "restore_layout":
            return _as_bool(value)
        return "" if value is None else str(value)
    except (TypeError, ValueError):
        return default


def startup_sample(settings: QSettings | None = None) -> str | None:
    """The sample data set to load at start (None: an empty window) — for ``app.py``."""
    settings = settings if settings is not None else open_settings()
    value = settings.value("preferences/default_sample", DEFAULTS["default_sample"])
    return clean_value("default_sample", value) or None


# -- threads ----------------------------------------------------------------------------------
_thread_state: dict = {"limiter": None, "env": None}


def apply_thread_limit(threads: int) -> None:
    """Limit the BLAS/OpenMP thread pools to ``threads`` (0: back to the libraries' own choice)."""
    from threadpoolctl import ThreadpoolController

    if _thread_state["env"] is None:
        _thread_state["env"] = {var: os.environ.get(var) for var in THREAD_ENV_VARS}
    threads = clean_value("threads", threads)
    for var, original in _thread_state["env"].items():
        if threads:
            os.environ[var] = str(threads)
        elif original is None:
            os.environ.pop(var, None)
        else:
            os.environ[var] = original
    with limits_changed():   # a worker's one-BLAS-thread block keeps its one thread, then restores these
        limiter = _thread_state["limiter"]
        if limiter is not None:
            limiter.restore_original_limits()
            _thread_state["limiter"] = None
        if threads:
            _thread_state["limiter"] = ThreadpoolController().limit(limits=threads)


# -- the preferences --------------------------------------------------------------------------
class Preferences(QObject):
    """Typed access to the stored preferences; :attr:`changed` carries the new values."""

    changed = Signal(dict)

    def __init__(self, settings: QSettings, parent=None):
        super().__init__(parent)
        self.settings = settings

    def get(self, key: str):
        return clean_value(key, self.settings.value(f"preferences/{key}", DEFAULTS[key]))

    def values(self) -> dict:
        return {key: self.get(key) for key in DEFAULTS}

    def update(self, **values) -> dict:
        """Store ``values`` (unknown keys are refused); returns all values after the change."""
        unknown = set(values) - set(DEFAULTS)
        if unknown:
            raise KeyError(f"Unknown preference(s): {', '.join(sorted(unknown))}; known are "
                           f"{', '.join(DEFAULTS)}.")
        for key, value in values.items():
            self.settings.setValue(f"preferences/{key}", clean_value(key, value))
        self.settings.sync()
        current = self.values()
        self.changed.emit(current)
        return current

    # -- window layout ------------------------------------------------------------------------
    def save_layout(self, window) -> None:
        self.settings.setValue(GEOMETRY_KEY, window.saveGeometry())
        self.settings.setValue(STATE_KEY, window.saveState(STATE_VERSION))
        self.settings.sync()

    def restore_layout(self, window) -> bool:
        """Restore geometry and docks saved by :meth:`save_layout`; True when the docks were
        restored (a state saved by another :data:`STATE_VERSION` is not: the default layout then
        applies)."""
        if not self.get("restore_layout"):
            return False
        geometry, state = self.settings.value(GEOMETRY_KEY), self.settings.value(STATE_KEY)
        if not isinstance(state, QByteArray) or state.isEmpty() or not window.restoreState(state, STATE_VERSION):
            return False
        if isinstance(geometry, QByteArray) and not geometry.isEmpty():
            window.restoreGeometry(geometry)
        return True


def apply_map_settings(window, values: dict) -> None:
    """Point size and colour map on the central map (through ``map_view.apply_settings`` when
    the map offers it, else its size box)."""
    view = window.map_view
    if view is None:
        return
    if hasattr(view, "apply_settings"):
        view.apply_settings({"point_size": values["point_size"], "colormap": values["colormap"]})
    elif hasattr(view, "size_spin"):
        view.size_spin.setValue(values["point_size"])


def map_settings(window) -> dict:
    """The point size and colour map the map uses now (only those it has)."""
    view = window.map_view
    if view is None:
        return {}
    if hasattr(view, "settings"):
        current = view.settings()
        return {k: current[k] for k in ("point_size", "colormap") if k in current}
    return {"point_size": view.size_spin.value()} if hasattr(view, "size_spin") else {}


def map_point_size(window) -> int | None:
    """The point size the map uses now (None without a map)."""
    size = map_settings(window).get("point_size")
    return None if size is None else int(size)


class _CloseWatcher(QObject):
    """Saves the window layout, and the point size and colour map last used on the map, when
    the window closes (before its own closeEvent runs)."""

    def __init__(self, window, preferences: Preferences):
        super().__init__(window)
        self.window, self.preferences = window, preferences

    def eventFilter(self, obj, event):
        if obj is self.window and event.type() == QEvent.Type.Close:
            self.preferences.save_layout(self.window)
            used = {k: v for k, v in map_settings(self.window).items() if clean_value(k, v) == v}
            if used and any(self.preferences.get(k) != v for k, v in used.items()):
                self.preferences.update(**used)
        return False


# -- the dialog -------------------------------------------------------------------------------
class PreferencesDialog(QDialog):
    """Edit ▸ Preferences…: a form over :class:`Preferences`; OK stores and applies."""

    def __init__(self, preferences: Preferences, samples: dict, parent=None):
        super().__init__(parent)
        self.setWindowTitle("Preferences")
        self.preferences = preferences
        self.point_size = QSpinBox()
        self.point_size.setRange(*POINT_SIZE_RANGE)
        self.point_size.setSuffix(" px")
        self.point_size.setToolTip("Size of the points on the map.")
        self.colormap = QComboBox()
        self.colormap.addItems(COLORMAPS)
        self.colormap.setToolTip("Colour map of continuous colourings (features, scores).")
        self.threads = QSpinBox()
        self.threads.setRange(0, MAX_THREADS)
        self.threads.setSpecialValueText("automatic")
        self.threads.setToolTip(f"Threads of the linear algebra in fits (this machine has {os.cpu_count()} "
                                "CPU(s)); automatic lets the libraries decide.")
        self.default_sample = QComboBox()
        self.default_sample.addItem("(none: an empty window)", "")
        for sid, sample in sorted(samples.items(), key=lambda kv: (kv[1].name or kv[0]).lower()):
            self.default_sample.addItem(sample.name or sid, sid)
        self.default_sample.setToolTip("The sample data set loaded (and embedded) when the application starts.")
        self.restore_layout = QCheckBox("Restore the window size and dock layout at start")
        form = QFormLayout()
        form.addRow("Point size:", self.point_size)
        form.addRow("Colour map:", self.colormap)
        form.addRow("Threads:", self.threads)
        form.addRow("Sample at start:", self.default_sample)
        form.addRow("", self.restore_layout)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
                                   | QDialogButtonBox.StandardButton.RestoreDefaults)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        buttons.button(QDialogButtonBox.StandardButton.RestoreDefaults).clicked.connect(
            lambda: self.set_values(DEFAULTS))
        lay = QVBoxLayout(self)
        lay.addLayout(form)
        note = QLabel("<small>Stored in " + preferences.settings.fileName() + "</small>")
        note.setWordWrap(True)
        lay.addWidget(note)
        lay.addWidget(buttons)
        self.set_values(preferences.values())

    def set_values(self, values: dict) -> None:
        self.point_size.setValue(values["point_size"])
        self.colormap.setCurrentText(values["colormap"])
        self.threads.setValue(values["threads"])
        index = self.default_sample.findData(values["default_sample"])
        self.default_sample.setCurrentIndex(max(index, 0))
        self.restore_layout.setChecked(values["restore_layout"])

    def values(self) -> dict:
        return {"point_size": self.point_size.value(), "colormap": self.colormap.currentText(),
                "threads": self.threads.value(), "default_sample": self.default_sample.currentData() or "",
                "restore_layout": self.restore_layout.isChecked()}

    def accept(self) -> None:
        self.preferences.update(**self.values())
        super().accept()


def edit_menu(window) -> QMenu:
    """``window.menus["edit"]``, created right after the File menu when nobody has made it yet."""
    menu = window.menus.get("edit")
    if menu is None:
        menu = QMenu("&Edit", window)
        bar = window.menuBar()
        tops = bar.actions()
        file_menu = window.menus.get("file")
        after = tops.index(file_menu.menuAction()) + 1 if file_menu is not None and file_menu.menuAction() in tops else 0
        if after < len(tops):
            bar.insertMenu(tops[after], menu)
        else:
            bar.addMenu(menu)
        window.menus["edit"] = menu
    return menu


def apply_preferences(window, values: dict) -> None:
    apply_map_settings(window, values)
    apply_thread_limit(values["threads"])


def install_preferences(window, settings: QSettings | None = None) -> Preferences:
    """Preferences of ``window``: applied now, Edit ▸ Preferences… (Ctrl+,), layout saved on
    close and restored now. Call it last in ``MainWindow.__init__`` (every dock exists then).
    Idempotent."""
    existing = window.preferences
    if existing is not None:
        return existing
    if settings is not None:
        window.settings_store = settings
    prefs = window.preferences = Preferences(settings_of(window), window)
    prefs.changed.connect(lambda values: apply_preferences(window, values))
    apply_preferences(window, prefs.values())

    action = QAction("&Preferences…", window, shortcut=QKeySequence("Ctrl+,"))
    action.setObjectName("action_preferences")
    action.setMenuRole(QAction.MenuRole.PreferencesRole)
    action.triggered.connect(lambda: open_preferences(window))
    menu = edit_menu(window)
    if menu.actions():
        menu.addSeparator()
    menu.addAction(action)
    window.preferences_action = action

    window._preferences_watcher = _CloseWatcher(window, prefs)
    window.installEventFilter(window._preferences_watcher)
    window.window_layout.remember_default()  # View ▸ Reset layout goes back to this
    #: True when the saved geometry and docks were restored (app.py then keeps that size)
    window.layout_restored = prefs.restore_layout(window)
    if window.layout_restored:
        # the window's first-show proportions must not override the restored docks
        window._laid_out = True
    return prefs


def open_preferences(window) -> PreferencesDialog:
    dialog = PreferencesDialog(window.preferences, window.host.samples, window)
    window.preferences_dialog = dialog
    if window.dialogs:
        dialog.open()
    return dialog
