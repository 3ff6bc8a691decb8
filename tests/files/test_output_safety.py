"""Outputs and messages (issue 18, item 5, part): an output that resolves to an input is refused;
text cells that a spreadsheet would run as formulas are escaped in CSV/TSV exports (numbers
never), with a way to turn it off; CR-only CSV files read; --sample-seed, Requires-Dist and
csv-module problems give one clear line naming the option, file or field."""
import csv
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError
from manifold_studio.session.model import Session
from manifold_studio.tables.export import export_dataset_csv, rows_as_tsv, write_table_csv
from manifold_studio.tables.result_table import ResultWriter, escape_formula

EVIL = "=cmd|' /C calc'!A0"


@pytest.mark.parametrize("text, expected", [
    (EVIL, "'" + EVIL), ("+SUM(A1)", "'+SUM(A1)"), ("-A1*2", "'-A1*2"), ("@SUM(A1:A2)", "'@SUM(A1:A2)"),
    ("\t=1", "'\t=1"), ("\r=1", "'\r=1"),
    ("-1.5", "-1.5"), ("+3", "+3"), ("-1e-300", "-1e-300"), ("-inf", "-inf"),  # numbers are left alone
    ("setosa", "setosa"), ("a=b", "a=b"), ("", ""), ("'quoted", "'quoted"),
])
def test_escape_formula(text, expected):
    assert escape_formula(text) == expected


def _rows(path):
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.reader(fh))


def test_table_export_escapes_labels_and_headers_not_numbers(tmp_path):
    header = ["x", "@label"]
    columns = [np.array([-1.5, 2.0, -3.0]), np.array([EVIL, "-1.5", "ok"], dtype=object)]
    write_table_csv(tmp_path / "t.csv", header, columns)
    assert _rows(tmp_path / "t.csv") == [["x", "'@label"], ["-1.5", "'" + EVIL], ["2.0", "-1.5"], ["-3.0", "ok"]]
    write_table_csv(tmp_path / "raw.csv", header, columns, escape_formulas=False)
    assert _rows(tmp_path / "raw.csv") == [["x", "@label"], ["-1.5", EVIL], ["2.0", "-1.5"], ["-3.0", "ok"]]
    tsv = rows_as_tsv(header, columns, [0])
    assert tsv == f"x\t'@label\n-1.5\t'{EVIL}\n"
    assert rows_as_tsv(header, columns, [0], escape_formulas=False) == f"x\t@label\n-1.5\t{EVIL}\n"


def test_the_window_export_of_a_data_set_escapes(tmp_path):
    s = Session()
    ds = ms.load_data("sample:iris")
    ds.labels = np.where(np.arange(150) == 0, "=HYPERLINK(\"http://x\")", ds.labels.astype(str))
    s.add_dataset(ds)
    export_dataset_csv(s, ds.name, tmp_path / "iris.csv")
    rows = _rows(tmp_path / "iris.csv")
    label_col = rows[0].index(ds.label_name or "label")
    assert rows[1][label_col] == "'=HYPERLINK(\"http://x\")" and rows[2][label_col] == ds.labels[1]
    export_dataset_csv(s, ds.name, tmp_path / "raw.csv", escape_formulas=False)
    assert _rows(tmp_path / "raw.csv")[1][label_col] == "=HYPERLINK(\"http://x\")"


def test_result_writer_escapes_labels(tmp_path):
    for escape, cell in ((True, "'" + EVIL), (False, EVIL)):
        with ResultWriter(str(tmp_path / "r.csv"), "pca", "embedding", "-name", escape) as w:
            w.write(np.array([[-1.5, 2.0]]), np.array([EVIL]))
            w.commit()
        assert _rows(tmp_path / "r.csv") == [["pca_1", "pca_2", "'-name" if escape else "-name"], ["-1.5", "2.0", cell]]


