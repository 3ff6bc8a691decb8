"""AnnData (``.h5ad``) files on disk, without reading their matrix: the lazy import of the optional
``anndata`` package, the checks made before anything is loaded, and row blocks of ``X`` (or of a
layer) read from the file one at a time (files larger than memory).

``anndata`` and ``h5py`` are an optional extra (``pip install "manifold-studio[anndata]"``); they are
imported on first use only, and their absence is a :class:`~manifold_studio.errors.DataError` that
names that command. An ``.h5ad`` file is HDF5: its structure (``X`` or ``layers/NAME``: a dense
dataset or a CSR/CSC group; ``obs`` and ``var`` data frames with an ``_index``) is checked with h5py
before anndata reads it, so a broken file gets a message naming what is wrong instead of a trace.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError

PIP_HINT = 'pip install "manifold-studio[anndata]"'
H5AD_EXTENSIONS = (".h5ad",)
HDF5_SIGNATURE = b"\x89HDF\r\n\x1a\n"


def require_anndata():
    """The ``anndata`` module (with h5py), or a DataError naming the pip command."""
    try:
        import anndata
        import h5py  # noqa: F401 - anndata's HDF5 back end, used directly for the checks
    except ImportError as exc:
        raise DataError(f"Reading and writing AnnData (.h5ad) files needs the anndata package "
                        f"({exc.name or 'anndata'} is not installed): {PIP_HINT}") from None
    return anndata


def _io(anndata):
    return getattr(anndata, "io", None) if hasattr(getattr(anndata, "io", None), "read_elem") \
        else anndata.experimental


def read_elem(elem):
    return _io(require_anndata()).read_elem(elem)


def write_elem(group, key: str, value) -> None:
    _io(require_anndata()).write_elem(group, key, value)


def check_hdf5(path: Path) -> None:
    """Refuse a file that is not HDF5 (an .h5ad saved as CSV, a truncated download)."""
    with open(path, "rb") as fh:
        head = fh.read(8)
    if head != HDF5_SIGNATURE:
        import h5py

        if not h5py.is_hdf5(str(path)):   # the signature may also sit at 512, 1024, ... bytes
            raise DataError(f"{path.name} is not an AnnData file: an .h5ad file is HDF5, and this one does not "
                            "start with the HDF5 signature (was it written by anndata's write_h5ad?).")


@dataclass
class MatrixInfo:
    """What the file says of ``X`` or a layer, before reading it."""

    where: str          # 'X' or "layers['counts']"
    shape: tuple[int, int]
    dtype: np.dtype
    encoding: str       # 'array', 'csr_matrix' or 'csc_matrix'

    @property
    def sparse(self) -> bool:
        return self.encoding != "array"


def _text(value) -> str:
    return value.decode("utf-8", "replace") if isinstance(value, bytes) else str(value)


def matrix_elem(f, path: Path, layer: str | None):
    """The HDF5 element of ``X`` or of ``layers[layer]`` (a DataError naming what exists)."""
    if layer is None:
        if "X" not in f:
            layers = sorted(f["layers"]) if "layers" in f else []
            raise DataError(f"{path.name} has no X matrix (AnnData files written with X=None hold only annotations); " +
                            (f"choose one of its layers with the layer option (layers: "
                             f"{', '.join(repr(k) for k in layers)})." if layers else
                             "it has no layers either, so it holds no matrix to fit."))
        return f["X"], "X"
    layers = sorted(f["layers"]) if "layers" in f else []
    if layer not in layers:
        raise DataError(f"{path.name} has no layer {layer!r}: its layers are "
                        f"{', '.join(repr(k) for k in layers) if layers else 'none'} (or leave layer empty for X).")
    return f["layers"][layer], f"layers[{layer!r}]"


def matrix_info(f, path: Path, layer: str | None) -> MatrixInfo:
    import h5py

    elem, where = matrix_elem(f, path, layer)
    if isinstance(elem, h5py.Dataset):
        shape, dtype, encoding = elem.shape, elem.dtype, "array"
    else:
        encoding = _text(elem.attrs.get("encoding-type", ""))
        if encoding not in ("csr_matrix", "csc_matrix") or "data" not in elem:
            raise DataError(f"{path.name}: {where} is stored as {encoding or 'an unknown group'!r}; a dense array or a "
                            "CSR/CSC sparse matrix is read.")
        shape, dtype = tuple(int(s) for s in elem.attrs.get("shape", (0, 0))), elem["data"].dtype
    if len(shape) != 2 or 0 in shape:
        raise DataError(f"{path.name}: {where} has shape {tuple(shape)}; a matrix with rows and columns is needed.")
    if dtype.kind not in "biuf":
        raise DataError(f"{path.name}: {where} holds values of type {dtype} (not numbers); a numeric matrix is needed.")
    return MatrixInfo(where, (int(shape[0]), int(shape[1])), dtype, encoding)


def index_elem(f, key: str):
    """The HDF5 dataset of the index (row names) of the data frame ``obs`` or ``var``, None if
    absent: a string array, or the ``values`` of a nullable string array (anndata 0.13)."""
    import h5py

    if key not in f:
        return None
    group = f[key]
    index = _text(group.attrs.get("_index", "_index"))
    elem = group.get(index)
    if isinstance(elem, h5py.Group):
        elem = elem.get("values")
    if not isinstance(elem, h5py.Dataset):
        raise DataError(f"{key} has no index (the names of its rows).")
    return elem


def frame_length(f, key: str) -> int | None:
    """The number of rows of the data frame ``obs`` or ``var`` (by its index), None if absent."""
    elem = index_elem(f, key)
    return None if elem is None else int(elem.shape[0])


def check_structure(f, path: Path, layer: str | None) -> MatrixInfo:
    """The checks made before reading: X (or the layer) numeric, obs and var as long as its rows
    and columns, names of var unique."""
    info = matrix_info(f, path, layer)
    n, d = info.shape
    for key, size, what in (("obs", n, "rows"), ("var", d, "columns")):
        try:
            length = frame_length(f, key)
        except DataError as exc:
            raise DataError(f"{path.name}: {exc}") from None
        if length is not None and length != size:
            raise DataError(f"{path.name}: {key} has {length:,} entries but {info.where} has {size:,} {what}; "
                            f"each {what[:-1]} needs exactly one {key} entry.")
    if "var" in f:
        names = np.array([_text(v) for v in index_elem(f, "var")[()]], dtype=object)
        uniq, counts = np.unique(names, return_counts=True)
        if (counts > 1).any():
            dup = uniq[counts > 1]
            raise DataError(f"{path.name}: var_names are not unique ({len(dup)} repeated, e.g. "
                            f"{', '.join(repr(str(v)) for v in dup[:3])}); feature names must be unique "
                            "(make them unique in anndata with adata.var_names_make_unique()).")
    return info


def open_h5(path: Path):
    """The file opened read-only with h5py (after the HDF5 check), failures as DataError."""
    require_anndata()
    import h5py

    check_hdf5(path)
    try:
        return h5py.File(path, "r")
    except OSError as exc:
        raise DataError(f"{path.name} cannot be opened as HDF5: {exc}") from None


def row_block(elem, info: MatrixInfo, start: int, stop: int, path: Path):
    """Rows ``start:stop`` of a matrix element as float64 (CSR kept sparse), read from the file
    alone: a CSR block reads its slice of ``indptr`` and the values between; a dense block is one
    hyperslab. A CSC matrix has no row blocks and is refused (``adata.X = adata.X.tocsr()``)."""
    import scipy.sparse as sp

    if not info.sparse:
        return np.asarray(elem[start:stop], dtype=np.float64)
    if info.encoding != "csr_matrix":
        raise DataError(f"{path.name}: {info.where} is a CSC matrix, which cannot be read by rows; save it as CSR "
                        "(adata.X = adata.X.tocsr()) to read it in chunks.")
    ptr = np.asarray(elem["indptr"][start:stop + 1], dtype=np.int64)
    lo, hi = int(ptr[0]), int(ptr[-1])
    block = sp.csr_array((np.asarray(elem["data"][lo:hi], dtype=np.float64), np.asarray(elem["indices"][lo:hi]),
                          ptr - lo), shape=(stop - start, info.shape[1]))
    return block


def check_sparse_structure(X, where: str) -> None:
    """Refuse a sparse matrix whose index arrays do not describe one (column indices outside the
    shape, a decreasing ``indptr``): scipy would read past them."""
    import scipy.sparse as sp

    if sp.issparse(X):
        try:
            X.check_format(full_check=True)
        except (ValueError, IndexError) as exc:
            raise DataError(f"{where} is not a valid sparse matrix ({exc}).") from None


def check_finite(X, where: str, offset: int = 0) -> None:
    """Refuse NaN or infinite values, stored explicitly in a sparse matrix or in a dense one."""
    import scipy.sparse as sp

    values = X.data if sp.issparse(X) else X
    bad = ~np.isfinite(values)
    if bad.any():
        if sp.issparse(X):
            row = int(np.searchsorted(X.indptr, int(np.flatnonzero(bad)[0]), side="right") - 1)
        else:
            row = int(np.flatnonzero(bad.any(axis=1))[0])
        kind = "stored (explicit) NaN or infinite values" if sp.issparse(X) else "NaN or infinite values"
        raise DataError(f"{where} holds {int(bad.sum()):,} {kind}, the first in row {row + offset:,}; the methods "
                        "need finite values (replace them, e.g. with 0, before saving).")
