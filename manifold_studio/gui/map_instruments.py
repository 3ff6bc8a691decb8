"""The map as an instrument (issue 31), installed on the main window: search, density layer,
automatic labels and original-space neighbours in the map's toolbar; a *Map instruments* dock
with *Explain selection*, the neighbour list, the inverse map (*Decode*) and the cross-filter
strip (linked histograms and bar charts that filter the map). The two colour options
"local density (map)" and "map faithfulness" are added to the map's colour menu.

Everything heavy runs on worker threads (``window.start_job`` through ``LatestJob``); the
neighbour index of a data set is built once per window and shared
(:class:`~manifold_studio.analysis.map_neighbours.IndexCache`). The instruments' settings (what is
on, bandwidth, search text, ...) are the session's view settings (:mod:`.view_settings`); the
charts and their filters and the explanation table are saved with the project
(``project_analyses`` / ``restore_analyses``; an older project's settings are read there too), and *Add to report* on the dock adds the
current tab with its table as facts.
"""
from __future__ import annotations

from PySide6.QtWidgets import QScrollArea, QTabWidget

from manifold_studio.analysis.map_neighbours import IndexCache
from manifold_studio.analysis.report import view_item
from manifold_studio.gui.run_faithfulness import RunFaithfulness
from manifold_studio.gui.views.cross_filter_strip import CrossFilterStrip
from manifold_studio.gui.views.density_layer import DensityLayer
from manifold_studio.gui.views.explain_panel import ExplainPanel
from manifold_studio.gui.views.inverse_panel import InversePanel
from manifold_studio.gui.views.label_layer import LabelLayer
from manifold_studio.gui.views.neighbour_layer import NeighbourLayer
from manifold_studio.gui.views.search_box import SearchBox

RECORD_KEY = "map_instruments"
#: rows of a table written into a report item
REPORT_ROWS = 20


class InstrumentTabs(QTabWidget):
    """The dock's tabs; :meth:`report_item` is what *Add to report* adds for it."""

    def __init__(self, instruments: "MapInstruments"):
        super().__init__()
        self.instruments = instruments

    def report_item(self, caption: str, png: bytes):
        mi = self.instruments
        current = self.currentWidget()
        facts = []
        if current is mi.explain and mi.explain.result is not None:
            res = mi.explain.result
            facts.append(("compared", f"{res.n_a:,} selected rows against {res.against} ({res.n_b:,} rows)"))
            for r in res.rows[:REPORT_ROWS]:
                what = r.feature + (f" = {r.category}" if r.category else "")
                facts.append((what, f"effect {r.effect:.3g}, q = {r.q:.3g} ({r.test})"))
        elif current is mi.neighbours.list:
            facts = [(f"{i}", mi.neighbours.list.item(i).text()) for i in range(min(mi.neighbours.list.count(), REPORT_ROWS))]
        elif current is mi.cross_filter and mi.cross_filter.filter is not None:
            facts = [(c.name, repr(c.filter)) for c in mi.cross_filter.filter.charts if c.filter is not None]
        return view_item(f"Map instruments — {self.tabText(self.currentIndex())}", caption, png, facts)


