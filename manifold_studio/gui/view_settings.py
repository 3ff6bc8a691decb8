"""The views' settings live in the session (issue 30): this binds the widgets to them.

What the map is coloured by, its point size, colour map and opacity (view ``"map"``), and the map
instruments' search, density, labels, neighbours and explanation settings (view
``"map_instruments"``) are session state (:meth:`~manifold_studio.session.view_state.ViewState.set_view_setting`).
A change the analyst makes in a widget runs that command (Edit ▸ Undo records it; a slider's drag
or typed text is one step); a change of the state (undo, redo, a project opened) sets the widgets.
What the map picks of its own accord (the colour of a new run's clusters, the preferences' point
size) is noted in the state without a command, so the project saves what the map shows.
"""
from __future__ import annotations

from PySide6.QtCore import QTimer

from manifold_studio.gui.session_undo import install_session_undo

MAP, INSTRUMENTS = "map", "map_instruments"
#: the map instruments' settings that are view settings (their results are saved with the project)
INSTRUMENT_KEYS = ("search", "density", "labels", "neighbours", "explain")


class ViewSettings:
    """Keeps the map's and the map instruments' widgets and the session's view settings alike."""

    def __init__(self, window):
        self.window, self.session, self.view = window, window.session, window.map_view
        self._applying = False
        self._sync_timer = QTimer(window)
        self._sync_timer.setSingleShot(True)
        self._sync_timer.timeout.connect(self.note_map)
        view, enc = self.view, self.view.encoding
        view.color_combo.currentIndexChanged.connect(lambda _i: self._record(MAP, "colour", self._colour()))
        view.size_spin.valueChanged.connect(lambda v: self._record(MAP, "point_size", int(v), merge=True))
        enc.cmap_combo.currentIndexChanged.connect(lambda _i: self._record(MAP, "colormap", enc.cmap()))
        enc.opacity_slider.valueChanged.connect(lambda _v: self._record(MAP, "opacity", enc.opacity(), merge=True))
        view.redrawn.connect(lambda: self._sync_timer.start(0))
        mi = window.map_instruments
        if mi is not None:
            d, lab, nb, s, ex = mi.density, mi.labels, mi.neighbours, mi.search, mi.explain
            for key, signals, merge in (
                    ("search", (s.edit.textChanged, s.mode.currentIndexChanged), True),
                    ("density", (d.box.toggled, d.per_class.toggled, d.fade.toggled), False),
                    ("density", (d.slider.valueChanged,), True),
                    ("labels", (lab.box.toggled, lab.groups_combo.currentIndexChanged,
                                lab.text_combo.currentIndexChanged), False),
                    ("neighbours", (nb.box.toggled, nb.shown), False),
                    ("neighbours", (nb.k_spin.valueChanged,), True),
                    ("explain", (ex.against.currentIndexChanged, ex.test.currentIndexChanged), False)):
                for signal in signals:
                    signal.connect(lambda *_a, key=key, merge=merge: self._record(INSTRUMENTS, key,
                                                                                  self._instrument(key), merge))
        window.bridge.event.connect(self._on_event)
        self._start()

    # -- what the widgets show ------------------------------------------------------------------
    def _colour(self) -> str:
        return self.view.color_combo.currentData() or ""

    def map_values(self) -> dict:
        """The map's settings as its widgets show them."""
        return {"colour": self._colour(), **self.view.settings()}

    def _instrument(self, key: str) -> dict:
        value = self.window.map_instruments.settings()[key]
        if key == "explain":  # its table is a result, saved with the project's analyses
            value = {k: v for k, v in value.items() if k != "table"}
        return value

    # -- widgets -> state -----------------------------------------------------------------------
    def _record(self, view: str, key: str, value, merge: bool = False) -> None:
        if self._applying:
            return
        try:
            self.session.set_view_setting(view, key, value, merge=merge)
        except Exception as exc:  # noqa: BLE001 - said; the widget keeps what it shows
            self.window.report_error(f"Could not keep the {view}'s {key} setting: {exc}")

    def note_map(self) -> None:
        """Note what the map shows of its own accord (no command)."""
        if self._applying:
            return
        for key, value in self.map_values().items():
            self.session.note_view_setting(MAP, key, value)

    def _start(self) -> None:
        """A session that already has settings shows them; the others note what the widgets show."""
        mi = self.window.map_instruments
        for view, values in ((MAP, self.map_values()),
                             (INSTRUMENTS, {k: self._instrument(k) for k in INSTRUMENT_KEYS} if mi else {})):
            for key, value in values.items():
                if self.session.view_setting(view, key) is None:
                    self.session.note_view_setting(view, key, value)
                else:
                    self.apply(view, key)

    # -- state -> widgets -----------------------------------------------------------------------
    def _on_event(self, event) -> None:
        if event.kind == "view_setting_changed" and event.setting is not None:
            self.apply(*event.setting)

    def apply(self, view: str, key: str) -> None:
        """Show the session's setting ``key`` of ``view`` in the widgets (a value they do not
        offer, e.g. a column the data set lacks, leaves them as they are)."""
        value = self.session.view_setting(view, key)
        if value is None or self._applying:
            return
        self._applying = True
        try:
            if view == MAP and key == "colour":
                idx = self.view.color_combo.findData(value)
                if idx >= 0 and idx != self.view.color_combo.currentIndex():
                    self.view.color_combo.setCurrentIndex(idx)
            elif view == MAP and key in ("point_size", "colormap", "opacity"):
                if self.view.settings().get(key) != value:
                    self.view.apply_settings({key: value})
            elif view == INSTRUMENTS and key in INSTRUMENT_KEYS and self.window.map_instruments is not None \
                    and isinstance(value, dict) and self._instrument(key) != value:
                self.window.map_instruments.apply_settings({key: value})
        finally:
            self._applying = False


def install_view_settings(window) -> ViewSettings | None:
    """Bind the map's and the map instruments' settings to the session (``window.view_settings``)."""
    if window.map_view is None or not hasattr(window.map_view, "encoding"):
        return None
    install_session_undo(window)  # the settings' commands go on Edit ▸ Undo
    window.view_settings = ViewSettings(window)
    return window.view_settings
