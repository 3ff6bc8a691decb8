"""AnnData (``.h5ad``) loader plugin: single-cell data as scanpy and cellxgene keep it.

* ``X`` — dense, or sparse (a CSR matrix stays sparse; CSC is converted to CSR) — or one of
  ``layers`` (option ``layer``) is the feature matrix; ``var_names`` are the feature names and
  ``obs_names`` the row ids.
* ``obs`` columns become annotation columns (role ``meta``; categoricals are classes); option
  ``label_column`` makes one of them the target (the labels).
* Every numeric ``obsm`` entry with two columns or more (``X_pca``, ``X_umap``, ...) becomes a ready-made map
  (:attr:`~manifold_studio.data.Dataset.ready_maps`).
* ``backed=true`` keeps X on disk (files larger than memory): the data set holds a random
  sample of ``sample_rows`` rows, read block by block, and :meth:`iter_chunks` gives every row in
  chunks, for ``apply`` / out-of-core extension (fit on the sample, extend in chunks).

The file's structure is checked first (:mod:`manifold_studio.fileio.anndata_io`): not HDF5, no X,
a non-numeric X, ``obs``/``var`` lengths that differ from X, repeated ``var_names``, a layer that
does not exist, and NaN values (explicit in a sparse matrix too) are refused by name. anndata is
an optional extra: without it the message names ``pip install "manifold-studio[anndata]"``.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Bool, Int, Text
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.fileio.anndata_io import (
    H5AD_EXTENSIONS, check_finite, check_sparse_structure, check_structure, matrix_elem, open_h5, read_elem,
    row_block,
)
from manifold_studio.hookspecs import hookimpl
from manifold_studio.tables.infer import table_from_frame
from manifold_studio.tables.model import META, TARGET, quote
from manifold_studio.tables.options import LABEL_COLUMN

#: rows read at a time when sampling a backed file
SCAN_ROWS = 20_000

OPTIONS = (
    Text("layer", None, "A layer (adata.layers[NAME]) to use as the features instead of X; empty for X.",
         allow_none=True),
    LABEL_COLUMN,
    Bool("backed", False, "Keep X on disk (files larger than memory): load a random sample of sample_rows "
                          "rows; apply / extension read every row in chunks."),
    Int("sample_rows", 20_000, "Rows of the sample read in backed mode.", low=1),
    Int("random_state", 0, "Seed of the backed-mode sample.", low=0),
)


def _target(ref, names: list[str], path: Path) -> str | None:
    if ref is None:
        return None
    if isinstance(ref, str) and ref.strip().isdigit() and ref not in names:   # --label-column 0: an index
        ref = int(ref)
    if isinstance(ref, int) and str(ref) not in names:
        if not 0 <= ref < len(names):
            raise DataError(f"{path.name}: obs has no column {ref} (it has {len(names)} columns).")
        return names[ref]
    if str(ref) not in names:
        raise DataError(f"{path.name}: obs has no column {quote(ref)}: its columns are "
                        f"{', '.join(quote(n) for n in names) or 'none'}.")
    return str(ref)


def obs_table(obs, path: Path, label_column):
    """The ``obs`` data frame as a table of annotations (every column a meta, ``label_column`` the
    target); None for an ``obs`` without columns."""
    names = [str(c) for c in obs.columns]
    target = _target(label_column, names, path)
    if not names:
        return None
    frame = obs.reset_index(drop=True)
    frame.columns = names
    for nm in names:   # categorical codes with their categories, booleans as text classes
        if str(frame[nm].dtype) == "category":
            frame[nm] = frame[nm].astype(object)
        elif frame[nm].dtype == bool:
            frame[nm] = frame[nm].astype(str)
    roles = {nm: TARGET if nm == target else META for nm in names}
    table = table_from_frame(frame, np.arange(1, len(frame) + 1), where=f"{path.name} (obs)", name=path.stem,
                             source=str(path), label_column=target, roles=roles, report=[])
    table.set_roles(roles)
    return table


def ready_maps(obsm: dict, n: int, path: Path) -> tuple[dict, list[str]]:
    """The 2-D numeric ``obsm`` entries as maps, and notes on those left out."""
    import scipy.sparse as sp

    maps, notes = {}, []
    for key, value in obsm.items():
        if sp.issparse(value):
            value = value.toarray()
        value = getattr(value, "values", value)
        arr = np.asarray(value)
        if arr.ndim != 2 or arr.shape[0] != n or arr.dtype.kind not in "biuf" or arr.shape[1] < 2:
            notes.append(f"{path.name}: obsm[{key!r}] is not a numeric matrix with one row per cell and at least two "
                         "columns: not offered as a map.")
            continue
        maps[str(key)] = arr.astype(np.float64)
    return maps, notes


def _read_matrix(elem, path: Path, where: str):
    try:
        return read_elem(elem)
    except Exception as exc:  # noqa: BLE001 - a damaged element: say which, not a trace
        raise DataError(f"{path.name}: {where} cannot be read ({type(exc).__name__}: {exc}).") from None


def _as_csr(X):
    import scipy.sparse as sp

    if sp.issparse(X):
        X = sp.csr_array(X, dtype=np.float64)
        X.sum_duplicates()
        return X
    return np.asarray(X, dtype=np.float64)


def _sample_rows(elem, info, m: int, seed: int, path: Path):
    """A random sample of ``m`` rows (sorted), read block by block: memory holds one block and
    the sample."""
    import scipy.sparse as sp

    n = info.shape[0]
    idx = np.sort(np.random.default_rng(seed).choice(n, size=min(m, n), replace=False))
    parts = []
    for start in range(0, n, SCAN_ROWS):
        stop = min(n, start + SCAN_ROWS)
        take = idx[(idx >= start) & (idx < stop)] - start
        if take.size:
            block = row_block(elem, info, start, stop, path)
            parts.append(block[take])
    X = sp.vstack(parts, format="csr") if info.sparse else np.vstack(parts)
    return _as_csr(X), idx


class AnnDataLoader(Loader):
    """Reads AnnData .h5ad files (scanpy, cellxgene)."""

    id = "anndata"
    name = "AnnData (.h5ad)"
    extensions = H5AD_EXTENSIONS
    options = OPTIONS

    @staticmethod
    def _annotations(f, path: Path):
        """(obs data frame or None, var_names or None, obsm dict)."""
        try:
            obs = read_elem(f["obs"]) if "obs" in f else None
            var_names = [str(v) for v in read_elem(f["var"]).index] if "var" in f else None
            obsm = read_elem(f["obsm"]) if "obsm" in f else {}
        except DataError:
            raise
        except Exception as exc:  # noqa: BLE001 - anndata raises many kinds for a damaged element
            raise DataError(f"{path.name}: obs, var or obsm cannot be read as AnnData ({type(exc).__name__}: "
                            f"{exc}).") from None
        return obs, var_names, obsm

    def _load(self, path, layer=None, label_column=None, backed=False, sample_rows=20_000, random_state=0):
        path = Path(path)
        with open_h5(path) as f:
            info = check_structure(f, path, layer)
            elem, where = matrix_elem(f, path, layer)
            obs, var_names, obsm = self._annotations(f, path)
            if backed:
                X, rows = _sample_rows(elem, info, sample_rows, random_state, path)
            else:
                X, rows = _as_csr(_read_matrix(elem, path, where)), None
        check_sparse_structure(X, f"{path.name}: {where}")
        check_finite(X, f"{path.name}: {where}")
        n, d = info.shape
        table = obs_table(obs, path, label_column) if obs is not None else None
        maps, notes = ready_maps(obsm, n, path)
        row_ids = np.asarray(obs.index.astype(str), dtype=object) if obs is not None else np.arange(n)
        kind = f"sparse (CSR), {X.nnz:,} non-zero values" if info.sparse else "dense"
        target = table.current_target if table is not None else None
        report = [(f"Read {X.shape[0]:,} of {n:,} cells" if backed else f"Read {n:,} cells")
                  + f" × {d:,} genes from {path.name} ({where}, {kind}"
                  + (f"; labels: {quote(target)}" if target else "")
                  + (f"; ready maps: {', '.join(maps)}" if maps else "") + ")."]
        if info.encoding == "csc_matrix" and not backed:
            report.append(f"{where} is stored as CSC: converted to CSR.")
        if backed:
            report.append(f"Backed mode: a random sample of {X.shape[0]:,} of {n:,} rows (seed {random_state}) is "
                          "loaded; extension reads every row in chunks.")
        if rows is not None:
            row_ids = row_ids[rows]
            maps = {k: v[rows] for k, v in maps.items()}
        labels = None
        if target is not None:
            col = table.column(target)
            labels = (col if rows is None else col.take(rows)).label_values()
        return Dataset(path.stem, X, labels, var_names, str(path), target, report + notes, table=table,
                       row_ids=row_ids, table_rows=rows, ready_maps=maps, table_features=False)

    def iter_chunks(self, path, chunk_rows: int = 100_000, layer=None, label_column=None, backed=False,
                    sample_rows=20_000, random_state=0, **_):
        """Every row, ``chunk_rows`` at a time, read from the file (never the whole X; a CSC matrix,
        which has no row blocks, is read whole and sliced)."""
        path = Path(path)
        with open_h5(path) as f:
            info = check_structure(f, path, layer)
            elem, where = matrix_elem(f, path, layer)
            if info.encoding == "csc_matrix":
                f.close()
                yield from super().iter_chunks(path, chunk_rows, layer=layer, label_column=label_column)
                return
            obs, var_names, _ = self._annotations(f, path)
            table = obs_table(obs, path, label_column) if obs is not None else None
            target = table.current_target if table is not None else None
            ids = np.asarray(obs.index.astype(str), dtype=object) if obs is not None else np.arange(info.shape[0])
            step = max(1, int(chunk_rows))
            for start in range(0, info.shape[0], step):
                stop = min(info.shape[0], start + step)
                X = _as_csr(row_block(elem, info, start, stop, path))
                check_sparse_structure(X, f"{path.name}: {where}")
                check_finite(X, f"{path.name}: {where}", offset=start)
                rows = np.arange(start, stop)
                labels = table.column(target).take(rows).label_values() if target else None
                report = [f"Reading {path.name} ({where}) in chunks of {step:,} rows."] if start == 0 else []
                yield Dataset(path.stem, X, labels, var_names, str(path), target, report, table=table,
                              row_ids=ids[start:stop], table_rows=rows, table_features=False)


@hookimpl
def register_loaders():
    return [AnnDataLoader()]
