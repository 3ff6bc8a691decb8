"""``manifold-studio run ALGO --data D.csv --distance-matrix``: the data file is a square distance
matrix, read and checked by :func:`manifold_studio.load_distance_matrix` (the window's reader);
the method's ``metric`` (``dissimilarity`` for MDS) is set to 'precomputed' (a method that takes no
distances is refused, naming those that do), and ``--extend FILE`` holds the new points' distances
to the n items (m x n; named columns are matched to the items by name).

Without the flag, ``--param metric=precomputed`` on a plain data file works too: the file is then
read as an ordinary table and only the method checks it.
"""
from __future__ import annotations

from pathlib import Path

import manifold_studio as ms
from manifold_studio.cli.console import UsageError
from manifold_studio.plugins.host import get_host
from manifold_studio.session.distance_methods import distance_params
from manifold_studio.distance_matrix import read_distances_to

HELP = ("the --data file is a square matrix of distances between its rows' items (CSV/TSV with or without a header "
        "row and a first column of names, .npy, .npz dense or sparse, .mtx): it is checked (square, finite, "
        "non-negative, zero diagonal, symmetric), the method's metric is set to 'precomputed', and --extend FILE "
        "gives the new points' distances to those items (one row per new point)")


def distance_run_params(args, cls, params: dict) -> dict:
    """``params`` for a run with --distance-matrix (unchanged without it); the options that do
    not apply to a distance matrix are refused."""
    if not getattr(args, "distance_matrix", False):
        return params
    for flag, given in (("--prep", getattr(args, "prep", None)), ("--dask", getattr(args, "dask", None) is not None),
                        ("--cv", getattr(args, "cv", None)), ("--holdout", getattr(args, "holdout", None))):
        if given:
            raise UsageError(f"{flag} does not apply with --distance-matrix")
    return distance_params(cls, params, get_host().algorithms, Path(args.data).name)


def load_source(source: str, options: dict, distances=False):
    """``ms.load_data`` (``distances`` False), the distance matrix reader (True), or the distances
    of new points to the items of the distance-matrix data set ``distances``."""
    if distances is True:
        return ms.load_distance_matrix(source, **options)
    ds = ms.load_data(source, **options)
    return read_distances_to(ds, distances, Path(source).name) if distances is not False else ds
