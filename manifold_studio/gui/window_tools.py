"""What the main window is made of, listed explicitly: its result views (:data:`VIEWS`) and
the tools installed after its core (:data:`TOOLS`), in order. Nothing registers itself by being
imported: to add a view, write its module and put its class in :data:`VIEWS`; to add a tool,
write a module with an ``install_xxx(window)`` function (it adds actions, docks and toolbar widgets
through the window's public seams: ``window.menus``, ``window.add_dock``,
``window.map_view.add_toolbar_widget``, ``window.bridge`` signals) and put it in :data:`TOOLS` —
before ``install_help_pages`` (so its keys are listed) and before ``install_preferences``, which
must stay last: it restores the saved window layout once every dock exists. The attributes a tool
sets on the window are declared (None until it runs) in ``MainWindow._declare_parts``: add yours
there under its installer.
"""
from __future__ import annotations

from manifold_studio.gui import autosave
from manifold_studio.gui import classification_panel
from manifold_studio.gui import cluster_compare_panel
from manifold_studio.gui import clustering_tools
from manifold_studio.gui import data_table
from manifold_studio.gui import distance_matrix_actions
from manifold_studio.gui import export
from manifold_studio.gui import extend_panel
from manifold_studio.gui import h5ad_export
from manifold_studio.gui import help_pages
from manifold_studio.gui import image_points
from manifold_studio.gui import map_instruments
from manifold_studio.gui import missing_values
from manifold_studio.gui import plugin_manager_dialog
from manifold_studio.gui import preparation_panel
from manifold_studio.gui import preferences
from manifold_studio.gui import project_actions
from manifold_studio.gui import recent_files
from manifold_studio.gui import report_actions
from manifold_studio.gui import score_panel
from manifold_studio.gui import selection_actions
from manifold_studio.gui import undo
from manifold_studio.gui import view_settings
from manifold_studio.gui.views import compare_view
from manifold_studio.gui.views import confusion_view
from manifold_studio.gui.views import contingency_view
from manifold_studio.gui.views import correlation_view
from manifold_studio.gui.views import decision_view
from manifold_studio.gui.views import dendrogram_view
from manifold_studio.gui.views import distribution_view
from manifold_studio.gui.views import extension_quality_view
from manifold_studio.gui.views import map_view
from manifold_studio.gui.views import pca_view
from manifold_studio.gui.views import ranking_view
from manifold_studio.gui.views import reconstruction_view
from manifold_studio.gui.views import scatter3d_view
from manifold_studio.gui.views import scatter_matrix_view
from manifold_studio.gui.views import scatter_view
from manifold_studio.gui.views import selection_overlay
from manifold_studio.gui.views import silhouette_view
from manifold_studio.gui.views import spectrum_view
from manifold_studio.gui.views import training_curve_view
from manifold_studio.gui.views.base import ResultView, registered_views

#: the built-in result views; the window creates one of each, in their ``order``
VIEWS: tuple[type[ResultView], ...] = (
    map_view.MapView,
    spectrum_view.SpectrumView,
    reconstruction_view.ReconstructionView,
    extend_panel.ExtendPanel,
    extension_quality_view.ExtensionQualityView,
    silhouette_view.SilhouetteView,
    dendrogram_view.DendrogramView,
    contingency_view.ContingencyView,
    confusion_view.ConfusionView,
    decision_view.DecisionView,
    training_curve_view.TrainingCurveView,
    compare_view.CompareView,
    scatter3d_view.Scatter3DView,
    # feature views: the current data set's columns (issue 21)
    distribution_view.DistributionView,
    scatter_view.ScatterView,
    scatter_matrix_view.ScatterMatrixView,
    correlation_view.CorrelationView,
    pca_view.PcaView,
    ranking_view.RankingView,
)

#: (installer, what it adds), in installation order
TOOLS = (
    (preparation_panel.install_preparation, 'Preparation dock: steps fitted with the run, scale advice'),
    (clustering_tools.install_clustering_tools, "cluster overlay, 'Fit on:' input, Choose k tool"),
    (distance_matrix_actions.install_distance_matrices, 'File ▸ Open distance matrix…; only distance methods offered'),
    (classification_panel.install_classification, 'Classification group, evaluation, Classify this map'),
    (image_points.install_image_points, 'images on hover, thumbnails instead of dots'),
    (selection_overlay.install_selection, 'Pan / Rectangle / Lasso on the map; the selection highlighted'),
    (map_instruments.install_map_instruments, 'map search, density, labels, neighbours; Map instruments dock'),
    (view_settings.install_view_settings, "the map's and the map instruments' settings kept in the session"),
    (selection_actions.install_selection_actions, 'Selection menu + map context menu: subset, label, extend'),
    (project_actions.install_project_actions, 'File ▸ Open project / Save project'),
    (autosave.install_autosave, 'recovery file every few minutes, restored after a crash'),
    (missing_values.install_missing_values, 'Run says why with NaN; Tools ▸ Impute missing values'),
    (plugin_manager_dialog.install_plugin_manager, 'Tools ▸ Plugins…: install, uninstall, enable, disable'),
    (scatter3d_view.install_scatter3d, 'View ▸ 3-D view of this run; 2-D pairs without OpenGL'),
    (export.install_export, 'File ▸ Export: views as PNG/SVG, data set as CSV, copy image / rows'),
    (h5ad_export.install_h5ad_export, 'File ▸ Export: the current run into an AnnData .h5ad file (new, or added)'),
    (data_table.install_data_table, 'Table dock: the current data set, linked selection, search'),
    (recent_files.install_recent_files, 'File ▸ Open recent (data files and projects)'),
    (score_panel.install_test_score, 'Tools ▸ Test & Score: classifiers on the same folds, ROC, calibration'),
    (cluster_compare_panel.install_compare_clusterings, 'Tools ▸ Compare clusterings: methods × k, every measure'),
    (undo.install_undo, 'Edit ▸ Undo / Redo for removing a run or a data set'),
    (report_actions.install_report, "File ▸ Report: an Add to report button on every view's dock and the map"),
    (help_pages.install_help_pages, 'Help ▸ Keyboard shortcuts, Help ▸ Methods, View ▸ Zoom to fit'),
    (preferences.install_preferences, 'LAST: Edit ▸ Preferences…, restores the saved window layout'),
)


def all_views() -> list[type[ResultView]]:
    """The built-in views and any registered with :func:`~.views.base.register_view` (tests,
    extensions), in display order."""
    extra = [cls for cls in registered_views() if cls not in VIEWS]
    return sorted((*VIEWS, *extra), key=lambda c: (c.order, c.view_id))


def install_tools(window) -> None:
    """Install every tool of :data:`TOOLS` on ``window``, in order."""
    for installer, _what in TOOLS:
        installer(window)
