"""Which algorithms fit a distance matrix, and how (Qt-free).

A method takes precomputed distances when it declares a ``metric`` or ``dissimilarity`` parameter
with the choice ``'precomputed'`` (Isomap, t-SNE, Laplacian eigenmaps, spectral clustering,
hierarchical clustering, classical MDS, and any plugin declaring the same). On a data set flagged
:attr:`~manifold_studio.data.Dataset.distance_matrix`, :func:`distance_params` sets that parameter
to ``'precomputed'`` (refusing another value), and refuses every other method with a message
naming the ones that can; methods with ``kernel='precomputed'`` (kernel PCA, the SVM) take a
kernel (similarities), not distances, and are refused too. A method may declare
``distance_defaults`` ({parameter: value}, e.g. t-SNE's ``init='random'``, hierarchical clustering's
``method='average'``): the values its other parameters take on a distance matrix unless given.
"""
from __future__ import annotations

from manifold_studio.errors import DataError, InvalidParameterError

PRECOMPUTED = "precomputed"
#: the parameter names through which a method takes precomputed distances
DISTANCE_PARAMS = ("metric", "dissimilarity")

__all__ = ["distance_param", "distance_methods", "distance_refusal", "distance_params", "PRECOMPUTED"]


def _precomputed_param(cls, names) -> str | None:
    for p in getattr(cls, "params", ()):
        if p.name in names and PRECOMPUTED in (getattr(p, "choices", None) or ()):
            return p.name
    return None


def distance_param(cls) -> str | None:
    """The parameter through which algorithm class ``cls`` takes a distance matrix, or None."""
    return _precomputed_param(cls, DISTANCE_PARAMS)


def distance_methods(algorithms: dict) -> list[str]:
    """The ids of the algorithms (``{id: class}``, e.g. ``host.algorithms``) that take distances."""
    return sorted(a for a, cls in algorithms.items() if distance_param(cls))


def distance_refusal(cls, algorithms: dict, dataset: str = "") -> str:
    """Why ``cls`` cannot fit a distance matrix, naming the methods that can ("" if it can)."""
    if distance_param(cls):
        return ""
    what = f"'{dataset}' is a distance matrix" if dataset else "A distance matrix"
    kernel = (" It takes a precomputed kernel (similarities, kernel='precomputed'), not distances."
              if _precomputed_param(cls, ("kernel",)) else " It needs the points' coordinates.")
    able = ", ".join(distance_methods(algorithms)) or "none of the loaded methods"
    return f"{what}: {cls.name} ({cls.id}) cannot fit one.{kernel} Methods that take distances: {able}."


def distance_params(cls, params: dict, algorithms: dict, dataset: str = "") -> dict:
    """``params`` with the distance parameter of ``cls`` set to 'precomputed' (DataError for a
    method that takes no distances, InvalidParameterError for another value of that parameter)."""
    name = distance_param(cls)
    if name is None:
        raise DataError(distance_refusal(cls, algorithms, dataset))
    value = (params or {}).get(name)
    if value not in (None, PRECOMPUTED):
        raise InvalidParameterError(f"'{dataset}' is a distance matrix: {cls.id} fits it with {name}='precomputed', "
                                    f"not {name}={value!r}.")
    return {**getattr(cls, "distance_defaults", {}), **(params or {}), name: PRECOMPUTED}
