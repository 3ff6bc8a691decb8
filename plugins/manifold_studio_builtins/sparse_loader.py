"""Sparse data sets, kept sparse: the Matrix Market loader plugin (``.mtx``, ``.mtx.gz``) and the
reader of scipy's sparse ``.npz`` files (``scipy.sparse.save_npz``), which the NumPy loader
hands such files to.

A ``coordinate`` file (the usual sparse form: one line per non-zero value) becomes a sparse data
set (a scipy.sparse CSR matrix of float64, never densified): PCA, NMF, k-means and kernel PCA
with a linear or precomputed kernel take it as it is; the other methods refuse it with a message
that names those that do. An ``array`` file (every value written) becomes an ordinary dense data
set. ``pattern`` files (positions only) read as ones; ``integer`` values as floats; complex values
are refused. Duplicate entries of a coordinate file are summed, as scipy does. The file is
parsed by scipy.io.mmread (text only: nothing in it is executed).

A sparse ``.npz`` (members ``format``, ``shape``, ``data`` and ``indices``/``indptr`` or
``row``/``col``) is read member by member through the NumPy loader's bounded archive (declared
sizes checked, ``allow_pickle=False``) and its index arrays are checked against the shape before
any sparse routine touches them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.algorithms.checks import sparse_methods_text
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl

MTX_SUFFIXES = (".mtx", ".mtx.gz", ".mtx.bz2")


def sparse_report(X, what: str) -> list[str]:
    """The load report of a sparse matrix: its size and density, the views' limits, NaN found."""
    n, d = X.shape
    density = X.nnz / max(n * d, 1)
    report = [f"{what}: a sparse {n:,} × {d:,} matrix with {X.nnz:,} non-zero values "
              f"({density:.3%} filled), kept sparse. Methods that take it as it is: "
              f"{sparse_methods_text()}; the others ask for dense data."]
    bad = int(np.count_nonzero(~np.isfinite(X.data)))
    if bad:
        report.append(f"{bad} stored value(s) are NaN or infinite: the methods refuse them.")
    return report


def read_mtx(path: Path) -> Dataset:
    import scipy.io
    import scipy.sparse as sp

    try:
        with open(path, "rb") as fh:
            head = fh.read(15)
        if path.suffix.lower() == ".mtx" and not head.startswith(b"%%MatrixMarket"):
            raise DataError(f"{path.name} is not a Matrix Market file: it must start with "
                            "'%%MatrixMarket matrix coordinate|array ...'.")
        M = scipy.io.mmread(str(path))
    except DataError:
        raise
    except (ValueError, OSError, EOFError, RuntimeError, OverflowError, UnicodeDecodeError) as exc:
        raise DataError(f"{path.name} cannot be read as a Matrix Market file: {exc}") from None
    if np.iscomplexobj(M.data if sp.issparse(M) else M):
        raise DataError(f"{path.name} holds complex numbers; only real values can be used.")
    if M.ndim != 2 or 0 in M.shape:
        raise DataError(f"{path.name} holds an empty matrix (shape {M.shape}): no samples.")
    if not sp.issparse(M):
        X = np.asarray(M, dtype=np.float64)
        report = [f"{path.name}: a dense (array format) {X.shape[0]:,} × {X.shape[1]:,} matrix."]
        return Dataset(path.name.split(".mtx")[0], X, source=str(path), report=report)
    X = sp.csr_array(M, dtype=np.float64)
    X.sum_duplicates()
    return Dataset(path.name.split(".mtx")[0], X, source=str(path), report=sparse_report(X, path.name))


#: the members that mark a scipy.sparse.save_npz file
SPARSE_NPZ_KEYS = {"format", "shape", "data"}


def is_sparse_npz(keys) -> bool:
    keys = set(keys)
    return SPARSE_NPZ_KEYS <= keys and ({"indices", "indptr"} <= keys or {"row", "col"} <= keys
                                        or "coords" in keys or "offsets" in keys)


def _member(npz, key: str) -> np.ndarray:
    return npz.load(key)


def read_sparse_npz(npz, path: Path) -> Dataset:
    """A scipy.sparse.save_npz file (members read through the NumPy loader's bounded archive
    ``npz``, without pickle) as a sparse data set; the index arrays are checked against the shape
    before any sparse routine touches them. CSR, CSC and COO files are read."""
    import scipy.sparse as sp

    fmt = _member(npz, "format")
    fmt = fmt.item() if fmt.ndim == 0 else None
    fmt = fmt.decode("ascii", "replace") if isinstance(fmt, bytes) else fmt
    if fmt not in ("csr", "csc", "coo"):
        raise DataError(f"{path.name} holds a sparse matrix in format {str(fmt)[:20]!r}; CSR, CSC and "
                        "COO files are read (convert it with scipy: M.tocsr()).")
    shape = _member(npz, "shape")
    data = _member(npz, "data")
    try:
        shape = tuple(int(v) for v in shape.ravel())
        if len(shape) != 2 or min(shape) < 1:
            raise ValueError(f"shape {shape} is not that of a non-empty matrix")
        if data.dtype.kind not in "biuf":
            raise ValueError(f"its values have type {data.dtype}, not real numbers")
        if fmt == "coo":
            if "coords" in npz:
                coords = _member(npz, "coords")
                row, col = coords[0], coords[1]
            else:
                row, col = _member(npz, "row"), _member(npz, "col")
            M = sp.coo_array((data, (row, col)), shape=shape)   # checks the indices against the shape
        else:
            cls = sp.csr_array if fmt == "csr" else sp.csc_array
            M = cls((data, _member(npz, "indices"), _member(npz, "indptr")), shape=shape)
            M.check_format(full_check=True)   # indices within the shape, indptr monotone
    except (ValueError, TypeError, IndexError, KeyError) as exc:
        raise DataError(f"{path.name} is not a readable sparse .npz file (scipy.sparse.save_npz): "
                        f"{exc}") from None
    X = sp.csr_array(M, dtype=np.float64)
    X.sum_duplicates()
    return Dataset(path.stem, X, source=str(path), report=sparse_report(X, path.name))


class MatrixMarketLoader(Loader):
    """Reads Matrix Market files, sparse (coordinate) or dense (array)."""

    id = "matrix_market"
    name = "Matrix Market (sparse)"
    extensions = MTX_SUFFIXES

    def can_load(self, path: Path) -> bool:
        return Path(path).name.lower().endswith(MTX_SUFFIXES)

    def _load(self, path) -> Dataset:
        return read_mtx(Path(path))


@hookimpl
def register_loaders():
    return [MatrixMarketLoader()]
