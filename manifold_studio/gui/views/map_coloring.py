"""The map's colouring per colour option, kept per map: a colour change of a large map (by
class, by column, by local density, by faithfulness) is computed on a worker while the map
keeps its current colours, then redrawn (issue 33: the window's thread never spends the
tens of milliseconds a million labels' ``np.unique`` or colour codes take). New coordinates
(a new run, a fit's intermediate map) are still coloured at once: they must be drawn now."""
from __future__ import annotations

from manifold_studio.gui.views.map_layout import column_kind
from manifold_studio.gui.worker import LatestJob
from manifold_studio.render.colors import make_coloring

#: maps with more points than this compute a new colouring on a worker
ASYNC_MIN_POINTS = 100_000


def coloring_task(labels, n: int, title: str, cmap: str, key: str, progress=None):
    """The :class:`~manifold_studio.render.colors.Coloring` of ``labels`` (Qt-free)."""
    return make_coloring(labels, n, title, cmap, kind=column_kind(labels, key))


def cached_coloring(view, labels, title: str, key: str, cmap: str, cache_key):
    """The colouring of ``labels`` for ``view``'s points from its cache; computed now for a
    small map or new coordinates; else None while a worker computes it (``view._redraw()`` is
    called when it is ready and still wanted)."""
    cached = view._coloring_cache.get(cache_key)
    if cached is not None:
        return cached[1]
    xy, n = view.xy, len(view.xy)
    if (n > ASYNC_MIN_POINTS and view.job_window is not None and labels is not None
            and view.coloring is not None and view.__dict__.get("_colored_xy") is xy):
        pending = view.__dict__.get("_coloring_pending")
        if pending is None or pending[0] != cache_key or pending[1] is not xy:
            view._coloring_pending = (cache_key, xy)
            job = view.__dict__.setdefault("_coloring_job", LatestJob())

            def ready(coloring):
                view._coloring_pending = None
                if view.xy is xy:
                    view._coloring_cache[cache_key] = (labels, coloring)
                    view._redraw()

            def failed(message, _detail):
                view._coloring_pending = None
                view.window.show_status(f"The map's colours could not be computed: {message}")

            job.start(view.window, coloring_task, labels, n, title, cmap, key, title="Map colours",
                      on_success=ready, on_failure=failed)
        return None
    coloring = coloring_task(labels, n, title, cmap, key)
    view._coloring_cache[cache_key] = (labels, coloring)
    return coloring
