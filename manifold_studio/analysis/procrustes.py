"""Orthogonal Procrustes alignment of one embedding onto a reference (Qt-free).

Two runs of different methods (PCA, Isomap, LLE, t-SNE ...) of the same data are only defined
up to a rotation, a reflection, a translation and often a scale. To compare them, the second
map is moved onto the first by the similarity transform that best fits the points they share::

    from manifold_studio.analysis.procrustes import align
    result = align(reference_run.embedding, other_run.embedding,
                   reference_rows=reference_run.point_index, source_rows=other_run.point_index)
    result.aligned        # every point of the other run, moved onto the reference
    result.disparity      # 0 for maps equal up to a similarity; same meaning as scipy's
    result.rms            # root mean square distance of the shared points, in reference units

The fit uses the rows the two runs share (the intersection of their data-set rows); the
transform is then applied to every point of the source, shared or not. Maps of different
dimension are padded with zero columns to the larger one. The rotation comes from the SVD of
``Y_c^T X_c`` (the orthogonal Procrustes problem); the optional isotropic scale is
``trace(S) / ||Y_c||^2``. ``disparity = ||X_c - aligned_c||^2 / ||X_c||^2`` over the shared rows:
with scaling this equals :func:`scipy.spatial.procrustes`'s disparity.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.errors import DataError

__all__ = ["ProcrustesTransform", "Alignment", "align", "shared_rows", "procrustes_residual",
           "MIN_SHARED_ROWS"]

#: fewer shared points than this leave the alignment undetermined
MIN_SHARED_ROWS = 3


@dataclass
class ProcrustesTransform:
    """``x -> scale * (pad(x) - source_mean) @ rotation + reference_mean``."""

    source_mean: np.ndarray     # (k,)
    reference_mean: np.ndarray  # (k,)
    rotation: np.ndarray        # (k, k) orthogonal (a rotation or a reflection)
    scale: float = 1.0

    @property
    def dim(self) -> int:
        return int(self.rotation.shape[0])

    @property
    def is_reflection(self) -> bool:
        return bool(np.linalg.det(self.rotation) < 0)

    def apply(self, points) -> np.ndarray:
        """Move ``points`` ((n, d) with d <= k, padded with zeros) onto the reference: (n, k)."""
        P = _pad(_as_2d(points, "points"), self.dim) - self.source_mean
        out = _times(P, self.rotation)
        out *= self.scale
        out += self.reference_mean
        return out


@dataclass
class Alignment:
    """The result of :func:`align`."""

    aligned: np.ndarray        # (n_source, k): every source point moved onto the reference
    transform: ProcrustesTransform
    disparity: float           # ||X_c - aligned_c||^2 / ||X_c||^2 over the shared rows
    rms: float                 # sqrt(mean squared distance) over the shared rows, reference units
    reference_pos: np.ndarray  # positions in the reference of the shared points
    source_pos: np.ndarray     # positions in the source of the same points (same order)

    @property
    def n_shared(self) -> int:
        return int(len(self.reference_pos))

    def describe(self) -> str:
        return f"disparity {self.disparity:.3g} · RMS {self.rms:.3g} ({self.n_shared:,} shared points)"


def shared_rows(reference_rows, source_rows) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``(i, j)`` with ``reference_rows[i] == source_rows[j]``: the data-set rows two
    runs share, in the source's order. Row numbers are non-negative integers (a run's
    ``point_index``); a row listed twice in the reference counts at its last place."""
    a = np.asarray(reference_rows, dtype=np.intp).ravel()
    b = np.asarray(source_rows, dtype=np.intp).ravel()
    if a.shape == b.shape and np.array_equal(a, b):
        return np.arange(len(a), dtype=np.intp), np.arange(len(b), dtype=np.intp)
    if (a.size and a.min() < 0) or (b.size and b.min() < 0):
        raise DataError("Data-set rows cannot be negative.")
    size = int(max(a.max(initial=-1), b.max(initial=-1))) + 1
    where = np.full(size, -1, dtype=np.intp)  # position in the reference of each data-set row
    where[a] = np.arange(len(a), dtype=np.intp)
    i = where[b]
    j = np.flatnonzero(i >= 0)
    return i[j], j


