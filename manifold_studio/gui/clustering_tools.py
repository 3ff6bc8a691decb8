"""Wire the clustering features into a main window (called once from ``MainWindow.__init__``).

- the cluster overlay on the map (labels of a dendrogram cut, centres): :mod:`.cluster_overlay`;
- the "Fit on:" input of the algorithm panel (raw data or an earlier run's map) and the
  "Cluster this map" action: :mod:`.input_selector`;
- the "Choose k" tool in a dock: :mod:`.choose_k_tool`;
- the silhouette / contingency / dendrogram views are registered views (``gui/views``); here
  the dendrogram dock is put below the silhouette instead of behind it.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QAction, QKeySequence

from manifold_studio.gui.choose_k_tool import ChooseKTool
from manifold_studio.gui.cluster_overlay import ClusterOverlay
from manifold_studio.gui.fit_scroll import scrollable
from manifold_studio.gui.input_selector import InputSelector


def install_clustering_tools(window) -> None:
    if window.map_view is not None:
        ClusterOverlay.for_window(window)
    panel = window.algorithm_panel
    selector = InputSelector(window)
    panel.input_selector = selector
    panel.layout().insertWidget(1, selector)
    window.input_selector = selector

    act = QAction("Cluster this &map", window, shortcut=QKeySequence("Ctrl+K"))
    act.setToolTip("Fit the next run on the map shown now (its embedding) with a clustering method.")
    act.triggered.connect(selector.cluster_this_map)
    window.add_tool_action(act)
    window.cluster_map_action = act

    tool = ChooseKTool(window)
    window.choose_k_tool = tool
    dock = window.add_dock("choose_k", "Choose k", scrollable(tool), "bottom")
    show = QAction("&Choose k…", window)
    show.setToolTip("Run a clustering method for k in a range and compare W, Davies–Bouldin, "
                    "silhouette and the validation log-likelihood.")

    def open_tool():
        dock.show()
        dock.raise_()
        tool.refresh_inputs()
        src = selector.source_run()
        if src is not None:
            tool.set_input(src)
        algo = window.algorithm_panel.algorithm_id
        idx = tool.method_combo.findData(algo)
        if idx >= 0:
            tool.method_combo.setCurrentIndex(idx)

    show.triggered.connect(open_tool)
    window.add_tool_action(show)
    window.choose_k_action = show

    dock.hide()  # opened from Tools > Choose k…
    sil, dend = window.docks.get("view:silhouette"), window.docks.get("view:dendrogram")
    if sil is not None and dend is not None:  # the dendrogram below the silhouette, not behind it
        area = window.dockWidgetArea(sil)
        window.removeDockWidget(dend)
        window.addDockWidget(area, dend, Qt.Orientation.Vertical)  # a new row of the area
        dend.hide()  # opened from the View menu, as every view (gui/window_layout.py)
