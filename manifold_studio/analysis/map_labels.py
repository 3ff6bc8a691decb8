"""Automatic labels on the map (Qt-free): groups of points, a text for each, and a placement
where no two labels overlap at the current zoom.

- Groups: any integer codes per point (a clustering's labels, a categorical column's codes) or
  :func:`density_groups`, a fast grouping of the 2-D map itself: the connected regions of the
  map's density (:mod:`~manifold_studio.analysis.map_density`) above the level that holds a given
  share of the mass (scipy.ndimage.label on the grid); each point takes the region of its grid cell.
- Text: the majority category of a chosen column (:func:`majority_texts`, "setosa (96 %)"), or the
  two or three features that most distinguish the group from the rest
  (:func:`feature_texts`, "high proline, low hue", from
  :func:`~manifold_studio.analysis.explain_selection.explain`).
- Placement (:func:`place_labels`): labels of two levels — coarse groups and finer groups inside
  them. A finer label is a candidate once its group spans :data:`MIN_GROUP_PX` screen pixels; a
  coarse label gives way when two or more of its finer labels are shown. Then, largest groups
  first, a label is kept when its text box (estimated from the character count) overlaps no
  label kept before.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.analysis.explain_selection import distinguishing_features, explain
from manifold_studio.analysis.explain_sparse import SparseFeatures
from manifold_studio.analysis.map_density import DensityGrid, contour_levels, kde_grid
from manifold_studio.errors import DataError
from manifold_studio.tables.search import factorize

#: a finer label appears once its group spans this many screen pixels
MIN_GROUP_PX = 60.0
CHAR_PX, LINE_PX, PAD_PX = 7.0, 16.0, 4.0
#: rows per group used to find distinguishing features
FEATURE_ROWS = 5_000


@dataclass
class LabelCandidate:
    x: float
    y: float
    text: str
    count: int
    extent: float          # the group's size in map units (its centre 80 % box diagonal)
    level: int = 0         # 0 coarse, 1 finer
    parent: int = -1       # finer labels: the group code of their coarse group
    group: int = -1        # the group's own code


def density_groups(xy, *, mass: float = 0.8, grid: DensityGrid | None = None, min_points: int = 10) -> np.ndarray:
    """Group codes (n,) of the map points by connected high-density regions: -1 for points
    outside every region (or in a region of fewer than ``min_points``)."""
    xy = np.asarray(xy, dtype=float)[:, :2]
    grid = grid or kde_grid(xy)
    level = contour_levels(grid, [mass])[0]
    from scipy import ndimage  # lazy: kept off the start-up

    regions, count = ndimage.label(grid.values >= level)
    codes = np.full(xy.shape[0], -1, dtype=np.intp)
    if count == 0:
        return codes
    nx, ny = len(grid.x), len(grid.y)
    fx = np.rint((xy[:, 0] - grid.x[0]) / (grid.x[1] - grid.x[0]))
    fy = np.rint((xy[:, 1] - grid.y[0]) / (grid.y[1] - grid.y[0]))
    ok = np.isfinite(fx) & np.isfinite(fy) & (fx >= 0) & (fx < nx) & (fy >= 0) & (fy < ny)
    codes[ok] = regions[fy[ok].astype(np.intp), fx[ok].astype(np.intp)] - 1
    sizes = np.bincount(codes[codes >= 0], minlength=count)
    small = sizes < min_points
    codes[(codes >= 0) & small[np.maximum(codes, 0)]] = -1
    # renumber densely, largest first
    kept = np.flatnonzero(~small)
    order = kept[np.argsort(-sizes[kept], kind="stable")]
    remap = np.full(count, -1, dtype=np.intp)
    remap[order] = np.arange(order.size)
    codes[codes >= 0] = remap[codes[codes >= 0]]
    return codes


def group_geometry(xy, codes) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(group codes, centres (g, 2) as coordinate medians, counts, extents) of codes >= 0."""
    xy = np.asarray(xy, dtype=float)[:, :2]
    codes = np.asarray(codes)
    ok = (codes >= 0) & np.isfinite(xy).all(axis=1)
    groups = np.unique(codes[ok])
    centres = np.zeros((groups.size, 2))
    counts = np.zeros(groups.size, dtype=np.intp)
    extents = np.zeros(groups.size)
    order = np.argsort(codes[ok], kind="stable")
    sorted_xy, sorted_codes = xy[ok][order], codes[ok][order]
    bounds = np.searchsorted(sorted_codes, groups, side="left")
    ends = np.searchsorted(sorted_codes, groups, side="right")
    for g, (lo, hi) in enumerate(zip(bounds, ends)):
        pts = sorted_xy[lo:hi]
        centres[g] = np.median(pts, axis=0)
        counts[g] = hi - lo
        q = np.percentile(pts, [10, 90], axis=0)
        extents[g] = float(np.hypot(*(q[1] - q[0])))
    return groups, centres, counts, extents


