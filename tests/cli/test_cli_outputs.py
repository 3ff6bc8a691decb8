"""The command line's outputs (issue 33): ``--out`` writes the format its extension names (CSV,
TSV, .npy, Parquet, Arrow IPC / Feather) on every path and refuses another extension; outputs carry the data's meta
columns after the row id (``--no-metas`` leaves them out); ``apply`` with a chain that imputes
says the chain fills the gaps."""
from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main


def run(capsys, *argv):
    rc = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def read_csv(path, delimiter=","):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh, delimiter=delimiter))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def penguins():
    return ms.load_data("sample:penguins")


def test_run_outputs_carry_the_meta_columns_after_the_row_id(tmp_path, capsys, penguins):
    rc, _out, err = run(capsys, "run", "pca", "--data", "sample:penguins", "--out", tmp_path / "p.csv", "-q")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "p.csv")
    assert header == ["row_id", "island", "sex", "year", "pca_1", "pca_2", "species"]
    assert [int(r[0]) for r in rows] == list(penguins.row_ids)
    for j, name in enumerate(("island", "sex", "year"), start=1):
        expected = ["" if v is None else str(v) for v in penguins.column_values(name)]
        assert [r[j] for r in rows] == expected
    assert "" in [r[2] for r in rows]  # a missing sex is an empty cell
    ref = ms.get_algorithm("pca", n_components=2).fit(penguins.X).embedding_
    np.testing.assert_allclose(np.array([r[4:6] for r in rows], dtype=float), ref, rtol=1e-12, atol=1e-9)
    # --no-metas: the row id, the result and the labels only
    rc, _out, err = run(capsys, "run", "pca", "--data", "sample:penguins", "--no-metas", "--out", tmp_path / "n.csv",
                        "-q")
    assert rc == 0, err
    assert read_csv(tmp_path / "n.csv")[0] == ["row_id", "pca_1", "pca_2", "species"]
    # iris has no meta column: its output is as before
    rc, _out, err = run(capsys, "run", "pca", "--data", "sample:iris", "--out", tmp_path / "i.csv", "-q")
    assert rc == 0, err
    assert read_csv(tmp_path / "i.csv")[0] == ["row_id", "pca_1", "pca_2", "species"]


def test_apply_outputs_carry_the_meta_columns_too(tmp_path, capsys, penguins):
    rc, _out, err = run(capsys, "run", "pca", "--data", "sample:penguins", "--out", tmp_path / "p.csv",
                        "--save-model", tmp_path / "m.npz", "-q")
    assert rc == 0, err
    rc, _out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", "sample:penguins",
                        "--out", tmp_path / "a.csv", "--chunk-rows", "100", "-q")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "a.csv")
    assert header[:4] == ["row_id", "island", "sex", "year"] and header[4:6] == ["pca_1", "pca_2"]
    fitted = read_csv(tmp_path / "p.csv")[1]  # the run's own output, now in chunks of 100 rows
    assert [r[:4] + r[6:] for r in rows] == [r[:4] + r[6:] for r in fitted]
    np.testing.assert_allclose(np.array([r[4:6] for r in rows], dtype=float),
                               np.array([r[4:6] for r in fitted], dtype=float), rtol=1e-9, atol=1e-9)
    rc, _out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", "sample:penguins", "--no-metas",
                        "--out", tmp_path / "n.csv", "-q")
    assert rc == 0, err
    assert read_csv(tmp_path / "n.csv")[0][:3] == ["row_id", "pca_1", "pca_2"]


@pytest.mark.parametrize("command", ["run", "apply"])
def test_out_writes_the_format_its_extension_names(tmp_path, capsys, penguins, command):
    if command == "apply":
        rc, _out, err = run(capsys, "run", "pca", "--data", "sample:penguins", "--out", tmp_path / "fit.csv",
                            "--save-model", tmp_path / "m.npz", "-q")
        assert rc == 0, err
        head = ["apply", "--model", tmp_path / "m.npz", "--data", "sample:penguins", "--chunk-rows", "100"]
    else:
        head = ["run", "pca", "--data", "sample:penguins"]
    for ext in ("csv", "tsv", "npy", "parquet", "feather", "arrow"):
        rc, _out, err = run(capsys, *head, "--out", tmp_path / f"r.{ext}", "-q")
        assert rc == 0, (ext, err)
    header, rows = read_csv(tmp_path / "r.csv")
    assert read_csv(tmp_path / "r.tsv", "\t") == (header, rows)
    values = np.array([r[4:6] for r in rows], dtype=float)
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy", allow_pickle=False), values)
    assert (tmp_path / "r.parquet").read_bytes()[:4] == b"PAR1"  # a real Parquet file, not CSV text
    frame = pd.read_parquet(tmp_path / "r.parquet")
    assert list(frame.columns) == header
    np.testing.assert_array_equal(frame[["pca_1", "pca_2"]].to_numpy(), values)
    assert frame["row_id"].tolist() == [int(r[0]) for r in rows] and frame["year"].dtype.kind == "i"
    assert [None if pd.isna(v) else v for v in frame["sex"]] == [r[2] or None for r in rows]
    for ext in ("feather", "arrow"):   # Arrow IPC files (Feather v2): the same columns, values and types
        assert (tmp_path / f"r.{ext}").read_bytes()[:6] == b"ARROW1"
        arrow = pd.read_feather(tmp_path / f"r.{ext}")
        pd.testing.assert_frame_equal(arrow, frame)
        assert [str(v) if not pd.isna(v) else "" for v in arrow["island"]] == [r[header.index("island")] for r in rows]
    assert not list(tmp_path.glob(".*partial"))   # written through a temporary file, renamed at the end
    # an extension no result is written in: refused before any work, naming the allowed ones
    rc, _out, err = run(capsys, *head, "--out", tmp_path / "r.xlsx", "-q")
    assert rc != 0 and "'.xlsx' is not a format" in err and ".csv, .tsv, .npy, .parquet" in err
    assert not (tmp_path / "r.xlsx").exists()


