"""The map as an instrument (issue 31), installed on the main window: search, density layer,
automatic labels and original-space neighbours in the map's toolbar; a *Map instruments* dock
with *Explain selection*, the neighbour list, the inverse map (*Decode*) and the cross-filter
strip (linked histograms and bar charts that filter the map). The two colour
options "local density (map)" and "map faithfulness" are added to the map's colour menu.

Everything heavy runs on worker threads (``window.start_job`` through ``LatestJob``); the
neighbour index of a data set is built once per window and shared
(:class:`~manifold_studio.analysis.map_neighbours.IndexCache`).
"""
from __future__ import annotations

from dataclasses import dataclass

from PySide6.QtWidgets import QScrollArea, QTabWidget

from manifold_studio.analysis.map_neighbours import IndexCache
from manifold_studio.gui.views.cross_filter_strip import CrossFilterStrip
from manifold_studio.gui.views.density_layer import DensityLayer
from manifold_studio.gui.views.explain_panel import ExplainPanel
from manifold_studio.gui.views.inverse_panel import InversePanel
from manifold_studio.gui.views.label_layer import LabelLayer
from manifold_studio.gui.views.neighbour_layer import NeighbourLayer
from manifold_studio.gui.views.search_box import SearchBox


@dataclass
class MapInstruments:
    search: SearchBox
    density: DensityLayer
    labels: LabelLayer
    neighbours: NeighbourLayer
    explain: ExplainPanel
    inverse: InversePanel
    cross_filter: CrossFilterStrip
    tabs: QTabWidget
    index_cache: IndexCache


def install_map_instruments(window) -> MapInstruments | None:
    """Add the map instruments to ``window`` (``window.map_instruments``)."""
    view = getattr(window, "map_view", None)
    if view is None or not hasattr(view, "add_color_source"):
        return None
    cache = IndexCache()
    search = SearchBox(window, view)
    density = DensityLayer(window, view)
    labels = LabelLayer(window, view)
    neighbours = NeighbourLayer(window, view, cache)
    for part in (search, density, labels, neighbours):
        view.add_toolbar_widget(part.widget())
    view.redrawn.connect(search.draw)
    explain = ExplainPanel(window, view)
    inverse = InversePanel(window, view)
    cross = CrossFilterStrip(window, view)
    tabs = QTabWidget()
    tabs.addTab(explain, "Explain selection")
    tabs.addTab(neighbours.list, "Neighbours")
    tabs.addTab(inverse, "Decode")
    tabs.addTab(cross, "Cross-filters")
    neighbours.shown.connect(lambda _nb: tabs.setCurrentWidget(neighbours.list))
    scroll = QScrollArea()  # the dock never forces the window's other views smaller
    scroll.setWidgetResizable(True)
    scroll.setWidget(tabs)
    window.add_dock("map_instruments", "Map instruments", scroll, area="bottom")
    window.map_instruments = MapInstruments(search, density, labels, neighbours, explain, inverse, cross, tabs, cache)
    return window.map_instruments
