"""Result views. Importing this package registers the built-in views; add a module for a new
view and import it here (see :mod:`manifold_studio.gui.views.base`)."""
from manifold_studio.gui import extend_panel  # noqa: F401,E402  (the 'Out of sample' panel, a view)
from manifold_studio.gui.views import (  # noqa: F401,E402  (clusters)  # noqa: F401  (Compare runs grid, 3-D scatter)
    compare_view,
    contingency_view,
    dendrogram_view,
    extension_quality_view,  # noqa: F401  (section 5.4 report)
    map_view,  # noqa: F401  (registers the map)
    reconstruction_view,  # noqa: F401  (originals vs reconstructions)
    scatter3d_view,
    silhouette_view,
    spectrum_view,  # noqa: F401  (eigenvalue spectrum)
)
from manifold_studio.gui.views.base import (
    ResultView,
    register_view,
    registered_views,
    unregister_view,
)

__all__ = ["ResultView", "register_view", "registered_views", "unregister_view"]