def majority_texts(codes, groups, values) -> list[str]:
    """For each group: its most frequent value of the categorical ``values`` with its share
    (missing values left out)."""
    codes = np.asarray(codes)
    values = np.asarray(values)
    if values.shape[0] != codes.shape[0]:
        raise DataError(f"Labels: {values.shape[0]} category values for {codes.shape[0]} points.")
    f = factorize(values)
    out = []
    for g in groups:
        v = f.codes[(codes == g) & (f.codes >= 0)]
        if not v.size:
            out.append("")
            continue
        counts = np.bincount(v)
        top = int(np.argmax(counts))
        out.append(f"{f.texts[top]} ({100 * counts[top] / v.size:.0f} %)")
    return out


def feature_texts(codes, groups, columns, count: int = 3, random_state: int = 0, sparse=None) -> list[str]:
    """For each group: its ``count`` most distinguishing features against the other points
    ("high proline, low hue"), from a sample of at most :data:`FEATURE_ROWS` rows per group.
    ``sparse``: (a sparse matrix with one row per point, its feature names), ranked with the
    ``columns`` column by column (:class:`~manifold_studio.analysis.explain_sparse.SparseFeatures`)."""
    codes = np.asarray(codes)
    rng = np.random.default_rng(random_state)
    n = codes.shape[0]
    keep = np.arange(n) if n <= 4 * FEATURE_ROWS else np.sort(rng.choice(n, 4 * FEATURE_ROWS, replace=False))
    sub_codes = codes[keep]
    sub_cols = [NamedValues(c.name, np.asarray(c.values)[keep]) for c in columns]
    features = None
    if sparse is not None:
        features = SparseFeatures(sparse[0] if keep.size == n else sparse[0][keep], sparse[1])
    out = []
    for g in groups:
        sel = sub_codes == g
        if not sel.any() or sel.all():
            out.append("")
            continue
        out.append(", ".join(distinguishing_features(explain(sub_cols, sel, features=features), count)))
    return out


@dataclass
class NamedValues:
    """A column for :func:`~manifold_studio.analysis.explain_selection.explain`: a name and its values."""

    name: str
    values: np.ndarray


def candidates(xy, codes, texts, *, level: int = 0, parents=None) -> list[LabelCandidate]:
    """Label candidates at the group centres (``texts`` in the order of the sorted group codes)."""
    groups, centres, counts, extents = group_geometry(xy, codes)
    if len(texts) != groups.size:
        raise DataError(f"Labels: {len(texts)} texts for {groups.size} groups.")
    par = [-1] * groups.size if parents is None else list(parents)
    return [LabelCandidate(float(c[0]), float(c[1]), t, int(k), float(e), level, int(p), int(g))
            for g, c, t, k, e, p in zip(groups, centres, texts, counts, extents, par) if t]


def parent_of(fine_codes, coarse_codes, fine_groups) -> list[int]:
    """The coarse group holding most of each fine group's points (-1: none)."""
    fine_codes, coarse_codes = np.asarray(fine_codes), np.asarray(coarse_codes)
    out = []
    for g in fine_groups:
        c = coarse_codes[(fine_codes == g) & (coarse_codes >= 0)]
        out.append(int(np.bincount(c).argmax()) if c.size else -1)
    return out


def text_box(c: LabelCandidate, scale) -> tuple[float, float, float, float]:
    """(x0, y0, x1, y1) of a label centred on its position, in map units at ``scale`` =
    (pixels per map unit in x, in y)."""
    sx, sy = scale
    w = (len(c.text) * CHAR_PX + 2 * PAD_PX) / sx
    h = (LINE_PX + PAD_PX) / sy
    return c.x - w / 2, c.y - h / 2, c.x + w / 2, c.y + h / 2


def place_labels(cands: list[LabelCandidate], scale, view=None) -> list[int]:
    """Indices of the labels shown at ``scale`` (pixels per map unit, x and y) within ``view``
    ((x0, x1), (y0, y1), optional): see the module docstring."""
    sx, sy = (float(s) for s in scale)
    if not (sx > 0 and sy > 0):
        raise DataError(f"Label placement needs a positive zoom scale, got {scale}.")
    pix = np.sqrt(sx * sy)
    fine_shown: dict[int, int] = {}
    wanted = []
    for i, c in enumerate(cands):
        if view is not None:
            (x0, x1), (y0, y1) = view
            if not (x0 <= c.x <= x1 and y0 <= c.y <= y1):
                continue
        if c.level > 0 and c.extent * pix < MIN_GROUP_PX:
            continue
        if c.level > 0:
            fine_shown[c.parent] = fine_shown.get(c.parent, 0) + 1
        wanted.append(i)
    wanted = [i for i in wanted if not (cands[i].level == 0 and fine_shown.get(cands[i].group, 0) >= 2)]
    wanted.sort(key=lambda i: (-cands[i].count, cands[i].level, i))
    kept, boxes = [], []
    for i in wanted:
        b = text_box(cands[i], (sx, sy))
        if any(b[0] < o[2] and o[0] < b[2] and b[1] < o[3] and o[1] < b[3] for o in boxes):
            continue
        kept.append(i)
        boxes.append(b)
    return kept

