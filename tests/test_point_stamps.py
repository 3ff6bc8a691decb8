"""Discs of points rasterised with numpy (the intermediate maps' image), against a per-pixel
reference written independently: each point paints, in order, the pixels whose centre lies
within half its diameter of the disc's centre."""
import numpy as np

from manifold_studio.render.point_stamps import MAX_DIAMETER, stamp_points


def _reference(x, y, rgb, diameters, scale, offset, shape, alpha):
    h, w = shape
    out = np.zeros((h, w), dtype=np.uint32)
    diameters = np.broadcast_to(np.asarray(diameters), (len(x),))
    order = np.argsort(-np.asarray(diameters), kind="stable")   # largest first, then in order
    for i in order:
        fx, fy = x[i] * scale[0] + offset[0], y[i] * scale[1] + offset[1]
        if not (np.isfinite(fx) and np.isfinite(fy)):
            continue
        d = int(min(max(round(diameters[i]), 1), MAX_DIAMETER))
        cx, cy = int(np.floor(fx)) - d // 2, int(np.floor(fy)) - d // 2   # the disc's top-left pixel
        c = (d - 1) / 2.0
        for py in range(d):
            for px in range(d):
                if (px - c) ** 2 + (py - c) ** 2 <= (d / 2.0) ** 2 + 1e-9 and 0 <= cy + py < h and 0 <= cx + px < w:
                    out[cy + py, cx + px] = (int(rgb[i]) & 0xFFFFFF) | (alpha << 24)
    return out


def test_discs_match_the_reference_in_order_and_at_the_borders():
    rng = np.random.default_rng(3)
    n = 60
    x, y = rng.uniform(-3, 33, n), rng.uniform(-3, 23, n)   # some discs cut by the borders
    x[5], y[7] = np.nan, np.inf                             # not drawn
    rgb = rng.integers(0, 2 ** 24, n).astype(np.uint32)
    for diameters in (1, 4, 7, rng.integers(1, 9, n)):
        got = stamp_points(x, y, rgb, diameters, (1.5, 2.0), (2.0, -1.0), (40, 50), alpha=200)
        want = _reference(x, y, rgb, diameters, (1.5, 2.0), (2.0, -1.0), (40, 50), 200)
        np.testing.assert_array_equal(got, want)
        assert (got != 0).sum() > (n if np.ndim(diameters) or diameters > 1 else 0)   # discs, not single pixels
    # a 7 px disc: 37 pixels, the later point on top where two overlap
    two = stamp_points(np.array([10.0, 12.0]), np.array([10.0, 10.0]), np.array([0xFF0000, 0x0000FF]), 7,
                       (1, 1), (0, 0), (30, 30))
    assert (two == 0xFF0000FF).sum() == 37 and two[10, 11] == 0xFF0000FF and two[10, 8] == 0xFFFF0000


def test_far_and_empty_points_draw_nothing():
    far = stamp_points(np.array([1e9, -1e9]), np.array([0.0, 0.0]), np.array([1, 2]), 7, (1, 1), (0, 0), (8, 8))
    assert not far.any() and far.shape == (8, 8)
    assert stamp_points(np.zeros(0), np.zeros(0), np.zeros(0, np.uint32), 5, (1, 1), (0, 0), (4, 6)).shape == (4, 6)
