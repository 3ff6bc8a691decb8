"""Density of the points of a 2-D map (Qt-free): a binned Gaussian kernel density estimate on a
grid, its contour levels and lines, and the density at each point ("colour by local density").

The estimate is the one of ``scipy.stats.gaussian_kde`` (a Gaussian kernel whose covariance is the
data covariance times ``(factor · n^(-1/6))²``, Scott's rule in two dimensions), computed the
fast way: the points are linearly binned onto a ``size × size`` grid (each point's weight is
split between the four nearest grid nodes) and the grid is convolved with the kernel sampled on
the same grid (``scipy.signal.fftconvolve``). At a million points this costs one pass of
``np.bincount`` plus an FFT of the grid, a few tens of milliseconds; the binning error is far
below a pixel at the default grid of :data:`GRID` nodes each way.

Contours: :func:`contour_levels` chooses density levels that enclose given shares of the
probability mass (the highest-density regions: the 50 % contour surrounds the densest half of the
points), :func:`contour_segments` traces them by marching squares into line segments.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError, InvalidParameterError

#: grid nodes each way
GRID = 256
#: the grid extends this many kernel standard deviations beyond the points
PAD_SD = 3.0
#: the kernel is cut this many standard deviations from its centre
KERNEL_SD = 4.0
#: default contour levels: the shares of the probability mass they enclose
MASS_LEVELS = (0.25, 0.5, 0.75, 0.9)


@dataclass
class DensityGrid:
    """A density on a regular grid: ``values[j, i]`` is the density at ``(x[i], y[j])``
    (row 0 at the bottom); it integrates to 1 over the plane."""

    x: np.ndarray
    y: np.ndarray
    values: np.ndarray
    covariance: np.ndarray   # the kernel's covariance
    n_points: int

    @property
    def cell_area(self) -> float:
        return float((self.x[1] - self.x[0]) * (self.y[1] - self.y[0]))

    @property
    def rect(self) -> tuple[float, float, float, float]:
        """(x0, y0, width, height) covered by the grid nodes."""
        return float(self.x[0]), float(self.y[0]), float(self.x[-1] - self.x[0]), float(self.y[-1] - self.y[0])

    def at(self, xy: np.ndarray) -> np.ndarray:
        """The density at points ``xy`` (m, 2), bilinearly interpolated; 0 outside the grid."""
        return interpolate(self, xy)


def check_points(xy, what: str = "density") -> np.ndarray:
    """The finite rows of an (n, 2) map as floats; refuses fewer than 3 points or points that
    are all identical (no spread to estimate a bandwidth from)."""
    xy = np.asarray(xy, dtype=float)
    if xy.ndim != 2 or xy.shape[1] < 2:
        raise DataError(f"The map {what} needs 2-D coordinates (n, 2), got shape {xy.shape}.")
    xy = xy[:, :2]
    finite = np.isfinite(xy)
    if not finite.all():
        xy = xy[finite.all(axis=1)]
    if xy.shape[0] < 3:
        raise DataError(f"The map {what} needs at least 3 points with coordinates; this map has "
                        f"{xy.shape[0]}.")
    return xy


def _columns(xy: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Contiguous x and y columns (reductions over a column of an (n, 2) array are slow)."""
    return np.ascontiguousarray(xy[:, 0]), np.ascontiguousarray(xy[:, 1])


def _refuse_one_place(px, py, what: str = "density") -> None:
    if px.min() == px.max() and py.min() == py.max():
        raise DataError(f"The map {what} cannot be estimated: all {px.size} points are at the same "
                        "place (no spread to choose a bandwidth from).")


def _covariance(px: np.ndarray, py: np.ndarray) -> np.ndarray:
    """The sample covariance (ddof=1) of two columns, as ``np.cov``."""
    dx, dy = px - px.mean(), py - py.mean()
    n1 = px.size - 1
    cxy = float(dx @ dy) / n1
    return np.array([[float(dx @ dx) / n1, cxy], [cxy, float(dy @ dy) / n1]])


