"""Geodesic distances of a neighbourhood graph, for Isomap (thesis table 4.2, kernel 5.1.3).

Two ways to measure them, both by Dijkstra's shortest paths (``scipy.sparse.csgraph``):

* :func:`all_pairs` — every point to every point: the classic Isomap. It keeps an n x n matrix
  of squared geodesics (float64, for the eigensolver) and one of geodesics (float32, to extend
  new points): 12 bytes per pair, 30 GB at 50,000 points. :func:`check_all_pairs_memory` refuses
  that before allocating it, naming ``n_landmarks``.
* :func:`from_landmarks` — every point to L landmarks (an n x L float32 matrix): Landmark Isomap
  (de Silva & Tenenbaum 2003). Classical MDS is solved on the L x L landmark block and every
  other point is placed by the Nyström formula of chapter 5 with its geodesics to the landmarks,
  which is how Bengio et al. (2004, cited in the course notes) read Landmark MDS. The shortest
  paths cost L/n of the classic ones and the neighbour search dominates again.

Geodesics of new points: :func:`min_plus_rows` joins a new point to the graph through its k
nearest training points, ``d_G(x, ·) = min_z (|x - z| + d_G(z, ·))``.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.jit import jit
from manifold_studio.errors import DataError
from manifold_studio.fileio.bounded import ENV_VAR, human_bytes, max_load_bytes

__all__ = ["all_pairs", "from_landmarks", "check_all_pairs_memory", "choose_landmarks",
           "min_plus_rows", "ALL_PAIRS_BYTES_PER_PAIR", "PATH_CHUNK"]

#: sources per Dijkstra call (progress and cancel between calls; each call holds the GIL)
PATH_CHUNK = 32
#: bytes the classic (all-pairs) Isomap keeps per pair of points: float64 squares + float32 geodesics
ALL_PAIRS_BYTES_PER_PAIR = 12


def suggested_landmarks(n: int) -> int:
    """A landmark count to propose in messages: 2,000, or a tenth of the points when fewer."""
    return int(min(2000, max(50, n // 10)))


def check_all_pairs_memory(n: int, what: str = "Isomap") -> None:
    """DataError (before allocating anything) when n x n geodesics exceed the memory limit
    (the same limit as a loaded file: half the RAM, or the environment variable)."""
    need = ALL_PAIRS_BYTES_PER_PAIR * n * n
    limit = max_load_bytes()
    if need > limit:
        raise DataError(
            f"{what} on {n:,} points keeps the geodesic distances between every pair of points "
            f"({n:,} x {n:,}: {human_bytes(need)}), more than the memory limit of {human_bytes(limit)} "
            f"(half the RAM, or the environment variable {ENV_VAR}). Set n_landmarks (for example "
            f"{suggested_landmarks(n):,}) to measure geodesics from landmarks only (Landmark Isomap), or "
            "fit on a sample and extend the rest.")


def choose_landmarks(n: int, n_landmarks: int, random_state) -> np.ndarray:
    """``n_landmarks`` distinct points drawn uniformly (sorted indices), seeded by ``random_state``."""
    rng = np.random.default_rng(random_state)
    return np.sort(rng.choice(n, size=n_landmarks, replace=False)).astype(np.intp)


def all_pairs(G, progress) -> tuple[np.ndarray, np.ndarray]:
    """``(S, Dg)``: squared geodesics (float64) and geodesics (float32) between all n points of
    the symmetric graph ``G`` (CSR). ``directed=True`` avoids re-symmetrising G at every call."""
    from scipy.sparse.csgraph import dijkstra   # here: the plugins load without csgraph
    m = G.shape[0]
    check_all_pairs_memory(m)
    S = np.empty((m, m), dtype=float)
    Dg = np.empty((m, m), dtype=np.float32)
    for start in range(0, m, PATH_CHUNK):
        progress.checkpoint(start / m, f"{start:,}/{m:,} sources")
        stop = min(m, start + PATH_CHUNK)
        block = dijkstra(G, directed=True, indices=np.arange(start, stop))
        Dg[start:stop] = block
        np.multiply(block, block, out=S[start:stop])
    progress.checkpoint(1.0, f"{m:,}/{m:,} sources")
    return S, Dg


def from_landmarks(G, landmarks: np.ndarray, progress) -> tuple[np.ndarray, np.ndarray]:
    """``(S, Dg)``: the squared geodesics between the landmarks (L x L, float64, symmetrised)
    and the geodesics of every point to each landmark (n x L, float32; row i, column j is
    ``d_G(x_i, landmark_j)``). S is computed from the float32 values kept in Dg, so a landmark's
    row of Dg gives exactly its row of S (theorem 5.1 holds for the landmarks)."""
    from scipy.sparse.csgraph import dijkstra   # here: the plugins load without csgraph
    n = G.shape[0]
    L = landmarks.size
    Dg = np.empty((n, L), dtype=np.float32)
    for start in range(0, L, PATH_CHUNK):
        progress.checkpoint(start / L, f"{start:,}/{L:,} landmarks")
        stop = min(L, start + PATH_CHUNK)
        Dg[:, start:stop] = dijkstra(G, directed=True, indices=landmarks[start:stop]).T
    progress.checkpoint(1.0, f"{L:,}/{L:,} landmarks")
    S = Dg[landmarks].astype(float)
    S *= S
    S += S.T      # paths summed in another order may differ in the last bit: one symmetric matrix
    S *= 0.5
    return S, Dg


@jit
def min_plus_rows(Dg, idx, step, out):
    """out[r, j] = min over t of step[r, t] + Dg[idx[r, t], j] — one pass per new point over the
    rows of its k joining neighbours (4-5x faster than k numpy passes over (m, n) blocks; the same
    additions and comparisons, so the same numbers)."""
    m, k = idx.shape
    n = Dg.shape[1]
    for r in range(m):
        row = out[r]
        s0 = step[r, 0]
        src = Dg[idx[r, 0]]
        for j in range(n):
            row[j] = src[j] + s0
        for t in range(1, k):
            s = step[r, t]
            src = Dg[idx[r, t]]
            for j in range(n):
                v = src[j] + s
                if v < row[j]:
                    row[j] = v
    return out
