"""Results written into AnnData (``.h5ad``) files: an embedding to ``obsm['X_<method>']``, cluster or
predicted labels to an ``obs`` column (``<method>_clusters`` / ``<method>_predicted``).

Two ways, both atomic (a temporary file next to the target, renamed over it at the end: a failure
leaves what was there before):

* :func:`write_h5ad` — a **new** file. When the data came from an ``.h5ad`` file it is a copy of
  that file with the result added (``X``, layers, ``var``, the other ``obs`` columns and ``obsm``
  entries are copied byte for byte, never rewritten); otherwise a new AnnData file with the data
  as ``X``, the feature names as ``var_names``, the row ids as ``obs_names`` and the labels and
  meta columns (as in a CSV output) as ``obs`` columns.
* :func:`add_to_h5ad` — the result **added** to an existing ``.h5ad`` file (``--h5ad-add``); its
  rows must match (count, and ``obs_names`` when the data has row ids). Only ``obsm`` and ``obs``
  are written; ``X`` is untouched. A read-only folder is refused before anything is done.
"""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError, WriteError
from manifold_studio.fileio.anndata_io import (
    H5AD_EXTENSIONS, check_hdf5, frame_length, read_elem, require_anndata, write_elem,
)
from manifold_studio.fileio.atomic import atomic_replace
from manifold_studio.tables.result_formats import meta_columns


def is_h5ad(path) -> bool:
    return str(path).lower().endswith(H5AD_EXTENSIONS)


def result_key(method: str, kind: str) -> tuple[str, str]:
    """(``'obsm'`` or ``'obs'``, the key) a result of this kind is stored under."""
    if kind in ("clustering", "classification"):
        return "obs", f"{method}_{'clusters' if kind == 'clustering' else 'predicted'}"
    return "obsm", f"X_{method}"


def _label_column(values: np.ndarray):
    import pandas as pd

    values = np.asarray(values)
    text = np.array([str(v) for v in values.ravel()], dtype=object)
    return pd.Categorical(text, categories=sorted(set(text), key=lambda v: (len(v), v)))


def _obs_column(values):
    """A meta column for ``obs``: numbers as they are, anything else as a categorical of its text
    (missing values missing)."""
    import pandas as pd

    v = np.asarray(values)
    if v.dtype.kind in "fiub":
        return v
    return pd.Categorical([None if x is None or (isinstance(x, float) and x != x) else str(x) for x in v.tolist()])


def _add(f, result: np.ndarray, method: str, kind: str, where: str, extra_obs: dict | None = None) -> str:
    """Write the result into the open file ``f`` (mode r+), return what was written.
    ``extra_obs``: more ``obs`` columns (name -> one value per cell), e.g. ``<method>_fitted``."""
    group, key = result_key(method, kind)
    n = frame_length(f, "obs")
    if n is not None and n != result.shape[0]:
        raise DataError(f"{where} has {n:,} cells (obs rows) but the result has {result.shape[0]:,} rows: "
                        "it can only be added to the file the data came from.")
    written = []
    if group == "obsm":
        if "obsm" not in f:
            write_elem(f, "obsm", {})
        replaced = key in f["obsm"]
        if replaced:
            del f["obsm"][key]
        write_elem(f["obsm"], key, np.ascontiguousarray(result, dtype=np.float64))
        written.append(f"obsm[{key!r}] ({'replaced' if replaced else 'new'})")
    columns = {} if group == "obsm" else {key: _label_column(result)}
    columns.update(extra_obs or {})
    if columns:
        obs = read_elem(f["obs"])
        for name, values in columns.items():
            written.append(f"obs[{name!r}] ({'replaced' if name in obs.columns else 'new'})")
            obs[name] = values
        del f["obs"]
        write_elem(f, "obs", obs)
    return " and ".join(written)


def _edit(tmp: Path, source: Path | None, result, method, kind, where: str, extra_obs: dict | None = None) -> str:
    import h5py

    if source is not None:
        shutil.copyfile(source, tmp)
    with h5py.File(tmp, "r+") as f:
        return _add(f, result, method, kind, where, extra_obs)