def scott_covariance(xy: np.ndarray, factor: float = 1.0, weights: np.ndarray | None = None) -> np.ndarray:
    """The kernel covariance of ``scipy.stats.gaussian_kde`` with Scott's rule times ``factor``:
    ``cov(xy) · (factor · n_eff^(-1/6))²``. A singular covariance (points on a line) gets a small
    ridge (1e-3 of its largest variance) so that the kernel stays a proper density."""
    if not (np.isfinite(factor) and factor > 0):
        raise InvalidParameterError(f"Bandwidth factor {factor!r}: use a positive number (1 = Scott's rule).")
    if weights is None:
        n_eff = xy.shape[0]
        cov = _covariance(*_columns(xy))
    else:
        w = weights / weights.sum()
        n_eff = 1.0 / np.sum(w ** 2)
        cov = np.cov(xy, rowvar=False, aweights=w)
    cov = np.atleast_2d(cov) * (factor * n_eff ** (-1.0 / 6.0)) ** 2
    ridge = 1e-3 * float(np.max(np.diag(cov)))
    if np.linalg.det(cov) <= (ridge ** 2) * 1e-6:
        cov = cov + ridge * np.eye(2)
    return cov


def _extent(px, py, cov: np.ndarray, extent=None):
    if extent is not None:
        (x0, x1), (y0, y1) = extent
        return float(x0), float(x1), float(y0), float(y1)
    sx, sy = PAD_SD * np.sqrt(np.diag(cov))
    return float(px.min() - sx), float(px.max() + sx), float(py.min() - sy), float(py.max() + sy)


def linear_binning(px: np.ndarray, py: np.ndarray, x: np.ndarray, y: np.ndarray, weights=None,
                   all_inside: bool = False) -> np.ndarray:
    """Weights (ny, nx) of the points (``px``, ``py``) on the grid nodes ``x`` × ``y``: each
    point's weight is split between its four surrounding nodes in proportion to the opposite
    areas (points outside the grid are left out; ``all_inside``: the caller knows there are none)."""
    nx, ny = len(x), len(y)
    fx = (px - x[0]) * (1.0 / (x[1] - x[0]))
    fy = (py - y[0]) * (1.0 / (y[1] - y[0]))
    w = None if weights is None else np.asarray(weights, dtype=float)
    if not all_inside:
        inside = (fx >= 0) & (fx <= nx - 1) & (fy >= 0) & (fy <= ny - 1)
        fx, fy = fx[inside], fy[inside]
        w = None if w is None else w[inside]
    ix = np.minimum(fx.astype(np.intp), nx - 2)
    iy = np.minimum(fy.astype(np.intp), ny - 2)
    tx, ty = fx - ix, fy - iy
    ux, uy = 1.0 - tx, 1.0 - ty
    if w is not None:
        uy *= w
        ty *= w
    base = iy * nx + ix
    size = nx * ny
    out = np.bincount(base, ux * uy, size)
    out += np.bincount(base + 1, tx * uy, size)
    base += nx
    out += np.bincount(base, ux * ty, size)
    out += np.bincount(base + 1, tx * ty, size)
    return out.reshape(ny, nx)


def _kernel(cov: np.ndarray, dx: float, dy: float, shape) -> np.ndarray:
    """The Gaussian pdf with covariance ``cov`` sampled at grid offsets (cut at
    :data:`KERNEL_SD` standard deviations, and at the grid's own size)."""
    sd = np.sqrt(np.diag(cov))
    hx = int(min(np.ceil(KERNEL_SD * sd[0] / dx), shape[1]))
    hy = int(min(np.ceil(KERNEL_SD * sd[1] / dy), shape[0]))
    ox = np.arange(-hx, hx + 1) * dx
    oy = np.arange(-hy, hy + 1) * dy
    gx, gy = np.meshgrid(ox, oy)
    inv = np.linalg.inv(cov)
    q = inv[0, 0] * gx * gx + 2 * inv[0, 1] * gx * gy + inv[1, 1] * gy * gy
    return np.exp(-0.5 * q) / (2 * np.pi * np.sqrt(np.linalg.det(cov)))


