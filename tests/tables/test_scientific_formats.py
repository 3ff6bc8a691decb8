"""10x Genomics folders and Arrow IPC / Feather files (issue 32, item 3), against scipy and pyarrow."""
import gzip
import shutil

import numpy as np
import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp

import manifold_studio as ms
from manifold_studio.errors import DataError


def write_tenx(folder, counts, genes, barcodes, gz=True):
    """A Cell Ranger 3 folder: genes × cells matrix.mtx, features.tsv, barcodes.tsv (gzipped)."""
    folder.mkdir()
    scipy.io.mmwrite(str(folder / "matrix.mtx"), sp.coo_matrix(counts.T))
    (folder / "features.tsv").write_text("".join(f"ENSG{j:05d}\t{g}\tGene Expression\n" for j, g in enumerate(genes)))
    (folder / "barcodes.tsv").write_text("".join(f"{b}\n" for b in barcodes))
    if gz:
        for name in ("matrix.mtx", "features.tsv", "barcodes.tsv"):
            with open(folder / name, "rb") as src, gzip.open(folder / f"{name}.gz", "wb") as dst:
                shutil.copyfileobj(src, dst)
            (folder / name).unlink()
    return folder


@pytest.fixture
def counts():
    rng = np.random.default_rng(1)
    c = rng.poisson(0.6, size=(40, 12)).astype(np.float64)
    return c


def test_tenx_folder(tmp_path, counts):
    genes = [f"G{j}" for j in range(12)]
    genes[5] = genes[7] = "MT-CO1"   # repeated symbols, as in real 10x data
    barcodes = [f"AAAC{i:04d}-1" for i in range(40)]
    folder = write_tenx(tmp_path / "filtered_feature_bc_matrix", counts, genes, barcodes)
    ds = ms.load_data(str(folder))
    assert ds.is_sparse and ds.X.format == "csr"
    np.testing.assert_array_equal(ds.X.toarray(), counts)
    assert list(ds.row_ids) == barcodes
    assert ds.feature_names[5] == "MT-CO1" and ds.feature_names[7] == "MT-CO1-1"
    assert any("made unique" in r for r in ds.report)
    ids = ms.load_data(str(folder), var_names="gene_ids")
    assert ids.feature_names[:2] == ["ENSG00000", "ENSG00001"]


def test_tenx_plain_text_files(tmp_path, counts):
    folder = write_tenx(tmp_path / "plain", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(40)], gz=False)
    np.testing.assert_array_equal(ms.load_data(str(folder)).X.toarray(), counts)


@pytest.mark.parametrize("gone", ["matrix.mtx.gz", "features.tsv.gz", "barcodes.tsv.gz"])
def test_tenx_folder_missing_a_file(tmp_path, counts, gone):
    folder = write_tenx(tmp_path / "run1", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(40)])
    (folder / gone).unlink()
    with pytest.raises(DataError, match=f"The 10x folder run1 lacks {gone}"):
        ms.load_data(str(folder))


def test_a_cell_ranger_2_folder_missing_genes_tsv_names_it(tmp_path, counts):
    folder = write_tenx(tmp_path / "v2", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(40)], gz=False)
    (folder / "features.tsv").unlink()   # Cell Ranger 2 calls it genes.tsv: both names are said
    with pytest.raises(DataError, match=r"v2 lacks features.tsv.gz \(found: matrix.mtx, barcodes.tsv\); .*"
                                        r"or, from Cell Ranger 2, matrix.mtx, genes.tsv and barcodes.tsv"):
        ms.load_data(str(folder))


def test_tenx_explicit_nan(tmp_path, counts):
    counts = counts.copy()
    counts[3, 4] = np.nan
    folder = write_tenx(tmp_path / "nan", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(40)])
    with pytest.raises(DataError, match=r"holds 1 stored \(explicit\) NaN or infinite values, the first in row 3"):
        ms.load_data(str(folder))


def test_tenx_counts_that_do_not_match(tmp_path, counts):
    folder = write_tenx(tmp_path / "bad", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(39)])
    with pytest.raises(DataError, match="12 genes × 40 cells but features.tsv.gz lists 12 genes and "
                                        "barcodes.tsv.gz 39 barcodes"):
        ms.load_data(str(folder))


@pytest.mark.parametrize("suffix", [".feather", ".arrow"])
def test_arrow_and_feather(tmp_path, suffix):
    pa = pytest.importorskip("pyarrow")
    frame = pd.DataFrame({"a": np.arange(6, dtype=float), "b": np.linspace(0, 1, 6),
                          "kind": pd.Categorical(list("xyxyxy")), "note": list("uvwxyz")})
    path = tmp_path / f"t{suffix}"
    frame.to_feather(path)
    ds = ms.load_data(str(path), label_column="kind")
    np.testing.assert_array_equal(ds.X, frame[["a", "b"]].to_numpy())
    assert list(ds.labels) == list("xyxyxy") and ds.feature_names == ["a", "b"]
    stream = tmp_path / "s.arrows"   # the IPC stream format
    table = pa.Table.from_pandas(frame)
    with pa.OSFile(str(stream), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    np.testing.assert_array_equal(ms.load_data(str(stream)).X, ds.X)


def test_damaged_feather(tmp_path):
    path = tmp_path / "broken.feather"
    path.write_bytes(b"ARROW1\x00\x00 not really")
    with pytest.raises(DataError, match="broken.feather is not a readable Arrow IPC / Feather file"):
        ms.load_data(str(path))


def test_apply_extends_a_model_to_a_10x_folder(tmp_path, counts):
    from manifold_studio.cli.main import main

    folder = write_tenx(tmp_path / "run2", counts, [f"G{j}" for j in range(12)], [f"b{i}" for i in range(40)])
    model, out = tmp_path / "m.npz", tmp_path / "applied.csv"
    assert main(["run", "pca", "--data", str(folder), "--save-model", str(model), "--out", str(tmp_path / "r.csv"),
                 "-q"]) == 0
    assert main(["apply", "--model", str(model), "--data", str(folder), "--out", str(out), "-q"]) == 0   # not "no parts"
    got = np.loadtxt(out, delimiter=",", skiprows=1, usecols=(1, 2))
    np.testing.assert_allclose(got, ms.load_model(model).extend(ms.load_data(str(folder)).X), rtol=1e-12, atol=1e-12)
    assert open(out).read().splitlines()[1].startswith("b0,")   # the barcodes are the row ids
    assert main(["apply", "--model", str(model), "--data", str(folder), "--out", str(out), "--chunk-rows", "15",
                 "-q"]) == 0
    assert [line.split(",")[0] for line in open(out).read().splitlines()[1:]] == [f"b{i}" for i in range(40)]
    np.save(tmp_path / "plain.npy", counts)   # no names: the rows are numbered across the chunks
    assert main(["apply", "--model", str(model), "--data", str(tmp_path / "plain.npy"), "--out", str(out),
                 "--chunk-rows", "15", "-q"]) == 0
    assert [line.split(",")[0] for line in open(out).read().splitlines()[1:]] == [str(i) for i in range(40)]