@pytest.fixture
def labelled(tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(f"x,y,name\n1,2,\"{EVIL}\"\n3,4,-1.5\n5,7,b\n2,2,@x\n", encoding="utf-8")
    return path


def test_cli_run_and_apply_escape_unless_told_not_to(labelled, tmp_path, capsys):
    assert cli_main(["run", "kmeans", "--data", str(labelled), "--label-column", "name", "-p", "n_clusters=2",
                     "--out", str(tmp_path / "o.csv"), "--save-model", str(tmp_path / "m.npz"), "-q"]) == 0
    assert [r[-1] for r in _rows(tmp_path / "o.csv")] == ["name", "'" + EVIL, "-1.5", "b", "'@x"]
    assert cli_main(["run", "kmeans", "--data", str(labelled), "--label-column", "name", "-p", "n_clusters=2",
                     "--out", str(tmp_path / "raw.csv"), "--no-escape-formulas", "-q"]) == 0
    assert [r[-1] for r in _rows(tmp_path / "raw.csv")] == ["name", EVIL, "-1.5", "b", "@x"]
    assert cli_main(["apply", "--model", str(tmp_path / "m.npz"), "--data", str(labelled), "--label-column", "name",
                     "--out", str(tmp_path / "a.csv"), "-q"]) == 0
    assert [r[-1] for r in _rows(tmp_path / "a.csv")] == ["name", "'" + EVIL, "-1.5", "b", "'@x"]
    assert cli_main(["apply", "--model", str(tmp_path / "m.npz"), "--data", str(labelled), "--label-column", "name",
                     "--out", str(tmp_path / "b.csv"), "--no-escape-formulas", "-q"]) == 0
    assert [r[-1] for r in _rows(tmp_path / "b.csv")] == ["name", EVIL, "-1.5", "b", "@x"]


# -- outputs that are inputs -----------------------------------------------------------------------
def _error(capsys):
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    return err


@pytest.mark.parametrize("make_out", [
    lambda d: str(d),                                     # the same path
    lambda d: str(d.parent / "." / d.name),               # another spelling
    lambda d: (os.symlink(d, d.parent / "link.csv"), str(d.parent / "link.csv"))[1],   # a symbolic link
    lambda d: (os.link(d, d.parent / "hard.csv"), str(d.parent / "hard.csv"))[1],      # a hard link
])
def test_run_refuses_an_output_that_is_the_data(labelled, make_out, capsys):
    before = labelled.read_bytes()
    out = make_out(labelled)
    assert cli_main(["run", "pca", "--data", str(labelled), "--out", out]) == 2
    assert _error(capsys).endswith(f"--out {out} is the input file of --data: writing the result would replace it; "
                                   "choose another output file")
    assert labelled.read_bytes() == before


def test_run_and_apply_refuse_every_output_on_an_input(labelled, tmp_path, capsys):
    d = str(labelled)
    cases = [
        (["run", "pca", "--data", d, "--extend", d, "--extend-out", d, "--out", str(tmp_path / "o.csv")],
         f"--extend-out {d} is the input file of --data"),
        (["run", "pca", "--data", "sample:iris", "--extend", d, "--extend-out", str(tmp_path / "e.csv"), "--out", d],
         f"--out {d} is the input file of --extend"),
        (["run", "pca", "--data", d, "--out", str(tmp_path / "o.csv"), "--save-model", d],
         f"--save-model {d} is the input file of --data"),
    ]
    for argv, message in cases:
        assert cli_main(argv) == 2
        assert message in _error(capsys)
    assert cli_main(["run", "pca", "--data", d, "--out", str(tmp_path / "o.csv"), "--save-model",
                     str(tmp_path / "m.npz"), "-q"]) == 0
    capsys.readouterr()  # its data notes
    model = str(tmp_path / "m.npz")
    before = (tmp_path / "m.npz").read_bytes()
    for argv, message in (
            (["apply", "--model", model, "--data", d, "--out", model], f"--out {model} is the input file of --model"),
            (["apply", "--model", model, "--data", d, "--out", d], f"--out {d} is the input file of --data"),
            (["apply", "--model", model, "--data", str(tmp_path / "*.csv"), "--out", str(tmp_path / "o.csv")],
             f"--out {tmp_path / 'o.csv'} is the input file of --data")):  # a part of a glob
        assert cli_main(argv) == 2
        assert message in _error(capsys)
    assert (tmp_path / "m.npz").read_bytes() == before


# -- messages ---------------------------------------------------------------------------------------
def test_sample_seed_names_the_option(capsys):
    assert cli_main(["run", "pca", "--data", "sample:iris", "--fit-sample", "20", "--sample-seed", "-1",
                     "--out", "-"]) == 2
    assert _error(capsys) == ("manifold-studio: error: argument --sample-seed: expected a whole number from 0 to "
                              "4294967295, got -1 (see 'manifold-studio run --help')")
    assert cli_main(["run", "pca", "--data", "sample:iris", "--fit-sample", "20", "--sample-seed", "x",
                     "--out", "-"]) == 2
    assert "argument --sample-seed: expected a whole number from 0 to 4294967295, got 'x'" in _error(capsys)


def test_mac_line_ends_read_like_any_other(tmp_path):
    (tmp_path / "unix.csv").write_bytes(b"a,b,name\n1,2,x\n3,4,y\n5,6,x\n")
    (tmp_path / "mac.csv").write_bytes(b"a,b,name\r1,2,x\r3,4,y\r5,6,x\r")
    unix, mac = (ms.load_data(tmp_path / f, label_column="name") for f in ("unix.csv", "mac.csv"))
    np.testing.assert_array_equal(mac.X, unix.X)
    assert list(mac.labels) == list(unix.labels) and mac.feature_names == ["a", "b"]
    chunks = list(ms._host().loader_for(str(tmp_path / "mac.csv")).iter_chunks(tmp_path / "mac.csv", 2))
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), unix.X)