def kde_grid(xy, *, factor: float = 1.0, size: int = GRID, extent=None, weights=None,
             covariance: np.ndarray | None = None) -> DensityGrid:
    """The binned Gaussian KDE of the map points ``xy`` (n, 2) on a ``size × size`` grid (see the
    module docstring). ``extent`` ((x0, x1), (y0, y1)): the grid's range (default: the points
    plus :data:`PAD_SD` kernel deviations); ``covariance``: a kernel covariance to use instead
    of Scott's rule (several classes on one bandwidth)."""
    xy = check_points(xy)
    px, py = _columns(xy)
    _refuse_one_place(px, py)
    size = int(size)
    if size < 8:
        raise InvalidParameterError(f"Density grid size {size}: use at least 8 nodes each way.")
    cov = scott_covariance(xy, factor, weights) if covariance is None else np.asarray(covariance, float)
    x0, x1, y0, y1 = _extent(px, py, cov, extent)
    if not (x1 > x0 and y1 > y0):
        raise InvalidParameterError(f"Density extent ({x0}, {x1}) x ({y0}, {y1}) is empty.")
    x = np.linspace(x0, x1, size)
    y = np.linspace(y0, y1, size)
    binned = linear_binning(px, py, x, y, weights, all_inside=extent is None)
    total = float(xy.shape[0] if weights is None else np.sum(weights))
    k = _kernel(cov, x[1] - x[0], y[1] - y[0], binned.shape)
    from scipy.signal import fftconvolve  # lazy: kept off the start-up (scipy.signal: ~0.6 s)

    dens = fftconvolve(binned, k, mode="same") / total
    np.maximum(dens, 0.0, out=dens)  # FFT round-off
    return DensityGrid(x, y, dens, cov, int(xy.shape[0]))


def class_density_grids(xy, codes, *, factor: float = 1.0, size: int = GRID) -> dict[int, DensityGrid]:
    """One density per class code (each integrating to 1, each with its own Scott bandwidth),
    all on the grid of the whole map; classes with fewer than 3 distinct-place points are left out."""
    xy_all = check_points(xy)
    px, py = _columns(xy_all)
    _refuse_one_place(px, py)
    xy = np.asarray(xy, dtype=float)[:, :2]
    codes = np.asarray(codes)
    ok = np.isfinite(xy).all(axis=1)
    extent = _extent(px, py, scott_covariance(xy_all, factor), None)
    out = {}
    for c in np.unique(codes[ok]):
        pts = xy[ok & (codes == c)]
        if pts.shape[0] < 3 or (np.ptp(pts[:, 0]) == 0 and np.ptp(pts[:, 1]) == 0):
            continue
        out[int(c)] = kde_grid(pts, factor=factor, size=size,
                               extent=((extent[0], extent[1]), (extent[2], extent[3])))
    return out


def interpolate(grid: DensityGrid, xy) -> np.ndarray:
    """Bilinear interpolation of ``grid.values`` at the points ``xy`` (0 outside the grid, NaN
    for points without coordinates)."""
    xy = np.asarray(xy, dtype=float)
    nx, ny = len(grid.x), len(grid.y)
    fx = (xy[:, 0] - grid.x[0]) / (grid.x[1] - grid.x[0])
    fy = (xy[:, 1] - grid.y[0]) / (grid.y[1] - grid.y[0])
    out = np.zeros(xy.shape[0])
    finite = np.isfinite(fx) & np.isfinite(fy)
    out[~finite] = np.nan
    inside = finite & (fx >= 0) & (fx <= nx - 1) & (fy >= 0) & (fy <= ny - 1)
    fx, fy = fx[inside], fy[inside]
    ix = np.minimum(fx.astype(np.intp), nx - 2)
    iy = np.minimum(fy.astype(np.intp), ny - 2)
    tx, ty = fx - ix, fy - iy
    v = grid.values
    out[inside] = ((v[iy, ix] * (1 - tx) + v[iy, ix + 1] * tx) * (1 - ty)
                   + (v[iy + 1, ix] * (1 - tx) + v[iy + 1, ix + 1] * tx) * ty)
    return out


def point_density(xy, *, factor: float = 1.0, size: int = GRID) -> np.ndarray:
    """The estimated density at each map point ("colour by local density")."""
    return kde_grid(xy, factor=factor, size=size).at(np.asarray(xy, dtype=float)[:, :2])


def contour_levels(grid: DensityGrid, masses=MASS_LEVELS) -> np.ndarray:
    """Density levels whose super-level sets hold the given shares of the probability mass
    (highest-density regions), in the order of ``masses``."""
    masses = np.asarray(masses, dtype=float)
    if masses.size == 0 or np.any((masses <= 0) | (masses >= 1)):
        raise InvalidParameterError(f"Contour masses {masses.tolist()}: use shares strictly between 0 and 1.")
    v = np.sort(grid.values.ravel())[::-1]
    cum = np.cumsum(v)
    if cum[-1] <= 0:
        return np.zeros(masses.size)
    cum /= cum[-1]
    pos = np.minimum(np.searchsorted(cum, masses), v.size - 1)
    return v[pos]


