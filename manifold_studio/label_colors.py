"""Colours for labels without Qt: a categorical palette for classes, a colour map for
continuous values. Used by the command line's plots (:mod:`manifold_studio.plot_render`); the
window's palette (:mod:`manifold_studio.gui.views.palette`) holds the same tables and rule
plus its QColor helpers — one place to change them is this module.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

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
class LabelColors:
    """How a vector of labels maps to colours: ``codes`` indexes ``colors`` ((m, 3) uint8);
    ``names`` are the categories (categorical), ``vmin``/``vmax`` the range (continuous)."""

    mode: str  # "none", "categorical", "continuous"
    codes: np.ndarray
    colors: np.ndarray
    names: list[str]
    vmin: float = 0.0
    vmax: float = 1.0
    title: str = ""


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


def label_colors(labels, n: int, title: str = "") -> LabelColors:
    """A :class:`LabelColors` for ``labels`` (None: one colour for all ``n`` points)."""
    if labels is None:
        return LabelColors("none", np.zeros(n, dtype=np.intp), np.array([NO_LABEL_COLOR], dtype=np.uint8),
                           [], title=title)
    labels = np.asarray(labels)
    if is_categorical(labels):
        values, codes = np.unique(labels.astype(str) if labels.dtype.kind == "O" else labels,
                                  return_inverse=True)
        k = len(values)
        reps = int(np.ceil(k / len(CATEGORICAL)))
        colors = np.tile(CATEGORICAL, (reps, 1))[:k]
        return LabelColors("categorical", codes.ravel().astype(np.intp), colors,
                           [value_text(v) for v in values], title=title)
    vals = labels.astype(float)
    finite = np.isfinite(vals)
    vmin = float(vals[finite].min()) if finite.any() else 0.0
    vmax = float(vals[finite].max()) if finite.any() else 1.0
    span = vmax - vmin if vmax > vmin else 1.0
    scaled = np.where(finite, (vals - vmin) / span, 0.0)
    codes = np.clip((scaled * (N_CONTINUOUS_LEVELS - 1)).round(), 0, N_CONTINUOUS_LEVELS - 1).astype(np.intp)
    return LabelColors("continuous", codes, CONTINUOUS, [], vmin, vmax, title)


def value_text(value) -> str:
    """A label value as text (whole floats without ``.0``)."""
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return str(int(value))
    return str(value)