def _check_rows(path: Path, ds) -> None:
    """The rows of ``ds`` are the cells of ``path`` (their names, when it has some)."""
    if ds is None or ds.row_ids is None:
        return
    import h5py

    with h5py.File(path, "r") as f:
        if "obs" not in f:
            return
        names = read_elem(f["obs"]).index.astype(str)
    ids = np.asarray(ds.row_ids).astype(str)
    if len(names) == len(ids) and not np.array_equal(np.asarray(names), ids):
        k = int(np.flatnonzero(np.asarray(names) != ids)[0])
        raise DataError(f"{path.name}: the cells are not the rows of the data ({path.name} has {names[k]!r} at "
                        f"row {k}, the data {ids[k]!r}); add results to the file the data came from.")


def _frame(ds):
    import pandas as pd
    import scipy.sparse as sp

    anndata = require_anndata()
    n = ds.n_samples
    obs = pd.DataFrame(index=pd.Index(np.asarray(ds.row_ids).astype(str) if ds.row_ids is not None
                                      else np.arange(n).astype(str)))
    if ds.labels is not None:
        obs[ds.label_name or "label"] = _label_column(ds.labels)
    for name, values in zip(*meta_columns(ds)):   # the data's annotations (island, sex, ...) as in CSV outputs
        if name not in obs.columns:
            obs[name] = _obs_column(values)
    var = pd.DataFrame(index=pd.Index(ds.feature_names or [f"x{j}" for j in range(ds.n_features)]))
    X = sp.csr_matrix(ds.X) if ds.is_sparse else np.asarray(ds.X)
    return anndata.AnnData(X=X, obs=obs, var=var)


def write_h5ad(path, result, method: str, kind: str, ds=None, source=None, extra_obs: dict | None = None) -> str:
    """Write a new ``.h5ad`` file (see the module docstring); returns what was written.
    ``source``: the data file when there is no data set (``apply``), default ``ds.source``;
    ``extra_obs``: more ``obs`` columns to write (see :func:`_add`)."""
    require_anndata()
    path, result = Path(path), np.asarray(result)
    source = source if source is not None else (ds.source if ds is not None else None)
    source = Path(source) if source and is_h5ad(source) else None
    if source is not None and source.exists():
        check_hdf5(source)
        _check_rows(source, ds)
        if source.resolve() == path.resolve():
            raise DataError(f"{path.name} is the data file: add the result to it with --h5ad-add, or give "
                            "another output file.")
        written: list[str] = []
        atomic_replace(path, lambda tmp: written.append(_edit(tmp, source, result, method, kind, path.name, extra_obs)))
        return f"a copy of {source.name} with {written[0]}"
    if ds is None:
        raise DataError(f"{path.name}: an .h5ad result is written from .h5ad data only here (a copy of the data "
                        "file with the result); write CSV or .npy instead.")
    if ds.n_samples != result.shape[0]:
        raise DataError(f"{path.name}: the result has {result.shape[0]:,} rows for {ds.n_samples:,} data rows.")
    adata = _frame(ds)
    written = []

    def fill(tmp: Path):
        adata.write_h5ad(tmp)
        written.append(_edit(tmp, None, result, method, kind, path.name, extra_obs))

    atomic_replace(path, fill)
    return f"X ({ds.n_samples:,} × {ds.n_features}) and {written[0]}"


def check_addable(path) -> None:
    """Refuse, before any work, to add to ``path`` when it is not an existing .h5ad file or its
    folder (or the file) cannot be written: the atomic rename needs the folder."""
    path = Path(path)
    if not path.exists():
        raise DataError(f"{path.name} does not exist: results can only be added to an existing .h5ad file "
                        "(leave out --h5ad-add to write a new one).")
    if not is_h5ad(path):
        raise DataError(f"{path.name} is not an .h5ad file: results are added to AnnData files only.")
    check_hdf5(path)
    folder = path.resolve().parent
    if not os.access(folder, os.W_OK | os.X_OK) or not os.access(path, os.W_OK):
        raise WriteError(f"Cannot add the result to {path.name} in place: its folder {folder} (or the file) is "
                         "read-only. Write a new file elsewhere instead (--out NEW.h5ad without --h5ad-add); "
                         f"{path.name} is unchanged.")


def add_to_h5ad(path, result, method: str, kind: str, ds=None, extra_obs: dict | None = None) -> str:
    """Add the result to the existing ``.h5ad`` file ``path`` atomically (see the module
    docstring); returns what was written."""
    require_anndata()
    path, result = Path(path), np.asarray(result)
    check_addable(path)
    _check_rows(path, ds)
    written: list[str] = []
    atomic_replace(path, lambda tmp: written.append(_edit(tmp, path, result, method, kind, path.name, extra_obs)))
    return written[0]
