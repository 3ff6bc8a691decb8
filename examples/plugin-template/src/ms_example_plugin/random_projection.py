"""Gaussian random projection: an embedding plugin written against the public contract.

Copy this file, rename the class, its ``id`` and the entry point in pyproject.toml, and replace
``_fit`` / ``_extend`` with your method.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Bool, Choice, EmbeddingAlgorithm, Int
from manifold_studio.hookspecs import hookimpl


class RandomProjection(EmbeddingAlgorithm):
    """Random projection onto ``n_components`` directions.

    Parameters
    ----------
    n_components : int
        Number of output dimensions.
    distribution : {"gaussian", "sparse"}
        Entries of the projection matrix: N(0, 1/n_components), or Achlioptas' sparse
        {-1, 0, +1} * sqrt(3 / n_components) with probabilities 1/6, 2/3, 1/6.
    center : bool
        Subtract the training mean before projecting.
    random_state : int or None
        Seed of the projection matrix (None: a different matrix every run).

    Attributes
    ----------
    components_ : (n_components, d) projection matrix.
    mean_ : (d,) training mean (zeros when ``center`` is False).
    embedding_ : (n, n_components) projected training points.
    """

    id = "example_random_projection"  # must not clash with any other plugin's id
    name = "Random projection (example plugin)"
    help = ("Projects the data onto random directions. Distances between points are roughly kept "
            "(Johnson–Lindenstrauss lemma) when there are enough output dimensions. Very fast, no "
            "training beyond drawing the matrix; new points are projected with the same matrix. "
            "This algorithm comes from the plugin template in examples/plugin-template.")
    # Every parameter becomes a field of the settings form, with its help as tooltip.
    params = (
        Int("n_components", 2, "Number of output dimensions.", low=1),
        Choice("distribution", "gaussian", "Entries of the random matrix: Gaussian, or sparse "
               "(two thirds zeros; faster on wide data).", choices=("gaussian", "sparse")),
        Bool("center", True, "Subtract the mean of the training data before projecting."),
        Int("random_state", 0, "Seed of the random matrix, for reproducible results "
            "(empty: a different matrix every run).", low=0, allow_none=True),
    )

    def _fit(self, X, y, progress):
        p = self._p
        k, d = p["n_components"], X.shape[1]
        rng = np.random.default_rng(p["random_state"])
        progress.checkpoint(0.0, "drawing the projection matrix")
        if p["distribution"] == "gaussian":
            R = rng.normal(scale=1.0 / np.sqrt(k), size=(k, d))
        else:
            R = rng.choice([-1.0, 0.0, 1.0], p=[1 / 6, 2 / 3, 1 / 6], size=(k, d)) * np.sqrt(3.0 / k)
        self.components_ = R
        self.mean_ = X.mean(axis=0) if p["center"] else np.zeros(d)
        progress.checkpoint(0.5, "projecting")
        self.embedding_ = self._extend(X)
        progress.checkpoint(1.0, "done")

    def _extend(self, X):
        return (X - self.mean_) @ self.components_.T


@hookimpl
def register_algorithms():
    return [RandomProjection]
