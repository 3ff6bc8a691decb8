"""The main window's layout (issue 33). The map is the centre: it keeps at least half of the
window. Data, Preparation and Algorithm stack in a left column; Runs and Messages share a short
strip under the map; every other dock (the result views, Table, Test and Score, Map instruments,
...) stays hidden until it is opened from the View menu (or by its tool), and then shows as a tab
of its area, raised, its area given room (a third of the width on the right, half of the
height at the bottom). A view the user opened is hidden while the current run has nothing for it
and comes back with a run it applies to.

Tab titles of the dock areas are never elided (the bars scroll instead). *View ▸ Reset layout*
goes back to the default; the layout saved on close (:mod:`.preferences`) is keyed by its
``STATE_VERSION``, so a layout saved before this one is not restored.
"""
from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, QTimer
from PySide6.QtGui import QAction
from PySide6.QtWidgets import QTabBar

#: the docks shown in the default layout (every other dock opens on demand)
DEFAULT_DOCKS = ("data", "preparation", "algorithm", "runs", "messages")
#: docks of the strip under the map (kept low)
STRIP_DOCKS = ("runs", "messages")
#: the left column's width: a fraction of the window's, within these pixels
LEFT_FRACTION, LEFT_WIDTH = 0.22, (290, 380)
#: the strip under the map: a fraction of the window's height, within these pixels
STRIP_FRACTION, STRIP_HEIGHT = 0.15, (110, 170)
#: a dock opened on the right gets this fraction of the width; at the bottom, of the height
RIGHT_FRACTION, BOTTOM_FRACTION = 0.32, 0.55

_RIGHT = Qt.DockWidgetArea.RightDockWidgetArea
_BOTTOM = Qt.DockWidgetArea.BottomDockWidgetArea


def clamp(value: float, bounds: tuple[int, int]) -> int:
    return int(max(bounds[0], min(bounds[1], value)))


