"""Colours for labels: a categorical palette for classes, a colour map for continuous values.

Pure numpy apart from the QColor helpers, so every map-like view colours points the same way.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtGui import QColor

# Tableau 10 followed by a second, lighter set: distinct on a white background.
CATEGORICAL = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
    (174, 199, 232), (255, 187, 120), (152, 223, 138), (255, 152, 150), (197, 176, 213),
    (196, 156, 148), (247, 182, 210), (199, 199, 199), (219, 219, 141), (158, 218, 229),
], dtype=np.uint8)

# viridis, 9 anchors (interpolated to N_CONTINUOUS_LEVELS colours)
_VIRIDIS = np.array([
    (68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141),
    (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37)], dtype=float)
N_CONTINUOUS_LEVELS = 64
NO_LABEL_COLOR = (70, 110, 170)
MAX_CATEGORIES = 60  # more distinct integer values than this: treated as continuous


def _viridis(levels: int = N_CONTINUOUS_LEVELS) -> np.ndarray:
    t = np.linspace(0, 1, levels)
    anchors = np.linspace(0, 1, len(_VIRIDIS))
    return np.stack([np.interp(t, anchors, _VIRIDIS[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


CONTINUOUS = _viridis()


@dataclass
class Coloring:
    """How a vector of labels maps to colours.

    ``codes`` gives each point the index of its colour in ``colors`` (an (m, 3) uint8 table).
    Categorical: ``names`` holds the text of each category (legend). Continuous: ``vmin`` and
    ``vmax`` are the value range mapped onto the colour map.
    """

    mode: str  # "none", "categorical", "continuous"
    codes: np.ndarray
    colors: np.ndarray
    names: list[str]
    vmin: float = 0.0
    vmax: float = 1.0
    title: str = ""

    def qcolor(self, i: int, alpha: int = 255) -> QColor:
        r, g, b = (int(v) for v in self.colors[i])
        return QColor(r, g, b, alpha)


def is_categorical(labels: np.ndarray) -> bool:
    labels = np.asarray(labels)
    if labels.dtype.kind in "OUSb":
        return True
    if labels.dtype.kind in "iu":
        return np.unique(labels).size <= MAX_CATEGORIES
    if labels.dtype.kind == "f":
        finite = labels[np.isfinite(labels)]
        return bool(np.all(finite == np.round(finite))) and np.unique(finite).size <= 20
    return False


def make_coloring(labels, n: int, title: str = "") -> Coloring:
    """A :class:`Coloring` for ``labels`` (None: one colour for all ``n`` points)."""
    if labels is None:
        return Coloring("none", np.zeros(n, dtype=np.intp), np.array([NO_LABEL_COLOR], dtype=np.uint8),
                        [], title=title)
    labels = np.asarray(labels)
    if is_categorical(labels):
        values, codes = np.unique(labels.astype(str) if labels.dtype.kind == "O" else labels,
                                  return_inverse=True)
        k = len(values)
        reps = int(np.ceil(k / len(CATEGORICAL)))
        colors = np.tile(CATEGORICAL, (reps, 1))[:k]
        return Coloring("categorical", codes.ravel().astype(np.intp), colors,
                        [_label_text(v) for v in values], title=title)
    vals = labels.astype(float)
    finite = np.isfinite(vals)
    vmin = float(vals[finite].min()) if finite.any() else 0.0
    vmax = float(vals[finite].max()) if finite.any() else 1.0
    span = vmax - vmin if vmax > vmin else 1.0
    scaled = np.where(finite, (vals - vmin) / span, 0.0)
    codes = np.clip((scaled * (N_CONTINUOUS_LEVELS - 1)).round(), 0, N_CONTINUOUS_LEVELS - 1).astype(np.intp)
    return Coloring("continuous", codes, CONTINUOUS, [], vmin, vmax, title)


def _label_text(value) -> str:
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)


def label_text(labels, i: int) -> str:
    """Display text of one point's label."""
    if labels is None:
        return ""
    v = np.asarray(labels)[i]
    if isinstance(v, (float, np.floating)) and not float(v).is_integer():
        return f"{float(v):.4g}"
    return _label_text(v)
