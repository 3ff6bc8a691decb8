"""Generated image-like data: 10 classes of 28 x 28 images on curved low-dimensional manifolds.

Each class is a shape made of three Gaussian strokes; an image of the class is that shape
moved by a 2-D shift and scaled in thickness (3 latent coordinates), plus pixel noise. Moving a
shape traces a curved manifold in the 784-dimensional pixel space, like the handwritten digits
(MNIST's 70,000 x 784 is the size used by the benchmarks). Deterministic for a seed.
"""
from __future__ import annotations

import numpy as np


def image_like(n: int = 70_000, side: int = 28, n_classes: int = 10, noise: float = 0.05,
               seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(X (n, side * side) float32 in about [0, 1], labels (n,))."""
    rng = np.random.default_rng(seed)
    centres = rng.uniform(0.3, 0.7, size=(n_classes, 3, 2)) * side      # stroke centres
    widths = rng.uniform(1.5, 3.5, size=(n_classes, 3))
    labels = rng.integers(0, n_classes, n)
    shift = rng.uniform(-3.0, 3.0, size=(n, 2))
    thick = rng.uniform(0.8, 1.25, size=n)
    yy, xx = np.mgrid[0:side, 0:side]
    pix = np.stack([yy.ravel(), xx.ravel()], axis=1).astype(np.float32)   # (side^2, 2)
    X = np.empty((n, side * side), dtype=np.float32)
    step = 4096
    for start in range(0, n, step):
        sl = slice(start, min(n, start + step))
        c = centres[labels[sl]] + shift[sl, None, :]                     # (b, 3, 2)
        w = widths[labels[sl]] * thick[sl, None]                         # (b, 3)
        img = np.zeros((c.shape[0], side * side), dtype=np.float32)
        for s in range(3):
            d2 = ((pix[None, :, :] - c[:, None, s, :].astype(np.float32)) ** 2).sum(axis=2)
            img += np.exp(-d2 / (2.0 * w[:, s, None] ** 2)).astype(np.float32)
        img += noise * rng.standard_normal(img.shape).astype(np.float32)
        X[sl] = img
    return X, labels
