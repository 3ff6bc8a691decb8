"""How good is the out-of-sample extension? The experiment of thesis section 5.4 (table 5.1, fig. 5.2).

Qt-free. For several substitution fractions f = |R1| / n, the data is split as
``D = F ∪ R1 ∪ R2`` (|R1| = |R2|); the method is trained on ``F ∪ R1`` and on ``F ∪ R2``, the
two embeddings of F are aligned by the best affine map (eigenvectors of close eigenvalues may
rotate) and their distance per point of F measures the method's *intrinsic variability*
(step 3). For held-out points ``x_i`` of F, the method is retrained on ``(F ∪ R1) \\ {x_i}``
and ``x_i`` placed by the Nyström extension; its distance to ``x_i``'s embedding when it was
trained on (after the same kind of alignment) is the *extension error* (steps 4-6). The
per-point difference ``variability - extension error`` is averaged with a 95% confidence
interval (step 7): positive means the extension moves a point less than swapping a fraction
f of the training set moves the map. Distances are reported relative to the map's size
(root mean square distance of the points of F to their centre).

    res = extension_quality(ms.get_algorithm("isomap"), X, random_state=0, progress=p)
    res.rows[0].difference_mean, res.rows[0].difference_ci
    res.explanation()          # one plain sentence for the user
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from manifold_studio.algorithms.checks import check_data, check_random_state
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.errors import DataError
from manifold_studio.extend.sample_fit import clone_estimator

__all__ = ["FractionResult", "ExtensionQualityResult", "extension_quality", "affine_align"]

DEFAULT_FRACTIONS = (0.01, 0.02, 0.05, 0.1, 0.2)


@dataclass
class FractionResult:
    """Statistics for one substitution fraction (one point of figure 5.2)."""

    fraction: float                  #: |R1| / n
    n_substituted: int               #: |R1| = |R2|
    variability: np.ndarray          #: per held-out point: distance between the F∪R1 and F∪R2 maps
    extension_error: np.ndarray      #: per held-out point: extension vs in-sample embedding
    difference_mean: float = 0.0     #: mean of variability - extension_error
    difference_ci: tuple = (0.0, 0.0)  #: 95% confidence interval of that mean

    @property
    def variability_mean(self) -> float:
        return float(np.mean(self.variability))

    @property
    def extension_error_mean(self) -> float:
        return float(np.mean(self.extension_error))

    def as_dict(self) -> dict:
        return {"fraction": self.fraction, "n_substituted": self.n_substituted,
                "variability_mean": self.variability_mean,
                "extension_error_mean": self.extension_error_mean,
                "difference_mean": self.difference_mean,
                "difference_ci_low": self.difference_ci[0], "difference_ci_high": self.difference_ci[1],
                "n_points": int(self.variability.size)}


@dataclass
class ExtensionQualityResult:
    """Plain result of :func:`extension_quality` (one row per substitution fraction)."""

    method: str
    n_samples: int
    rows: list = field(default_factory=list)
    n_repeats: int = 1

    @property
    def fractions(self) -> np.ndarray:
        return np.array([r.fraction for r in self.rows])

    def table(self) -> list[dict]:
        return [r.as_dict() for r in self.rows]

    def crossover_fraction(self) -> float | None:
        """Smallest fraction whose variability exceeds the extension error on average."""
        for r in self.rows:
            if r.difference_mean > 0:
                return r.fraction
        return None

    def explanation(self) -> str:
        """One plain-language sentence summarising the experiment."""
        if not self.rows:
            return "No substitution fraction was evaluated."
        ext = float(np.mean([r.extension_error_mean for r in self.rows]))
        cross = self.crossover_fraction()
        if cross is None:
            top = self.rows[-1]
            return (f"Placing a new point with the out-of-sample extension puts it about {ext:.1%} of the "
                    f"map's size away from where refitting with it would, more than the map itself moves "
                    f"even when {top.fraction:.0%} of the training points are swapped ({top.variability_mean:.1%}), "
                    f"so refit with the new points when accuracy matters.")
        row = next(r for r in self.rows if r.fraction == cross)
        return (f"Placing a new point with the out-of-sample extension puts it about {ext:.1%} of the "
                f"map's size away from where refitting with it would, less than the map itself moves when "
                f"{cross:.0%} of the training points are swapped for others ({row.variability_mean:.1%}), "
                f"so the extension is about as reliable as refitting.")


def affine_align(source: np.ndarray, target: np.ndarray):
    """Best affine map (least squares) sending ``source`` rows onto ``target`` rows.

    Returns a function applying it to other rows of the source space."""
    A = np.hstack([source, np.ones((source.shape[0], 1))])
    coef, *_ = np.linalg.lstsq(A, target, rcond=None)

    def apply(Y):
        Y = np.atleast_2d(Y)
        return np.hstack([Y, np.ones((Y.shape[0], 1))]) @ coef

    return apply


def _embedding(est) -> np.ndarray:
    if est.kind == "embedding":
        return np.asarray(est.embedding_)
    if hasattr(est, "spectral_embedding_"):
        return np.asarray(est.spectral_embedding_)
    raise DataError(f"The extension-quality experiment needs an embedding method or spectral "
                    f"clustering; {est.name or type(est).__name__} has no embedding.")


class _Part(SubProgress):
    """Progress of one refit or extension: its fraction and Cancel, never its partial maps (the
    experiment draws no map)."""

    def partial(self, result) -> None:
        pass


def _fit_here(estimator, rows, progress):
    est = clone_estimator(estimator)
    est.fit(rows, progress=progress)
    return est, _embedding(est)


def _extend_here(est, X, progress=None) -> np.ndarray:
    if est.kind == "embedding":
        return np.asarray(est.extend(X, progress=progress))
    return np.asarray(est.extend_embedding(X, progress=progress))


def extension_method(est) -> str:
    """The extension the experiment compares with the in-sample map: ``extend`` for an embedding
    method, ``extend_embedding`` (the spectral coordinates of new points) for a clustering."""
    return "extend" if est.kind == "embedding" else "extend_embedding"


def _mean_ci(values: np.ndarray, level: float = 0.95):
    n = values.size
    mean = float(np.mean(values))
    if n < 2:
        return mean, (mean, mean)
    from scipy import stats  # lazy: kept off the start-up

    half = float(stats.t.ppf(0.5 + level / 2, n - 1) * np.std(values, ddof=1) / np.sqrt(n))
    return mean, (mean - half, mean + half)


def extension_quality(estimator, X, *, fractions=DEFAULT_FRACTIONS, n_repeats: int = 3,
                      n_heldout: int = 10, random_state=None, progress=None,
                      distances: bool = False, fit=None, extend=None) -> ExtensionQualityResult:
    """Run the section 5.4 experiment for ``estimator`` (its parameters, refitted many times).
    ``distances``: X is a square distance matrix (metric='precomputed'): each refit gets the distances
    between its points, the left-out point its distances to them.

    ``fit(rows, progress) -> (fitted estimator, its embedding of rows)`` and ``extend(fitted, rows,
    progress) -> values`` (see :func:`extension_method`), if given, do each refit and each
    extension (the window fits and extends a third-party model in worker processes this way:
    :func:`manifold_studio.session.isolated_fit.fit_estimator_in_subprocess`,
    :func:`manifold_studio.session.isolated_extend.extend_model`); by default both run here.

    ``n_heldout`` points of F are left out one at a time per repeat (each needs one refit), so
    the cost is about ``len(fractions) * n_repeats * (2 + n_heldout)`` fits.
    """
    progress = as_progress(progress)
    fit = fit or (lambda rows, p: _fit_here(estimator, rows, p))
    extend = extend or _extend_here
    X = check_data(X, min_samples=4, allow_nan=callable(getattr(estimator, "prepare", None)))
    n = X.shape[0]
    rng = check_random_state(random_state)
    fractions = [float(f) for f in fractions]
    if not fractions or any(not (0 < f < 0.5) for f in fractions):
        raise DataError("Substitution fractions must be between 0 and 0.5 (|R1| + |R2| < n).")
    def rows(idx, cols=None):
        cols = idx if cols is None else cols
        return X[np.ix_(idx, cols)] if distances else X[idx]

    result = ExtensionQualityResult(getattr(estimator, "id", type(estimator).__name__), n, n_repeats=n_repeats)
    total = len(fractions) * n_repeats
    step = 0
    for f in fractions:
        r = max(1, int(round(f * n)))
        if n - 2 * r < 2:
            raise DataError(f"Fraction {f} leaves fewer than 2 common points out of {n}.")
        var_all, ext_all = [], []
        for _ in range(n_repeats):
            sub = SubProgress(progress, step / total, (step + 1) / total, f"Fraction {f:.0%}: ")
            step += 1
            perm = rng.permutation(n)
            R1, R2, F = perm[:r], perm[r:2 * r], perm[2 * r:]
            train1 = np.concatenate([F, R1])
            train2 = np.concatenate([F, R2])
            nF = F.size
            sub.checkpoint(0.0, "training on F ∪ R1")
            _, e1 = fit(rows(train1), _Part(sub, 0.0, 0.05))
            sub.checkpoint(0.05, "training on F ∪ R2")
            _, e2 = fit(rows(train2), _Part(sub, 0.05, 0.1))
            size = float(np.sqrt(np.mean(np.sum((e1[:nF] - e1[:nF].mean(0)) ** 2, axis=1)))) or 1.0
            aligned2 = affine_align(e2[:nF], e1[:nF])(e2[:nF])
            variability = np.linalg.norm(aligned2 - e1[:nF], axis=1) / size
            held = rng.choice(nF, size=min(n_heldout, nF), replace=False)
            for j, h in enumerate(held):
                at = 0.1 + 0.9 * j / len(held)
                sub.checkpoint(at, f"leave-one-out {j + 1}/{len(held)}")
                keep = np.delete(np.arange(train1.size), h)
                est, e_loo = fit(rows(train1[keep]), _Part(sub, at, at + 0.8 / len(held)))
                y_new = np.asarray(extend(est, rows(train1[[h]], train1[keep]),
                                          _Part(sub, at + 0.8 / len(held), at + 0.9 / len(held))))
                align = affine_align(e_loo, e1[keep])
                err = np.linalg.norm(align(y_new)[0] - e1[h]) / size
                var_all.append(variability[h])
                ext_all.append(err)
            sub.checkpoint(1.0, "done")
        var_all = np.asarray(var_all)
        ext_all = np.asarray(ext_all)
        mean, ci = _mean_ci(var_all - ext_all)
        result.rows.append(FractionResult(f, r, var_all, ext_all, mean, ci))
    progress.checkpoint(1.0, "Extension quality: done")
    return result
