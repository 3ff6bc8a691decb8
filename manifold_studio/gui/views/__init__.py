"""Result views. Importing this package registers the built-in views; add a module for a new
view and import it here (see :mod:`manifold_studio.gui.views.base`)."""
from manifold_studio.gui.views.base import ResultView, register_view, registered_views, unregister_view
from manifold_studio.gui.views import map_view  # noqa: F401  (registers the map)
from manifold_studio.gui.views import silhouette_view, contingency_view, dendrogram_view  # noqa: F401,E402  (clusters)
from manifold_studio.gui.views import spectrum_view  # noqa: F401  (eigenvalue spectrum)
from manifold_studio.gui.views import extension_quality_view  # noqa: F401  (section 5.4 report)
from manifold_studio.gui.views import reconstruction_view  # noqa: F401  (originals vs reconstructions)
from manifold_studio.gui.views import compare_view, scatter3d_view  # noqa: F401  (Compare runs grid, 3-D scatter)
from manifold_studio.gui import extend_panel  # noqa: F401,E402  (the 'Out of sample' panel, a view)

__all__ = ["ResultView", "register_view", "registered_views", "unregister_view"]