def align(reference, source, *, reference_rows=None, source_rows=None, scale: bool = True) -> Alignment:
    """Align ``source`` ((m, d2)) onto ``reference`` ((n, d1)) by translation, rotation or
    reflection and (``scale``) an isotropic scale, fitted on the rows both share.

    ``reference_rows`` / ``source_rows``: the data-set row of each point (a run's
    ``point_index``); None means "rows 0..n-1 in order". Points with a non-finite coordinate
    are left out of the fit (and stay non-finite). Raises :class:`DataError` when
    fewer than :data:`MIN_SHARED_ROWS` rows are shared or the reference has no spread.
    """
    X = _as_2d(reference, "reference")
    Y = _as_2d(source, "source")
    ref_rows = np.arange(len(X)) if reference_rows is None else np.asarray(reference_rows)
    src_rows = np.arange(len(Y)) if source_rows is None else np.asarray(source_rows)
    if len(ref_rows) != len(X) or len(src_rows) != len(Y):
        raise DataError(
            f"Each point needs its data-set row: the reference has {len(X):,} points and {len(ref_rows):,} rows, "
            f"the source {len(Y):,} points and {len(src_rows):,} rows.")
    k = max(X.shape[1], Y.shape[1])
    i, j = shared_rows(ref_rows, src_rows)
    same = len(i) == len(X) == len(Y) and bool(np.all(i == j)) and bool(np.all(i[:1] == 0))
    Xs, Ys = (_pad(X, k), _pad(Y, k)) if same else (_pad(X[i], k), _pad(Y[j], k))
    finite = np.isfinite(Xs).all(axis=1) & np.isfinite(Ys).all(axis=1)
    if not finite.all():
        i, j, Xs, Ys = i[finite], j[finite], Xs[finite], Ys[finite]
    if len(i) < MIN_SHARED_ROWS:
        raise DataError(
            f"The two maps share {len(i)} point(s) with finite coordinates; at least {MIN_SHARED_ROWS} "
            f"are needed to align them (they must be runs of the same data set with common rows).")
    mx, my = Xs.mean(axis=0), Ys.mean(axis=0)
    Xc, Yc = Xs - mx, Ys - my
    ssx, ssy = float(np.einsum("ij,ij->", Xc, Xc)), float(np.einsum("ij,ij->", Yc, Yc))
    if not ssx > 0:
        raise DataError("The reference map has no spread on the shared points (all at one place): "
                                    "choose another reference.")
    U, s, Vt = np.linalg.svd(Yc.T @ Xc)
    R = U @ Vt
    c = float(s.sum() / ssy) if (scale and ssy > 0) else 1.0
    transform = ProcrustesTransform(my, mx, R, c)
    diff = Xc - c * _times(Yc, R)
    ssd = float(np.einsum("ij,ij->", diff, diff))
    return Alignment(aligned=transform.apply(Y), transform=transform, disparity=ssd / ssx,
                     rms=float(np.sqrt(ssd / len(i))), reference_pos=i, source_pos=j)


def procrustes_residual(A, B, *, scale: bool = True) -> float:
    """Relative residual ``||A_c - s B_c R|| / ||A_c||`` after the best similarity transform of
    ``B`` onto ``A`` (same rows): 0 for embeddings equal up to translation, rotation/reflection
    (and scale). The square root of :func:`align`'s disparity."""
    A, B = _as_2d(A, "A"), _as_2d(B, "B")
    if A.shape[0] != B.shape[0]:
        raise DataError(f"Both embeddings need the same points: {A.shape[0]} and {B.shape[0]} rows.")
    return float(np.sqrt(align(A, B, scale=scale).disparity))


def _times(P: np.ndarray, R: np.ndarray) -> np.ndarray:
    """``P @ R`` for a tall ``P`` and a small ``R``, computed as ``(R^T P^T)^T`` (numpy's matmul is
    many times slower on an (n, 2) @ (2, 2) product than on the transposed one)."""
    return (R.T @ P.T).T


def _as_2d(values, what: str) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.ndim == 1:
        arr = arr[:, None]
    if arr.ndim != 2 or arr.shape[1] == 0:
        raise DataError(f"The {what} must be an (n, d) array of coordinates; got shape {arr.shape}.")
    return arr


def _pad(arr: np.ndarray, k: int) -> np.ndarray:
    if arr.shape[1] == k:
        return arr
    out = np.zeros((arr.shape[0], k))
    out[:, :arr.shape[1]] = arr
    return out
