"""Colours for labels and columns without Qt: a categorical palette for classes, colour maps for
continuous values, grey for points without a value.

One module for every picture the application draws: the window's views (through
:mod:`manifold_studio.gui.views.palette`, which re-exports it) and the command line's plots
(:mod:`manifold_studio.render.plot`), so a map looks the same on screen and in a file.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# Tableau 10 followed by a second, lighter set: distinct on a white background.
CATEGORICAL = np.array([
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (227, 119, 194), (127, 127, 127), (188, 189, 34), (23, 190, 207),
    (174, 199, 232), (255, 187, 120), (152, 223, 138), (255, 152, 150), (197, 176, 213),
    (196, 156, 148), (247, 182, 210), (199, 199, 199), (219, 219, 141), (158, 218, 229),
], dtype=np.uint8)

# colour maps for continuous values, 9 anchors each (interpolated to N_CONTINUOUS_LEVELS colours):
# viridis (default), magma and cividis (perceptually uniform; cividis also reads for colour-blind
# eyes), coolwarm (diverging, blue–white–red: values around a midpoint)
_ANCHORS = {
    "viridis": [(68, 1, 84), (71, 44, 122), (59, 81, 139), (44, 113, 142), (33, 144, 141),
                (39, 173, 129), (92, 200, 99), (170, 220, 50), (253, 231, 37)],
    "magma": [(0, 0, 4), (28, 16, 70), (80, 18, 123), (130, 37, 129), (182, 54, 121),
              (229, 80, 99), (251, 135, 97), (254, 194, 135), (252, 253, 191)],
    "cividis": [(0, 32, 77), (5, 54, 110), (64, 77, 107), (96, 100, 111), (124, 123, 120),
                (155, 148, 119), (188, 175, 111), (224, 203, 93), (255, 234, 70)],
    "coolwarm": [(33, 81, 219), (111, 116, 225), (159, 155, 231), (201, 196, 236), (237, 231, 233),
                 (240, 189, 177), (231, 139, 118), (214, 87, 62), (192, 2, 6)],
}
COLOR_MAP_NAMES = tuple(_ANCHORS)
DEFAULT_COLOR_MAP = "viridis"
N_CONTINUOUS_LEVELS = 64
NO_LABEL_COLOR = (70, 110, 170)
#: points without a value (NaN, or "" in a text column) are drawn in this grey
NAN_COLOR = (190, 190, 190)
NAN_NAME = "no value"
MAX_CATEGORIES = 60  # more distinct integer values than this: treated as continuous


def color_map(name: str = DEFAULT_COLOR_MAP, levels: int = N_CONTINUOUS_LEVELS) -> np.ndarray:
    """The (levels, 3) uint8 table of colour map ``name`` (unknown names: viridis)."""
    anchors_rgb = np.asarray(_ANCHORS.get(name, _ANCHORS[DEFAULT_COLOR_MAP]), dtype=float)
    t = np.linspace(0, 1, levels)
    anchors = np.linspace(0, 1, len(anchors_rgb))
    return np.stack([np.interp(t, anchors, anchors_rgb[:, c]) for c in range(3)], axis=1).round().astype(np.uint8)


CONTINUOUS = color_map()


@dataclass
class Coloring:
    """How a vector of labels maps to colours.

    ``codes`` gives each point the index of its colour in ``colors`` (an (m, 3) uint8 table).
    Categorical: ``names`` holds the text of each category (legend). Continuous: ``vmin`` and
    ``vmax`` are the value range mapped onto the colour map, whose first ``N_CONTINUOUS_LEVELS``
    rows are the map and whose last row is the grey of points without a value.
    ``nan_code``: the code of points without a value (-1: every point has one).
    """

    mode: str  # "none", "categorical", "continuous"
    codes: np.ndarray
    colors: np.ndarray
    names: list[str]
    vmin: float = 0.0
    vmax: float = 1.0
    title: str = ""
    cmap: str = DEFAULT_COLOR_MAP
    nan_code: int = -1
    extra: dict = field(default_factory=dict)

    def rgba(self, i: int, alpha: int = 255) -> tuple[int, int, int, int]:
        """Colour ``i`` as an (r, g, b, a) tuple (pyqtgraph's mkBrush / mkPen take it as is)."""
        r, g, b = (int(v) for v in self.colors[i])
        return r, g, b, int(alpha)

    @property
    def map_colors(self) -> np.ndarray:
        """The colour map rows of a continuous colouring (without the no-value grey)."""
        return self.colors[:N_CONTINUOUS_LEVELS] if self.mode == "continuous" else self.colors


def _small_int_codes(values: np.ndarray, max_span: int = 1 << 20):
    """(uniques, codes) of integer-valued ``values`` by a lookup table (O(n), no sort), or None
    when their range is too wide."""
    lo, hi = int(values.min()), int(values.max())
    if hi - lo > max_span:
        return None
    shifted = (values - lo).astype(np.intp)
    present = np.bincount(shifted, minlength=hi - lo + 1) > 0
    lookup = np.cumsum(present) - 1
    uniques = (np.flatnonzero(present) + lo).astype(values.dtype)
    return uniques, lookup[shifted]


def is_categorical(labels: np.ndarray) -> bool:
    labels = np.asarray(labels)
    if labels.dtype.kind in "OUSb":
        return True
    if labels.dtype.kind in "iu":
        if not labels.size:
            return True
        small = _small_int_codes(labels)
        return (small[0].size if small is not None else np.unique(labels).size) <= MAX_CATEGORIES
    if labels.dtype.kind == "f":
        head = labels[:4096]
        head = head[np.isfinite(head)]
        if np.any(head != np.round(head)):  # a fraction among the first values: continuous
            return False
        finite = labels[np.isfinite(labels)]
        if not np.all(finite == np.round(finite)):
            return False
        if finite.size and np.abs(finite).max() < 2 ** 31:
            return _small_int_codes(finite.astype(np.int64), 1 << 16) is not None and \
                np.count_nonzero(np.bincount((finite - finite.min()).astype(np.intp))) <= 20
        return np.unique(finite).size <= 20
    return False


def _categorical(labels: np.ndarray, title: str) -> Coloring:
    """Categories of ``labels``; NaN (floats) and "" (text) are "no value", drawn grey and
    listed last."""
    n = len(labels)
    missing = None
    if labels.dtype.kind == "f":
        missing = ~np.isfinite(labels)
    elif labels.dtype.kind in "OU":
        labels = labels.astype(str) if labels.dtype.kind == "O" else labels
        missing = labels == ""
    if missing is not None and not missing.any():
        missing = None
    vals = labels if missing is None else labels[~missing]
    small = _small_int_codes(vals.astype(np.int64)) if vals.size and vals.dtype.kind in "iuf" else None
    if small is not None:
        values, sub = small
        values = values.astype(labels.dtype)
    else:
        values, sub = np.unique(vals, return_inverse=True)
    k = len(values)
    reps = max(int(np.ceil(k / len(CATEGORICAL))), 1)
    colors = np.tile(CATEGORICAL, (reps, 1))[:k]
    names = [_label_text(v) for v in values]
    if missing is None:
        codes = sub.ravel().astype(np.intp)
        nan_code = -1
    else:
        codes = np.full(n, k, dtype=np.intp)
        codes[~missing] = sub.ravel()
        colors = np.vstack([colors, np.array([NAN_COLOR], dtype=np.uint8)])
        names.append(NAN_NAME)
        nan_code = k
    return Coloring("categorical", codes, colors, names, title=title, nan_code=nan_code)


def _finite_range(vals: np.ndarray) -> tuple[float, float]:
    """(min, max) of the finite values (NaN, NaN when there are none): the slow path for inf."""
    finite = vals[np.isfinite(vals)]
    return (float(finite.min()), float(finite.max())) if finite.size else (np.nan, np.nan)


def make_coloring(labels, n: int, title: str = "", cmap: str = DEFAULT_COLOR_MAP,
                  kind: str | None = None) -> Coloring:
    """A :class:`Coloring` for ``labels`` (None: one colour for all ``n`` points).

    ``kind`` forces "categorical" or "continuous" (default: guessed by :func:`is_categorical`);
    ``cmap`` names the colour map of continuous values (:data:`COLOR_MAP_NAMES`)."""
    if labels is None:
        return Coloring("none", np.zeros(n, dtype=np.intp), np.array([NO_LABEL_COLOR], dtype=np.uint8),
                        [], title=title)
    labels = np.asarray(labels)
    if kind == "categorical" or (kind is None and is_categorical(labels)):
        return _categorical(labels, title)
    vals = np.asarray(labels, dtype=float)
    with np.errstate(invalid="ignore"):
        lo, hi = (float(np.fmin.reduce(vals)), float(np.fmax.reduce(vals))) if vals.size else (np.nan, np.nan)
    lo, hi = (lo, hi) if np.isfinite(lo) and np.isfinite(hi) else _finite_range(vals)
    finite = np.isfinite(vals)
    vmin = lo if np.isfinite(lo) else 0.0
    vmax = hi if np.isfinite(hi) else 1.0
    span = vmax - vmin if vmax > vmin else 1.0
    codes = (vals - vmin) * ((N_CONTINUOUS_LEVELS - 1) / span)
    np.rint(codes, out=codes)
    np.clip(codes, 0, N_CONTINUOUS_LEVELS - 1, out=codes)
    with np.errstate(invalid="ignore"):
        codes = codes.astype(np.intp)  # NaN turns into some integer: replaced just below
    nan_code = -1
    if not finite.all():
        codes[~finite] = N_CONTINUOUS_LEVELS
        nan_code = N_CONTINUOUS_LEVELS
    colors = np.vstack([color_map(cmap), np.array([NAN_COLOR], dtype=np.uint8)])
    return Coloring("continuous", codes, colors, [], vmin, vmax, title, cmap if cmap in _ANCHORS else
                    DEFAULT_COLOR_MAP, nan_code)


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


#: the names the command line's plots use
LabelColors = Coloring
label_colors = make_coloring
value_text = _label_text
