"""10x Genomics folder loader plugin (Cell Ranger's ``filtered_feature_bc_matrix``).

A folder holding ``matrix.mtx.gz`` (genes × cells counts, Matrix Market), ``features.tsv.gz``
(gene id, gene symbol, feature type; ``genes.tsv`` in Cell Ranger 2) and ``barcodes.tsv.gz`` (one
cell barcode per line), gzipped or not, is read as one sparse data set: one row per cell (CSR,
never densified), the gene symbols (or ids, option ``var_names``) as feature names — repeated
symbols made unique as anndata does (``-1``, ``-2`` appended) — and the barcodes as row ids. A
folder missing one of the three files is refused naming it; explicit NaN values are refused.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Choice
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.fileio.anndata_io import check_finite
from manifold_studio.hookspecs import hookimpl
from manifold_studio_builtins.sparse_loader import read_mtx, sparse_report

#: the three files, each with the names it may have (first found wins)
PARTS = {"matrix": ("matrix.mtx.gz", "matrix.mtx"),
         "features": ("features.tsv.gz", "features.tsv", "genes.tsv.gz", "genes.tsv"),
         "barcodes": ("barcodes.tsv.gz", "barcodes.tsv")}


def tenx_files(folder: Path) -> dict[str, Path | None]:
    return {part: next((folder / n for n in names if (folder / n).is_file()), None) for part, names in PARTS.items()}


def _lines(path: Path) -> list[list[str]]:
    try:
        opener = gzip.open if path.name.endswith(".gz") else open
        with opener(path, "rt", encoding="utf-8") as fh:
            return [line.rstrip("\r\n").split("\t") for line in fh if line.strip()]
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise DataError(f"{path.parent.name}/{path.name} cannot be read as tab-separated text: {exc}") from None


def make_unique(names: list[str]) -> tuple[list[str], int]:
    """Repeated names get ``-1``, ``-2``, ... appended (anndata's ``var_names_make_unique``)."""
    seen: dict[str, int] = {}
    taken = set(names)
    out, renamed = [], 0
    for nm in names:
        if nm in seen:
            k = seen[nm]
            while f"{nm}-{k}" in taken:
                k += 1
            seen[nm] = k + 1
            out.append(f"{nm}-{k}")
            taken.add(out[-1])
            renamed += 1
        else:
            seen[nm] = 1
            out.append(nm)
    return out, renamed


class TenxLoader(Loader):
    """Reads a 10x Genomics folder (matrix.mtx.gz, features.tsv.gz, barcodes.tsv.gz)."""

    id = "tenx"
    name = "10x Genomics folder"
    extensions = ()
    options = (Choice("var_names", "gene_symbols", "Feature names: the gene symbols (second column of "
                      "features.tsv) or the gene ids (first column).", choices=("gene_symbols", "gene_ids")),)

    def can_load(self, path: Path) -> bool:
        path = Path(path)
        return path.is_dir() and any(f is not None for f in tenx_files(path).values())

    def _load(self, path, var_names="gene_symbols") -> Dataset:
        folder = Path(path)
        files = tenx_files(folder)
        missing = [PARTS[p][0] for p, f in files.items() if f is None]
        if missing:
            found = [f.name for f in files.values() if f is not None]
            raise DataError(f"The 10x folder {folder.name} lacks {', '.join(missing)} (found: {', '.join(found)}); "
                            "a 10x folder holds matrix.mtx.gz, features.tsv.gz and barcodes.tsv.gz (or, from "
                            "Cell Ranger 2, matrix.mtx, genes.tsv and barcodes.tsv, gzipped or not).")
        genes = _lines(files["features"])
        barcodes = [row[0] for row in _lines(files["barcodes"])]
        counts = read_mtx(files["matrix"]).X
        if not hasattr(counts, "tocsr"):
            raise DataError(f"{folder.name}/{files['matrix'].name} is a dense (array) Matrix Market file; a 10x "
                            "matrix is sparse (coordinate).")
        if counts.shape != (len(genes), len(barcodes)):
            raise DataError(f"{folder.name}: {files['matrix'].name} is {counts.shape[0]:,} genes × {counts.shape[1]:,} "
                            f"cells but {files['features'].name} lists {len(genes):,} genes and "
                            f"{files['barcodes'].name} {len(barcodes):,} barcodes.")
        X = counts.T.tocsr()
        check_finite(X, f"{folder.name}/{files['matrix'].name}")
        column = 1 if var_names == "gene_symbols" and all(len(g) > 1 for g in genes) else 0
        names, renamed = make_unique([g[column] for g in genes])
        report = [f"Read the 10x folder {folder.name}: {X.shape[0]:,} cells × {X.shape[1]:,} genes.",
                  *sparse_report(X, files["matrix"].name)]
        if renamed:
            report.append(f"{renamed} repeated gene name(s) made unique by appending -1, -2, ... (as anndata does).")
        return Dataset(folder.name, X, feature_names=names, source=str(folder), report=report,
                       row_ids=np.asarray(barcodes, dtype=object))


@hookimpl
def register_loaders():
    return [TenxLoader()]