class WindowLayout(QObject):
    """The docks' default places and sizes, opening on demand, Reset layout and tab titles of
    ``window`` (a :class:`~.main_window.MainWindow`)."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        #: the docks the user wants open (shown while their view applies to the current run)
        self.wanted: set[str] = set()
        #: the window's state right after every dock was made (View ▸ Reset layout restores it)
        self.default_state = None
        self._auto = False
        self._tabs_timer = QTimer(self)
        self._tabs_timer.setSingleShot(True)
        self._tabs_timer.setInterval(0)
        self._tabs_timer.timeout.connect(self.fix_tab_bars)
        window.installEventFilter(self)
        self.reset_action = QAction("&Reset layout", window)
        self.reset_action.setObjectName("action_reset_layout")
        self.reset_action.setToolTip("Back to the default layout: the map in the centre, Data, Preparation and "
                                     "Algorithm on the left, Runs and Messages under the map.")
        self.reset_action.triggered.connect(self.reset)

    # -- docks ------------------------------------------------------------------------------
    def adopt(self, key: str, dock) -> None:
        """Called for every new dock: a default dock is wanted, any other hidden until opened."""
        action = dock.toggleViewAction()
        action.toggled.connect(lambda on, key=key: self._toggled(key, on))
        action.triggered.connect(lambda on, key=key: on and self.open(key))
        if key in DEFAULT_DOCKS:
            self.wanted.add(key)
        else:
            dock.hide()

    def _toggled(self, key: str, on: bool) -> None:
        if self._auto:
            return
        (self.wanted.add if on else self.wanted.discard)(key)
        if on and self.window.isVisible():  # opened by a menu or a tool: room once it is laid out
            QTimer.singleShot(0, lambda: self._give_room(key))

    def open(self, key: str) -> None:
        """Show the dock ``key`` as the front tab of its area, with room to be read."""
        w = self.window
        dock = w.docks[key]
        self.wanted.add(key)
        dock.show()
        dock.raise_()
        self._give_room(key)
        QTimer.singleShot(0, lambda: self._give_room(key))  # again once laid out

    def _give_room(self, key: str) -> None:
        w = self.window
        dock = w.docks.get(key)
        if dock is None or dock.isHidden() or dock.isFloating():
            return
        area = w.dockWidgetArea(dock)
        # (only when it has less: resizeDocks lays the whole window out again, repainting the map)
        if area == _RIGHT and dock.width() < int(w.width() * RIGHT_FRACTION):
            w.resizeDocks([dock], [int(w.width() * RIGHT_FRACTION)], Qt.Orientation.Horizontal)
        elif area == _BOTTOM and key not in STRIP_DOCKS and dock.height() < int(w.height() * BOTTOM_FRACTION):
            w.resizeDocks([dock], [int(w.height() * BOTTOM_FRACTION)], Qt.Orientation.Vertical)

    def show_if_wanted(self, key: str, applies: bool) -> None:
        """A view's dock after a run: shown when the user opened it and it applies to the run."""
        dock = self.window.docks.get(key)
        if dock is None:
            return
        target = applies and key in self.wanted
        if dock.isHidden() == target:
            self._auto = True
            try:
                dock.setVisible(target)
            finally:
                self._auto = False

    # -- the default layout -----------------------------------------------------------------
    def remember_default(self) -> None:
        """Keep the current state as the default (call once every dock exists, before a saved
        layout is restored)."""
        self.default_state = self.window.saveState()

    def apply_proportions(self) -> None:
        """The default sizes: a narrow left column, a low strip under the map, the map the rest."""
        w = self.window
        if "runs" in w.docks:
            w.docks["runs"].raise_()  # the log of runs is the first tab a newcomer sees
        left = {k: w.docks[k] for k in ("data", "preparation", "algorithm") if k in w.docks}
        shown = {k: d for k, d in left.items() if d.isVisible() and not d.isFloating()}
        if shown:
            width = clamp(w.width() * LEFT_FRACTION, LEFT_WIDTH)
            w.resizeDocks(list(shown.values()), [width] * len(shown), Qt.Orientation.Horizontal)
        if len(shown) > 1:  # Data as tall as it needs (up to 45 %), Preparation low, Algorithm the rest
            heights = {"data": min(w.data_panel.sizeHint().height() + 30, int(w.height() * 0.45)),
                       "preparation": int(w.height() * 0.2)}
            rest = max(200, w.height() - sum(h for k, h in heights.items() if k in shown))
            w.resizeDocks(list(shown.values()), [heights.get(k, rest) for k in shown], Qt.Orientation.Vertical)
        strip = [w.docks[k] for k in STRIP_DOCKS if k in w.docks and w.docks[k].isVisible()]
        if strip:
            w.resizeDocks(strip[:1], [clamp(w.height() * STRIP_FRACTION, STRIP_HEIGHT)], Qt.Orientation.Vertical)
        right = [d for d in w.docks.values() if w.dockWidgetArea(d) == _RIGHT and d.isVisible() and not d.isFloating()]
        if right:
            w.resizeDocks(right[:1], [int(w.width() * RIGHT_FRACTION)], Qt.Orientation.Horizontal)

    def reset(self) -> None:
        """View ▸ Reset layout: every dock back in its default place, only the default ones shown."""
        w = self.window
        if self.default_state is not None:
            w.restoreState(self.default_state)
        for key, dock in w.docks.items():
            if dock.isFloating():
                dock.setFloating(False)
            dock.setVisible(key in DEFAULT_DOCKS)
        self.wanted = {k for k in DEFAULT_DOCKS if k in w.docks}
        self.apply_proportions()
        QTimer.singleShot(0, self.apply_proportions)  # again once the restored docks are laid out

    # -- tab titles ---------------------------------------------------------------------------
    def fix_tab_bars(self) -> None:
        """The dock areas' tab bars show whole titles and scroll when they do not fit."""
        for bar in self.window.findChildren(QTabBar, options=Qt.FindChildOption.FindDirectChildrenOnly):
            if bar.elideMode() != Qt.TextElideMode.ElideNone:
                bar.setElideMode(Qt.TextElideMode.ElideNone)
                bar.setUsesScrollButtons(True)

    def eventFilter(self, obj, event):
        if obj is self.window and event.type() == QEvent.Type.ChildAdded:
            self._tabs_timer.start()  # a dock area made a new tab bar
        return False
