"""Procrustes comparison of two embeddings (test helper): the product's own alignment,
:func:`manifold_studio.analysis.procrustes.procrustes_residual` (``||A_c - s B_c R|| / ||A_c||``)."""
from manifold_studio.analysis.procrustes import procrustes_residual  # noqa: F401

__all__ = ["procrustes_residual"]