class MapInstruments:
    def __init__(self, window, view):
        self.window, self.view = window, view
        self.index_cache = IndexCache()
        self.search = SearchBox(window, view)
        self.density = DensityLayer(window, view)
        self.labels = LabelLayer(window, view)
        self.neighbours = NeighbourLayer(window, view, self.index_cache)
        self.run_faithfulness = RunFaithfulness(window, self.index_cache)
        for part in (self.search, self.density, self.labels, self.neighbours):
            view.add_toolbar_widget(part.widget())
        view.redrawn.connect(self.search.draw)
        self.explain = ExplainPanel(window, view)
        self.inverse = InversePanel(window, view)
        self.cross_filter = CrossFilterStrip(window, view)
        self.tabs = InstrumentTabs(self)
        self.tabs.addTab(self.explain, "Explain selection")
        self.tabs.addTab(self.neighbours.list, "Neighbours")
        self.tabs.addTab(self.inverse, "Decode")
        self.tabs.addTab(self.cross_filter, "Cross-filters")
        self.neighbours.shown.connect(lambda _nb: self.tabs.setCurrentWidget(self.neighbours.list))
        self.scroll = QScrollArea()  # the dock never forces the window's other views smaller
        self.scroll.setWidgetResizable(True)
        self.scroll.setWidget(self.tabs)

    # -- saved with the project ----------------------------------------------------------------
    def settings(self) -> dict:
        """What the instruments show, as plain JSON values."""
        d, lab, nb, s = self.density, self.labels, self.neighbours, self.search
        cf = self.cross_filter.filter
        charts = []
        for c in (cf.charts if cf is not None else []):
            filt = None if c.filter is None else (list(c.filter) if c.kind == "numeric" else sorted(c.filter))
            charts.append({"column": c.name, "filter": filt})
        return {"search": {"text": s.edit.text(), "mode": s.mode.currentData()},
                "density": {"on": d.box.isChecked(), "bandwidth": d.slider.value(),
                            "per_class": d.per_class.isChecked(), "fade": d.fade.isChecked()},
                "labels": {"on": lab.box.isChecked(), "groups": lab.groups_combo.currentData(),
                           "text": lab.text_combo.currentData()},
                "neighbours": {"on": nb.box.isChecked(), "k": nb.k_spin.value(),
                               "row": None if nb.result is None else int(nb.result.row)},
                "explain": {"against": self.explain.against.currentData(), "test": self.explain.test.currentData(),
                            "table": self.explain.result.table() if self.explain.result is not None else []},
                "cross_filter": charts}

    def project_analyses(self) -> dict:
        """The instruments' results kept with the project: the explanation's table and the
        cross-filter charts (their settings are the session's view settings, gui/view_settings.py)."""
        saved = self.settings()
        return {RECORD_KEY: ({"explain": {"table": saved["explain"]["table"]}, "cross_filter": saved["cross_filter"]}, {})}

    def restore_analyses(self, analyses: dict) -> None:
        saved = analyses.get(RECORD_KEY)
        if not saved:
            return
        doc = saved[0] if isinstance(saved, (tuple, list)) else saved
        self.apply_settings(doc if isinstance(doc, dict) else {})

    def apply_settings(self, doc: dict) -> None:
        """Apply :meth:`settings` (missing, unknown or invalid entries leave things as they are)."""
        def part(key):
            value = doc.get(key)
            return value if isinstance(value, dict) else {}

        def choose(combo, data):
            i = combo.findData(data)
            if i >= 0:
                combo.setCurrentIndex(i)

        def check(box, group, key):
            if isinstance(group.get(key), bool):
                box.setChecked(group[key])

        def number(spin, group, key):
            value = group.get(key)
            if isinstance(value, int) and not isinstance(value, bool):
                spin.setValue(value)

        d, lab, nb, ex, s = part("density"), part("labels"), part("neighbours"), part("explain"), part("search")
        number(self.density.slider, d, "bandwidth")
        check(self.density.per_class, d, "per_class")
        check(self.density.fade, d, "fade")
        check(self.density.box, d, "on")
        choose(self.labels.groups_combo, lab.get("groups"))
        choose(self.labels.text_combo, lab.get("text"))
        check(self.labels.box, lab, "on")
        number(self.neighbours.k_spin, nb, "k")
        check(self.neighbours.box, nb, "on")
        if isinstance(nb.get("row"), int) and nb.get("on") is True:
            self.neighbours.show_row(nb["row"])
        choose(self.explain.against, ex.get("against"))
        choose(self.explain.test, ex.get("test"))
        choose(self.search.mode, s.get("mode"))
        if isinstance(s.get("text"), str):
            self.search.edit.setText(s["text"])
            self.search.run()
        charts = doc.get("cross_filter")
        if isinstance(charts, list):
            self.cross_filter.restore([c for c in charts if isinstance(c, dict) and isinstance(c.get("column"), str)])


def install_map_instruments(window) -> MapInstruments | None:
    """Add the map instruments to ``window`` (``window.map_instruments``)."""
    view = window.map_view
    if view is None:
        return None
    mi = MapInstruments(window, view)
    window.add_dock("map_instruments", "Map instruments", mi.scroll, area="bottom")
    window.map_instruments = mi
    return mi
