"""Which new rows are training rows (Qt-free): a 64-bit key per row, so that a fitted model that
keeps no copy of its training data can still give a "new" point identical to a training point
that training point's result, as the thesis' section 5.1 defines it for every kernel.

::

    keys = row_keys(X_train)                 # (n,) uint64, kept with the model
    idx = match_rows(keys, X_new)            # index of the identical training row, or -1

The key mixes every coordinate's 64-bit pattern (``-0.0`` read as ``0.0``); two different rows
share a key with probability about 2⁻⁶⁴ per pair.
"""
from __future__ import annotations

import numpy as np

__all__ = ["row_keys", "match_rows"]

_MULT = np.uint64(0x9E3779B97F4A7C15)   # odd constants of splitmix64
_M1 = np.uint64(0xBF58476D1CE4E5B9)
_M2 = np.uint64(0x94D049BB133111EB)


def _mix(h: np.ndarray) -> np.ndarray:
    h = h ^ (h >> np.uint64(30))
    h = h * _M1
    h = h ^ (h >> np.uint64(27))
    h = h * _M2
    return h ^ (h >> np.uint64(31))


def row_keys(X) -> np.ndarray:
    """(n,) uint64 key of each row of the dense float matrix ``X``."""
    X = np.ascontiguousarray(np.asarray(X, dtype=np.float64) + 0.0)  # -0.0 + 0.0 is 0.0
    bits = X.view(np.uint64).reshape(X.shape)
    h = np.full(X.shape[0], np.uint64(X.shape[1]), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for j in range(X.shape[1]):
            h = _mix((h * _MULT) ^ bits[:, j])
    return h


def match_rows(train_keys, X) -> np.ndarray:
    """For each row of ``X``, the index of a training row with the same key, else -1
    (sample-wise: each row's answer depends on that row alone)."""
    train_keys = np.asarray(train_keys, dtype=np.uint64)
    out = np.full(np.asarray(X).shape[0], -1, dtype=np.intp)
    if train_keys.size == 0 or out.size == 0:
        return out
    order = np.argsort(train_keys, kind="stable")
    sorted_keys = train_keys[order]
    keys = row_keys(X)
    pos = np.clip(np.searchsorted(sorted_keys, keys), 0, sorted_keys.size - 1)
    hit = sorted_keys[pos] == keys
    out[hit] = order[pos[hit]]
    return out
