"""Reconstruction against the number of components (seeds 001/002: PCA as compression).

For a method with ``inverse_transform`` (PCA, probabilistic PCA, NMF, autoencoders, ...) the
data are encoded with M components and decoded again, for several M: the originals beside their
reconstructions show what M components keep, and the curve of the reconstruction error against
M shows how fast the method compresses. The model is refitted for each M (NMF's parts, say, are
not nested: the best 10 parts are not the best 20 minus 10). Qt-free; the GUI's reconstruction
view draws the result.

The error is the *fraction of the data's variance left unexplained*,
``‖X − X̂‖²_F / ‖X − x̄‖²_F``: 1 for a reconstruction by the mean, 0 when exact (for PCA it is
the share of the discarded eigenvalues).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.errors import DataError

#: the component counts of seed 002's figure (those up to the data's dimension are used)
DEFAULT_COUNTS = (1, 3, 10, 20, 50, 200)


@dataclass
class ReconstructionSeries:
    counts: list[int]
    #: fraction of variance unexplained for each count (over the rows used for the fits)
    errors: list[float]
    #: indices (into the data given) of the rows shown
    rows: np.ndarray
    originals: np.ndarray
    #: reconstructions of the shown rows, one (len(rows), d) array per count
    reconstructions: list[np.ndarray]
    #: the run's own components (n_components, d) when the model has ``components_``
    components: np.ndarray | None = None
    notes: list[str] = field(default_factory=list)


def supports_reconstruction(estimator) -> bool:
    """Whether the estimator can decode (has ``inverse_transform``) and has ``n_components``."""
    return callable(getattr(estimator, "inverse_transform", None)) and "n_components" in getattr(
        estimator, "get_params", lambda: {})()


def component_counts(n_samples: int, n_features: int, own: int | None = None,
                     counts=DEFAULT_COUNTS) -> list[int]:
    """The counts of ``counts`` that the data allow (≤ min(n, d)), plus the run's own count."""
    top = min(n_samples, n_features)
    chosen = {int(c) for c in counts if 1 <= c <= top}
    if own is not None and 1 <= own <= top:
        chosen.add(int(own))
    if not chosen:
        chosen.add(1)
    return sorted(chosen)


def unexplained_variance(X: np.ndarray, R: np.ndarray) -> float:
    centred = X - X.mean(axis=0)
    total = float(np.sum(centred * centred))
    resid = X - R
    return float(np.sum(resid * resid)) / total if total > 0 else 0.0


def image_shape(dataset_images: np.ndarray | None, n_features: int) -> tuple[int, ...] | None:
    """The shape one row is drawn with: (h, w) grey, (h, w, 3) colour, or None (not images)."""
    if dataset_images is None or np.ndim(dataset_images) < 3:
        return None
    h, w = np.shape(dataset_images)[1:3]
    if h * w == n_features:
        return (h, w)
    if 3 * h * w == n_features:
        return (h, w, 3)
    return None


def reconstruction_series(estimator, X, *, counts=None, n_shown: int = 8, max_points: int | None = 5000,
                          random_state=0, progress=None, fit=None, decode=None) -> ReconstructionSeries:
    """Refit ``estimator``'s method with each M in ``counts`` and reconstruct ``X``.

    ``estimator`` gives the method and its parameters (it need not be fitted; a fitted one
    gives its ``components_`` for drawing). At most ``max_points`` random rows are used for
    the fits; the first ``n_shown`` of those rows are returned with their reconstructions.
    ``fit(unfitted, X, progress) -> (fitted, its embedding of X)`` and ``decode(fitted, codes)
    -> rows``, if given, do each refit and each reconstruction (the window runs a third-party
    method's in worker processes this way); by default both run here.
    """
    progress = as_progress(progress)
    if not supports_reconstruction(estimator):
        raise DataError(f"{getattr(estimator, 'name', type(estimator).__name__)} cannot reconstruct "
                        "data (it has no inverse_transform): choose PCA, probabilistic PCA, NMF or an "
                        "autoencoder.")
    X = np.asarray(X, dtype=float)
    n, d = X.shape
    rng = np.random.default_rng(random_state)
    notes = []
    used = np.arange(n)
    if max_points is not None and n > max_points:
        used = np.sort(rng.choice(n, size=int(max_points), replace=False))
        notes.append(f"The fits use {max_points:,} random rows of {n:,}.")
    Xu = X[used]
    params = estimator.get_params()
    own = params.get("n_components")
    counts = component_counts(len(used), d, own if isinstance(own, int) else None,
                              DEFAULT_COUNTS if counts is None else counts)
    shown = np.arange(min(n_shown, len(used)))
    errors, recons = [], []
    for i, m in enumerate(counts):
        sub = SubProgress(progress, i / len(counts), (i + 1) / len(counts), f"M = {m}: ")
        est = type(estimator)(**{**params, "n_components": m})
        if fit is None:
            est.fit(Xu, progress=sub)
            codes = est.embedding_
        else:
            est, codes = fit(est, Xu, sub)
        R = np.asarray(est.inverse_transform(codes) if decode is None else decode(est, codes), dtype=float)
        errors.append(unexplained_variance(Xu, R))
        recons.append(R[shown])
    progress.checkpoint(1.0, "Reconstructions done")
    comps = getattr(estimator, "components_", None)
    comps = np.asarray(comps, dtype=float) if comps is not None and np.ndim(comps) == 2 and \
        np.shape(comps)[1] == d else None
    return ReconstructionSeries(counts, errors, used[shown], Xu[shown], recons, comps, notes)