# -- marching squares ------------------------------------------------------------------------------
# cell corners: 0 = (i, j) bottom-left, 1 = (i+1, j), 2 = (i+1, j+1), 3 = (i, j+1); edges:
# 0 bottom (0-1), 1 right (1-2), 2 top (3-2), 3 left (0-3). Case bit k set: corner k >= level.
_SEGMENTS = {1: [(3, 0)], 2: [(0, 1)], 3: [(3, 1)], 4: [(1, 2)], 5: [(3, 2), (0, 1)], 6: [(0, 2)],
             7: [(3, 2)], 8: [(2, 3)], 9: [(2, 0)], 10: [(0, 3), (1, 2)], 11: [(2, 1)], 12: [(1, 3)],
             13: [(1, 0)], 14: [(0, 3)]}


def contour_segments(grid: DensityGrid, level: float) -> np.ndarray:
    """The contour line of ``grid`` at ``level`` as segments (m, 2, 2) in map coordinates
    (marching squares with linear interpolation along the cell edges; saddle cells are split
    the same way everywhere)."""
    v = grid.values
    above = v >= level
    c0, c1 = above[:-1, :-1], above[:-1, 1:]
    c2, c3 = above[1:, 1:], above[1:, :-1]
    case = c0.astype(np.uint8) | (c1 << 1) | (c2 << 2) | (c3 << 3)
    x, y = grid.x, grid.y
    v0, v1, v2, v3 = v[:-1, :-1], v[:-1, 1:], v[1:, 1:], v[1:, :-1]

    def edge_points(e, jj, ii):
        def t(a, b):
            d = b - a
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(d != 0, (level - a) / d, 0.5)
            return np.clip(r, 0.0, 1.0)
        xa, xb, ya, yb = x[ii], x[ii + 1], y[jj], y[jj + 1]
        if e == 0:
            s = t(v0[jj, ii], v1[jj, ii])
            return np.stack([xa + s * (xb - xa), ya], axis=1)
        if e == 1:
            s = t(v1[jj, ii], v2[jj, ii])
            return np.stack([xb, ya + s * (yb - ya)], axis=1)
        if e == 2:
            s = t(v3[jj, ii], v2[jj, ii])
            return np.stack([xa + s * (xb - xa), yb], axis=1)
        s = t(v0[jj, ii], v3[jj, ii])
        return np.stack([xa, ya + s * (yb - ya)], axis=1)

    pieces = []
    for c, segs in _SEGMENTS.items():
        jj, ii = np.nonzero(case == c)
        if not jj.size:
            continue
        for a, b in segs:
            pieces.append(np.stack([edge_points(a, jj, ii), edge_points(b, jj, ii)], axis=1))
    return np.concatenate(pieces) if pieces else np.zeros((0, 2, 2))


@dataclass
class DensityLayers:
    """What the map's density layer draws: the density of all points (shading), its contour
    lines at ``masses`` and, per class, the contour lines of the class's own density."""

    grid: DensityGrid
    masses: tuple
    levels: np.ndarray
    segments: list            # per mass: (m, 2, 2) segments
    class_segments: dict      # class code -> per mass: segments


def density_layers(xy, *, factor: float = 1.0, codes=None, masses=MASS_LEVELS, size: int = GRID,
                   progress=None) -> DensityLayers:
    """The density layer of a map (all points; per class too when ``codes`` are given)."""
    masses = tuple(float(m) for m in masses)
    grid = kde_grid(xy, factor=factor, size=size)
    levels = contour_levels(grid, masses)
    segments = [contour_segments(grid, lv) for lv in levels]
    per_class = {}
    if codes is not None:
        for c, g in class_density_grids(xy, codes, factor=factor, size=size).items():
            as_progress(progress).checkpoint(0.5, f"Density of class {c}")
            per_class[c] = [contour_segments(g, lv) for lv in contour_levels(g, masses)]
    return DensityLayers(grid, masses, levels, segments, per_class)
