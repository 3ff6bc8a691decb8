"""Draw the application icon, resources/icon.png (256×256), with Qt's QPainter.

The motif: a scatter of points along a rolled-up manifold (a swiss-roll spiral), coloured along
the manifold, on a dark rounded square; three larger ringed points are "extended" new points
placed on it. Deterministic (fixed seed), so re-running it gives the same picture::

    python installer/make_icon.py [--size 256] [--out resources/icon.png]

Other sizes (the .ico for Windows, the .icns for macOS) are made from this PNG by
installer/build.py on the platform that needs them.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
STOPS = [(0.0, (255, 176, 59)), (0.35, (240, 84, 99)), (0.65, (142, 92, 230)), (1.0, (56, 200, 230))]


def colour(t: float) -> tuple[int, int, int]:
    for (t0, c0), (t1, c1) in zip(STOPS, STOPS[1:]):
        if t <= t1:
            f = (t - t0) / (t1 - t0)
            return tuple(int(round(a + (b - a) * f)) for a, b in zip(c0, c1))
    return STOPS[-1][1]


def spiral_points(n: int, seed: int = 7) -> tuple[np.ndarray, np.ndarray]:
    """(xy in [-1, 1]², t in [0, 1]): a noisy 1.6-turn spiral, denser towards the outside."""
    rng = np.random.default_rng(seed)
    t = np.sort(rng.uniform(0, 1, n) ** 0.8)
    angle = 1.0 * math.pi + t * 3.2 * math.pi
    radius = 0.16 + 0.70 * t
    width = rng.normal(scale=0.045, size=n)
    x = (radius + width) * np.cos(angle)
    y = (radius + width) * np.sin(angle)
    return np.column_stack([x, -y]), t


def draw(size: int):
    from PySide6.QtCore import QPointF, QRectF, Qt
    from PySide6.QtGui import QBrush, QColor, QImage, QLinearGradient, QPainter, QPen

    img = QImage(size, size, QImage.Format.Format_ARGB32_Premultiplied)
    img.fill(Qt.GlobalColor.transparent)
    p = QPainter(img)
    p.setRenderHint(QPainter.RenderHint.Antialiasing)
    s = size / 256.0

    # background: dark rounded square with a soft diagonal gradient and a thin rim
    rect = QRectF(8 * s, 8 * s, 240 * s, 240 * s)
    grad = QLinearGradient(rect.topLeft(), rect.bottomRight())
    grad.setColorAt(0.0, QColor(30, 38, 66))
    grad.setColorAt(1.0, QColor(12, 16, 32))
    p.setPen(QPen(QColor(255, 255, 255, 40), 2 * s))
    p.setBrush(QBrush(grad))
    p.drawRoundedRect(rect, 48 * s, 48 * s)

    centre, scale = QPointF(128 * s, 130 * s), 98 * s
    xy, t = spiral_points(420)
    p.setPen(Qt.PenStyle.NoPen)
    for (x, y), ti in zip(xy, t):
        r, g, b = colour(float(ti))
        p.setBrush(QColor(r, g, b, 215))
        radius = (3.0 + 2.6 * ti) * s
        p.drawEllipse(QPointF(centre.x() + x * scale, centre.y() + y * scale), radius, radius)

    # three "extended" points: white rings on the manifold
    for ti in (0.30, 0.62, 0.90):
        angle = 1.0 * math.pi + ti * 3.2 * math.pi
        radius = 0.16 + 0.70 * ti
        pt = QPointF(centre.x() + radius * math.cos(angle) * scale, centre.y() - radius * math.sin(angle) * scale)
        r, g, b = colour(ti)
        p.setBrush(QColor(r, g, b))
        p.setPen(QPen(QColor(255, 255, 255), 3.2 * s))
        p.drawEllipse(pt, 8.5 * s, 8.5 * s)
    p.end()
    return img


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=256)
    ap.add_argument("--out", default=str(ROOT / "resources" / "icon.png"))
    args = ap.parse_args(argv)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    from PySide6.QtGui import QGuiApplication

    app = QGuiApplication.instance() or QGuiApplication(sys.argv[:1])  # noqa: F841 - fonts, colour
    img = draw(args.size)
    if not img.save(args.out, "PNG"):
        print(f"could not write {args.out}", file=sys.stderr)
        return 1
    print(f"wrote {args.out} ({args.size}×{args.size})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