def test_apply_with_a_chain_that_imputes_says_the_chain_fills_the_gaps(tmp_path, capsys):
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(rng.normal(size=(40, 3)), columns=["a", "b", "c"])
    frame.loc[3, "b"] = np.nan
    frame.to_csv(tmp_path / "t.csv", index=False)
    rc, _out, err = run(capsys, "run", "pca", "--data", tmp_path / "t.csv", "--prep", "impute",
                        "--save-model", tmp_path / "m.npz", "--out", tmp_path / "r.csv")
    assert rc == 0, err
    rc, _out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", tmp_path / "t.csv",
                        "--out", tmp_path / "a.csv")
    assert rc == 0, err
    assert "1 missing or non-finite value(s) in 1 row(s) kept for the chain's impute step to fill." in err
    assert "refuse NaN" not in err
    assert len(read_csv(tmp_path / "a.csv")[1]) == 40


@pytest.mark.slow
def test_parquet_of_apply_agrees_with_the_dask_path(tmp_path, capsys):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    rng = np.random.default_rng(1)
    pd.DataFrame(rng.normal(size=(3000, 4)), columns=list("abcd")).to_parquet(tmp_path / "d.parquet")
    rc, _out, err = run(capsys, "run", "pca", "--data", tmp_path / "d.parquet", "--out", tmp_path / "r.csv",
                        "--save-model", tmp_path / "m.npz", "-q")
    assert rc == 0, err
    rc, _out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", tmp_path / "d.parquet",
                        "--out", tmp_path / "plain.parquet", "--chunk-rows", "1000", "-q")
    assert rc == 0, err
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        rc, _out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", tmp_path / "d.parquet",
                            "--dask", client.scheduler.address, "--out", tmp_path / "dask.parquet", "-q")
        assert rc == 0, err
    finally:
        client.close()
        cluster.close()
    plain, dask = pd.read_parquet(tmp_path / "plain.parquet"), pd.read_parquet(tmp_path / "dask.parquet")
    assert list(plain.columns) == list(dask.columns) == ["row_id", "pca_1", "pca_2"]
    # the results agree; the row ids count from 1 in the file's table, from 0 over Dask's partitions
    np.testing.assert_allclose(plain[["pca_1", "pca_2"]].to_numpy(), dask[["pca_1", "pca_2"]].to_numpy(),
                               rtol=1e-12, atol=1e-12)
    np.testing.assert_array_equal(np.diff(plain["row_id"].to_numpy()), 1)


def test_score_and_compare_clusterings_tables_follow_the_extension_too(tmp_path, capsys):
    rc, _out, err = run(capsys, "score", "perceptron", "--data", "sample:iris", "--out", tmp_path / "s.csv", "-q")
    assert rc == 0, err
    rc, _out, err = run(capsys, "score", "perceptron", "--data", "sample:iris", "--out", tmp_path / "s.parquet", "-q")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "s.csv")
    assert (tmp_path / "s.parquet").read_bytes()[:4] == b"PAR1"
    frame = pd.read_parquet(tmp_path / "s.parquet")
    assert list(frame.columns) == header and frame.iloc[0, 0] == rows[0][0] == "perceptron"
    # the table has text: a .npy is refused in one sentence (no '.;'), and nothing is written
    rc, _out, err = run(capsys, "score", "perceptron", "--data", "sample:iris", "--out", tmp_path / "s.npy", "-q")
    assert rc != 0 and "give a .csv, .tsv, .parquet or .feather file; nothing was written." in err and ".;" not in err
    assert not (tmp_path / "s.npy").exists()
    rc, _out, err = run(capsys, "compare-clusterings", "kmeans", "--data", "sample:iris", "--out", tmp_path / "c.xlsx",
                        "-q")
    assert rc != 0 and "'.xlsx' is not a format" in err and not (tmp_path / "c.xlsx").exists()
