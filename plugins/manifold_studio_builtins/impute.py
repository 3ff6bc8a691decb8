"""Preparation step ``impute``: fill missing values (mean, median, most frequent, constant, the k
nearest rows, or probabilistic PCA's EM)."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import ppca_em
from manifold_studio.algorithms.params import Choice, Float, Int, random_state_param
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl

STRATEGIES = ("mean", "median", "most_frequent", "constant", "knn", "ppca")


def _most_frequent(col: np.ndarray) -> float:
    vals, counts = np.unique(col[~np.isnan(col)], return_counts=True)
    return float(vals[np.argmax(counts)])  # the smallest of the most frequent, as scikit-learn


def nan_euclidean(row: np.ndarray, Y: np.ndarray) -> np.ndarray:
    """Distances from ``row`` to every row of ``Y`` over the coordinates present in both, scaled
    up by (all coordinates / present ones), as scikit-learn's nan_euclidean_distances; NaN when
    no coordinate is shared."""
    both = ~np.isnan(Y) & ~np.isnan(row)
    diff = np.where(both, Y - np.where(np.isnan(row), 0.0, row), 0.0)
    present = both.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        dist = np.sqrt((diff * diff).sum(axis=1) * (Y.shape[1] / present))
    dist[present == 0] = np.nan
    return dist


class Impute(Preprocessor):
    id = "impute"
    name = "Impute missing values"
    handles_categorical = True
    help = ("Fills every missing value so that rows with gaps are kept, not dropped. Numeric columns: "
            "the training 'mean' or 'median' of the column, the 'most_frequent' value, a 'constant' "
            "(fill_value), the mean of the n_neighbors nearest training rows that have the value ('knn', "
            "distances over the coordinates both rows have, as scikit-learn's KNNImputer), or the "
            "conditional mean under probabilistic PCA fitted by EM with the gaps ('ppca', n_components). "
            "Categorical columns take their most frequent category (fill_value with 'constant'). A "
            "column with no value at all is refused, naming it.")
    params = (
        Choice("strategy", "mean", "How a missing value is filled.", choices=STRATEGIES),
        Float("fill_value", 0.0, "The value used by strategy=constant."),
        Int("n_neighbors", 5, "Rows averaged by strategy=knn.", low=1),
        Int("n_components", 2, "Latent dimensions of strategy=ppca (fewer than the numeric columns).", low=1),
        random_state_param("Seed of strategy=ppca's EM start (none: random)."),
    )

    def _fit(self, X):
        p = self._p
        strategy = p["strategy"]
        d = X.shape[1]
        cat = np.zeros(d, dtype=bool)
        cat[[self.columns_in_.index(c) for c in self.categories_in_]] = True
        if strategy != "constant":
            self.refuse_empty_columns(X, np.arange(d), f"strategy={strategy} has nothing to fill it from")
        stats = np.full(d, p["fill_value"], dtype=np.float64)
        with np.errstate(all="ignore"):
            for j in range(d):
                col = X[:, j]
                if strategy == "constant" or not (~np.isnan(col)).any():
                    continue
                if cat[j] or strategy == "most_frequent":
                    stats[j] = _most_frequent(col)
                elif strategy == "median":
                    stats[j] = float(np.nanmedian(col))
                else:  # mean, and the fallback of knn / ppca
                    stats[j] = float(np.nanmean(col))
        self.statistics_ = stats
        self.categorical_ = cat
        if strategy == "knn":
            self.fit_X_ = X.copy()
        elif strategy == "ppca":
            num = np.flatnonzero(~cat)
            if p["n_components"] >= len(num):
                raise self._error(f"strategy=ppca needs n_components ({p['n_components']}) below the number of "
                                  f"numeric columns ({len(num)}).")
            res = ppca_em.em(X[:, num], p["n_components"], random_state=p["random_state"])
            self.ppca_W_, self.ppca_mean_, self.ppca_sigma2_ = res.W, res.mean, float(res.sigma2)

    def _transform(self, X):
        out = X.copy()
        miss = np.isnan(out)
        if not miss.any():
            return out
        strategy = self._p["strategy"]
        cat = np.asarray(self.categorical_, dtype=bool)
        stats = np.asarray(self.statistics_)
        if strategy == "knn":
            self._knn(out, miss, cat)
        elif strategy == "ppca":
            num = np.flatnonzero(~cat)
            out[:, num] = ppca_em.impute(X[:, num], self.ppca_mean_, self.ppca_W_, float(self.ppca_sigma2_))
        still = np.isnan(out)
        out[still] = np.broadcast_to(stats, out.shape)[still]
        return out

    def _knn(self, out: np.ndarray, miss: np.ndarray, cat: np.ndarray) -> None:
        train = np.asarray(self.fit_X_)
        k = int(self._p["n_neighbors"])
        for i in np.flatnonzero(miss[:, ~cat].any(axis=1)):
            row = out[i].copy()
            dist = nan_euclidean(row, train)
            for j in np.flatnonzero(miss[i] & ~cat):
                donors = np.flatnonzero(~np.isnan(train[:, j]) & ~np.isnan(dist))
                if not len(donors):
                    continue  # the column's mean, below
                nearest = donors[np.argsort(dist[donors], kind="stable")[:k]]
                out[i, j] = float(train[nearest, j].mean())


@hookimpl
def register_preprocessors():
    return [Impute]
