"""Procrustes comparison of two embeddings (test helper)."""
import numpy as np


def procrustes_residual(A, B, *, scale: bool = True) -> float:
    """Relative residual after the best translation, rotation/reflection (and scale) of B onto A.

    Returns ||A_c - s B_c R|| / ||A_c|| (0 for embeddings equal up to a similarity transform),
    with A_c, B_c centred and R orthogonal.
    """
    A = np.asarray(A, dtype=float)
    B = np.asarray(B, dtype=float)
    assert A.shape == B.shape, (A.shape, B.shape)
    A = A - A.mean(axis=0)
    B = B - B.mean(axis=0)
    U, s, Vt = np.linalg.svd(B.T @ A)
    R = U @ Vt
    sB = np.sum(B * B)
    c = s.sum() / sB if (scale and sB > 0) else 1.0
    return float(np.linalg.norm(A - c * B @ R) / max(np.linalg.norm(A), 1e-300))
