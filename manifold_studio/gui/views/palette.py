"""Colours for labels in the window's views: the Qt-free tables and rules of
:mod:`manifold_studio.render.colors` (the same as the command line's plots), re-exported here for
the views. ``Coloring.rgba(i)`` gives a colour as a tuple that pyqtgraph's mkBrush / mkPen take.
"""
from __future__ import annotations

from manifold_studio.render.colors import (  # noqa: F401  (re-exported for the views)
    CATEGORICAL,
    COLOR_MAP_NAMES,
    CONTINUOUS,
    DEFAULT_COLOR_MAP,
    MAX_CATEGORIES,
    N_CONTINUOUS_LEVELS,
    NAN_COLOR,
    NAN_NAME,
    NO_LABEL_COLOR,
    Coloring,
    color_map,
    is_categorical,
    label_text,
    make_coloring,
)

__all__ = ["CATEGORICAL", "COLOR_MAP_NAMES", "CONTINUOUS", "DEFAULT_COLOR_MAP", "MAX_CATEGORIES",
           "N_CONTINUOUS_LEVELS", "NAN_COLOR", "NAN_NAME", "NO_LABEL_COLOR", "Coloring", "color_map",
           "is_categorical", "label_text", "make_coloring"]
