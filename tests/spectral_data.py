"""Small fixed data sets for the spectral tests."""
import numpy as np


def swiss_roll(n, seed=0, noise=0.0):
    rng = np.random.default_rng(seed)
    t = rng.uniform(1.5 * np.pi, 4.5 * np.pi, n)
    X = np.c_[t * np.cos(t), rng.uniform(0, 21, n), t * np.sin(t)]
    if noise:
        X += noise * rng.normal(size=X.shape)
    return X, t


def circles(n, seed=0):
    from sklearn.datasets import make_circles

    return make_circles(n, factor=0.5, noise=0.05, random_state=seed)


def moons(n, seed=0):
    from sklearn.datasets import make_moons

    return make_moons(n, noise=0.05, random_state=seed)
