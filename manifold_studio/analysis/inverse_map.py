"""The inverse map (Qt-free): the data point a place on the map decodes to.

A method decodes when its fitted estimator has ``inverse_transform`` (PCA, probabilistic PCA,
NMF, the autoencoder, and any plugin that offers one: UMAP's inverse when built, kernel PCA's
pre-image). The map shows the first two coordinates of the embedding; when the method has more
components, the others are held at their mean over the fitted points. For a run with preparation
steps the values are those of the prepared data (what the method saw).

:func:`decode` decodes positions, :func:`walk` the straight path between two positions;
:func:`decoder_status` says whether a run decodes and, if not, why.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from manifold_studio.errors import DataError, InvalidParameterError

#: steps of a walk at most
MAX_WALK = 200


@dataclass
class DecodeStatus:
    ok: bool
    message: str


def _final(estimator):
    final = getattr(estimator, "final", None)
    return final if final is not None else estimator


def decoder_status(estimator, name: str = "", in_worker: bool = False, stored: bool = False) -> DecodeStatus:
    """Whether ``estimator`` (a run's fitted estimator) can decode a map position, in words.
    ``in_worker``: the model's code runs in worker processes only (a third-party plugin): decoding
    on hover, at once, would run it in this process, so it does not decode. ``stored``: the map came
    with the data file (a ready-made map), it never had a model."""
    what = name or type(_final(estimator)).__name__ if estimator is not None else name or "this run"
    if estimator is None and stored:
        return DecodeStatus(False, f"{what} cannot decode a map position: it is a map stored in the data file, "
                                   "without a model (run a method that decodes, e.g. PCA, to decode).")
    if estimator is None:
        return DecodeStatus(False, f"{what}: no fitted model in memory (fit the run again to decode).")
    if in_worker:
        return DecodeStatus(False, f"{what} comes from a plugin, whose code runs in a worker process only, never "
                                   "in the window's: its map positions are not decoded here.")
    fn = getattr(_final(estimator), "inverse_transform", None)
    if not callable(fn):
        return DecodeStatus(False, f"{what} cannot decode a map position: the method has no inverse "
                                   "(only PCA, probabilistic PCA, NMF, the autoencoder and methods with an "
                                   "inverse_transform can).")
    refusal = getattr(_final(estimator), "cannot_inverse", None)   # a model whose inverse depends on its fit
    why = refusal() if callable(refusal) else ""
    if why:
        return DecodeStatus(False, f"{what} cannot decode a map position: {why}")
    prep = getattr(estimator, "preparation", None)
    note = " (values of the prepared data)" if prep else ""
    return DecodeStatus(True, f"{what} decodes map positions{note}.")


def _codes(positions, embedding: np.ndarray) -> np.ndarray:
    positions = np.atleast_2d(np.asarray(positions, dtype=float))
    if positions.shape[1] != 2:
        raise DataError(f"Map positions must be (x, y) pairs, got shape {positions.shape}.")
    if not np.isfinite(positions).all():
        raise DataError("A map position to decode is not a finite number.")
    embedding = np.asarray(embedding, dtype=float)
    if embedding.ndim != 2 or embedding.shape[1] < 2:
        raise DataError(f"The run's embedding must have at least 2 columns to decode, got shape {embedding.shape}.")
    if embedding.shape[1] == 2:
        return positions
    rest = np.nanmean(embedding[:, 2:], axis=0)
    return np.hstack([positions, np.broadcast_to(rest, (positions.shape[0], rest.size))])


def decode(estimator, positions, embedding, name: str = "", in_worker: bool = False,
           stored: bool = False) -> np.ndarray:
    """The data rows (m, n_features) that map positions (m, 2) decode to (``in_worker``, ``stored``:
    see :func:`decoder_status`)."""
    status = decoder_status(estimator, name, in_worker, stored)
    if not status.ok:
        raise InvalidParameterError(status.message)
    codes = _codes(positions, embedding)
    out = np.asarray(_final(estimator).inverse_transform(codes), dtype=float)
    return out.reshape(codes.shape[0], -1)


def walk_positions(start, end, steps: int) -> np.ndarray:
    """``steps`` evenly spaced positions from ``start`` to ``end`` (both included)."""
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or not 2 <= steps <= MAX_WALK:
        raise InvalidParameterError(f"Walk steps={steps!r}: use a whole number from 2 to {MAX_WALK}.")
    t = np.linspace(0.0, 1.0, int(steps))[:, None]
    a, b = np.asarray(start, dtype=float), np.asarray(end, dtype=float)
    return a + t * (b - a)


def walk(estimator, start, end, embedding, steps: int = 8, name: str = "",
         in_worker: bool = False, stored: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """(positions, decoded rows) of a straight walk from ``start`` to ``end`` on the map."""
    pos = walk_positions(start, end, steps)
    return pos, decode(estimator, pos, embedding, name, in_worker, stored)
