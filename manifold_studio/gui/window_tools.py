"""Every tool the main window has beyond its core (panels, views, menus, jobs), installed in
order by :func:`install_tools`.

Each tool lives in its own module with an ``install_xxx(window)`` function that adds its
actions, docks and toolbar widgets through the window's public seams (``window.menus``,
``window.add_dock``, ``window.map_view.add_toolbar_widget``, ``window.bridge`` signals). To add
one, write the module and put its installer in :data:`TOOLS` — before ``install_help_pages``
(so its keys are listed) and before ``install_preferences``, which must stay last: it restores
the saved window layout once every dock exists.
"""
from __future__ import annotations

import importlib

#: (module, installer, what it adds), in installation order
TOOLS = (
    ("clustering_tools", "install_clustering_tools", "cluster overlay, 'Fit on:' input, Choose k tool"),
    ("classification_panel", "install_classification", "Classification group, evaluation, Classify this map"),
    ("image_points", "install_image_points", "images on hover, thumbnails instead of dots"),
    ("views.selection_overlay", "install_selection", "Pan / Rectangle / Lasso on the map; the selection highlighted"),
    ("selection_actions", "install_selection_actions", "Selection menu + map context menu: subset, label, extend"),
    ("project_actions", "install_project_actions", "File ▸ Open project / Save project"),
    ("autosave", "install_autosave", "recovery file every few minutes, restored after a crash"),
    ("missing_values", "install_missing_values", "Run says why with NaN; Tools ▸ Impute missing values"),
    ("plugin_manager_dialog", "install_plugin_manager", "Tools ▸ Plugins…: install, uninstall, enable, disable"),
    ("views.scatter3d_view", "install_scatter3d", "View ▸ 3-D view of this run; 2-D pairs without OpenGL"),
    ("export", "install_export", "File ▸ Export: views as PNG/SVG, data set as CSV, copy image / rows"),
    ("data_table", "install_data_table", "Table dock: the current data set, linked selection, search"),
    ("recent_files", "install_recent_files", "File ▸ Open recent (data files and projects)"),
    ("undo", "install_undo", "Edit ▸ Undo / Redo for removing a run or a data set"),
    ("help_pages", "install_help_pages", "Help ▸ Keyboard shortcuts, Help ▸ Methods, View ▸ Zoom to fit"),
    ("preferences", "install_preferences", "LAST: Edit ▸ Preferences…, restores the saved window layout"),
)


def install_tools(window) -> None:
    """Install every tool of :data:`TOOLS` on ``window``, in order."""
    for module, installer, _what in TOOLS:
        getattr(importlib.import_module(f"manifold_studio.gui.{module}"), installer)(window)
