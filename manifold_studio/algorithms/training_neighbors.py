"""Training-point neighbourhoods for the spectral methods built on them (Isomap, LLE,
Laplacian eigenmaps, spectral clustering): the search index over the fitted points (exact or
approximate, any metric of :mod:`manifold_studio.algorithms.neighbors`), recognition of
training points, phase timings and the check that an embedding is not empty."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.neighbors import (
    PhaseTimer, check_n_neighbors, make_index, neighbour_summary,
)
from manifold_studio.algorithms.spectral import check_n_components
from manifold_studio.errors import DataError

__all__ = ["TrainingNeighborsMixin", "check_embedding"]


def check_embedding(E: np.ndarray, what: str, hint: str) -> None:
    """DataError instead of returning an embedding with no column or a non-finite value."""
    if E.ndim != 2 or E.shape[1] == 0 or not np.isfinite(E[~np.isnan(E).all(axis=1)]).all():
        raise DataError(f"{what} found no embedding of these data ({E.shape[1] if E.ndim == 2 else 0} "
                        f"usable component(s)): {hint}.")


class TrainingNeighborsMixin:
    """For kernels built on the training points' neighbourhoods (Isomap, LLE, Laplacian
    eigenmaps, spectral clustering): one search index over ``X_fit_``, built at fit time and
    rebuilt when missing (a loaded model), and the recognition of training points that makes
    the piecewise kernels of section 5.1 exact. Put it before the spectral base class."""

    def _set_training_points(self, X: np.ndarray, progress=None, *, n_neighbors: int | None = None):
        """Keep X as the training points (``X_fit_``) and index them with the method's
        ``neighbors`` and ``metric`` parameters (an approximate index holds ``n_neighbors``,
        default the ``n_neighbors`` parameter, neighbours per point); returns the index.
        Records ``neighbors_method_`` and ``neighbors_recall_`` (recall@10 estimated on a sample
        when approximate, None when exact) and the time in ``timings_['neighbours']``."""
        p = self._p
        self.X_fit_ = X
        k = n_neighbors if n_neighbors is not None else (p.get("n_neighbors") or 10)
        with self._phase("neighbours"):
            self._index = make_index(X, neighbors=self._neighbors_setting(), metric=p.get("metric", "euclidean"),
                                     n_neighbors=min(k, max(X.shape[0] - 1, 1)), progress=progress)
            self._index.source = X
            self.neighbors_method_ = self._index.method if not self._index.approximate else "approximate"
            self.neighbors_recall_ = self._index.recall() if self._index.approximate else None
        return self._index

    def result_summary(self):
        out = super().result_summary()
        out.update(neighbour_summary(self))
        return out

    def _neighbors_setting(self) -> str:
        """The ``neighbors`` parameter ('exact' for methods without it)."""
        return self._p.get("neighbors", "exact")

    def _phase(self, name: str):
        """Context manager adding the time spent to ``timings_[name]`` of the current fit."""
        timer = getattr(self, "_timer", None)
        if timer is None:
            timer = self._timer = PhaseTimer()
        return timer(name)

    def _timed_fit(self, fit, X, y, progress, last_phase: str = "eigensolve"):
        """Run ``fit(X, y, progress)`` and set ``timings_``: the phases recorded with
        :meth:`_phase`, the rest of the time under ``last_phase``."""
        self._timer = PhaseTimer()
        with self._timer("total"):
            fit(X, y, progress)
        t = self._timer.timings
        total = t.pop("total")
        t[last_phase] = max(0.0, total - sum(t.values()))
        self.timings_ = dict(t)
        del self._timer

    def _check_sizes(self, n: int, what: str, *, skip: int = 0) -> int:
        """Check ``n_neighbors`` and ``n_components`` against n points before any work (clear
        messages naming the method ``what``); returns ``n_neighbors``."""
        k = self._p["n_neighbors"]
        check_n_neighbors(k, n, what=what)
        check_n_components(self._p["n_components"], n, skip)
        return k

    def _index_for_extend(self):
        index = getattr(self, "_index", None)
        if index is None or getattr(index, "source", None) is not self.X_fit_:
            p = self._p
            k = getattr(self, "_index_k", None) or p.get("n_neighbors") or 10
            index = self._index = make_index(self.X_fit_, neighbors=self._neighbors_setting(),
                                             metric=p.get("metric", "euclidean"),
                                             n_neighbors=min(k, max(self.X_fit_.shape[0] - 1, 1)))
            index.source = self.X_fit_
        return index

    def _match_training(self, X: np.ndarray) -> np.ndarray:
        return self._index_for_extend().match(X)