def test_malformed_csv_never_shows_the_csv_module_text(tmp_path):
    path = tmp_path / "q.csv"
    path.write_bytes(b'a,b\n1,"2\x00"\n')
    with pytest.raises(DataError) as info:
        ms.load_data(path)
    message = str(info.value)
    assert "q.csv" in message and "line contains NUL" not in message and "universal-newline" not in message


def test_an_invalid_requires_dist_names_the_wheel_and_field(tmp_path, monkeypatch):
    from manifold_studio.plugins import host as plugins
    from manifold_studio.plugins import manager as pm
    from manifold_studio.plugins.selfcheck import TEMPLATE_NAME, build_pure_wheel

    monkeypatch.setenv(pm.PLUGIN_DIR_ENV, str(tmp_path / "plugins"))
    plugins.reset_host(None)
    try:
        template = Path(__file__).resolve().parents[2] / "examples" / TEMPLATE_NAME
        wheel = build_pure_wheel(template, tmp_path / "dist", requires=["numpy >=>= 1 ;; junk"])
        with pytest.raises(pm.PluginInstallError) as info:
            pm.install_wheel(wheel)
    finally:
        plugins.reset_host(None)
    assert str(info.value) == (f"{wheel.name}: the METADATA field Requires-Dist 'numpy >=>= 1 ;; junk' is not a "
                               "valid requirement (expected e.g. 'numpy>=1.24'); nothing was installed")
    assert not any(p for p in (tmp_path / "plugins").glob("*") if not p.name.startswith("."))


def test_cli_messages_are_one_bounded_line(tmp_path):
    from manifold_studio.cli.console import MAX_MESSAGE, one_line

    assert one_line("a\nb\tc") == "a b c"
    assert len(one_line("x" * 5000)) == MAX_MESSAGE and one_line("x" * 5000).endswith("...")
    res = subprocess.run([sys.executable, "-m", "manifold_studio", "run", "pca", "--data", "sample:iris",
                          "-p", "n_components=" + "9" * 3000, "--out", "-"], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert len(res.stderr.strip()) <= len("manifold-studio: error: ") + MAX_MESSAGE


def test_dask_csv_output_escapes_labels(tmp_path):
    da = pytest.importorskip("dask.array")
    from manifold_studio.extend.dask_extend import write_output

    result = da.from_array(np.array([[1.0, -2.0], [3.0, 4.0]]), chunks=1)
    labels = da.from_array(np.array([EVIL, "-1.5"], dtype=object), chunks=1)
    write_output(result, str(tmp_path / "d.csv"), "pca", "embedding", labels, "@label")
    assert _rows(tmp_path / "d.csv") == [["pca_1", "pca_2", "'@label"], ["1.0", "-2.0", "'" + EVIL], ["3.0", "4.0", "-1.5"]]
    write_output(result, str(tmp_path / "raw.csv"), "pca", "embedding", labels, "@label", escape_formulas=False)
    assert _rows(tmp_path / "raw.csv") == [["pca_1", "pca_2", "@label"], ["1.0", "-2.0", EVIL], ["3.0", "4.0", "-1.5"]]
