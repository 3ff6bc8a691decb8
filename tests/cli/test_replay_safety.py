"""``replay`` cannot be turned against its inputs (issue 29): an output that would be an input
file — the same path, another spelling, a symbolic link or a hard link — is refused before
anything is written; a column that was numeric at fit time and holds text in the new file is
refused naming the column, the line and the cell, by ``replay`` and by ``apply``."""
from __future__ import annotations

import csv
import os

import numpy as np
import pytest
from cli_helpers import save_pca_model

from manifold_studio.reproduce.replay import replay
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError, WriteError
from manifold_studio.project.project_file import save_project
from manifold_studio.session.model import Session


def _write(path, X, columns=("a", "b", "c")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(columns)
        for row in X:
            w.writerow(row)
    return path


@pytest.fixture
def project(tmp_path):
    rng = np.random.default_rng(0)
    s = Session()
    s.load(str(_write(tmp_path / "train.csv", rng.normal(size=(40, 3)).round(4).tolist())))
    s.run("pca", n_components=2)
    return save_project(s, tmp_path / "p.msproj")


def _spellings(tmp_path):
    """(data path to pass, --out-dir) pairs where run1_pca.csv in the folder IS the data file."""
    out = tmp_path / "out"
    out.mkdir()
    target = out / "run1_pca.csv"
    rng = np.random.default_rng(1)
    _write(target, rng.normal(size=(10, 3)).round(4).tolist())
    (tmp_path / "link.csv").symlink_to(target)
    os.link(target, tmp_path / "hard.csv")
    (tmp_path / "outlink").symlink_to(out)
    return target, [
        (target, out),                                              # the same path
        (tmp_path / "out" / ".." / "out" / "run1_pca.csv", out),   # another spelling
        (target, tmp_path / "outlink"),                             # the folder through a link
        (tmp_path / "link.csv", out),                               # a symbolic link to the output
        (tmp_path / "hard.csv", out),                               # a hard link to the output
    ]


def test_replay_refuses_an_output_that_is_its_input_in_every_spelling(project, tmp_path, capsys):
    target, cases = _spellings(tmp_path)
    before = target.read_bytes()
    for data, out_dir in cases:
        with pytest.raises(WriteError, match="is the input file"):
            replay(project, data, out_dir)
        assert cli_main(["replay", str(project), "--data", str(data), "--out-dir", str(out_dir)]) == 2
        err = capsys.readouterr().err
        assert "is the input file" in err and "Nothing was written" in err, (data, out_dir, err)
        assert target.read_bytes() == before
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["run1_pca.csv"]


def test_replay_refuses_to_overwrite_the_project_file(tmp_path):
    rng = np.random.default_rng(0)
    s = Session()
    s.load(str(_write(tmp_path / "train.csv", rng.normal(size=(30, 3)).round(4).tolist())))
    s.run("pca", n_components=2)
    path = save_project(s, tmp_path / "run1_pca.csv")   # a project saved under an output's name
    new = _write(tmp_path / "new.csv", rng.normal(size=(5, 3)).round(4).tolist())
    before = path.read_bytes()
    with pytest.raises(WriteError, match="is the input file"):
        replay(path, new, tmp_path)
    assert path.read_bytes() == before


def test_replay_into_another_folder_still_writes(project, tmp_path):
    target, _ = _spellings(tmp_path)
    result = replay(project, target, tmp_path / "elsewhere")
    assert [p.name for _, p in result.outputs] == ["run1_pca.csv"]
    assert result.n_rows == 10


# -- types: a numeric column with text cells is refused, naming the column, the line and the cell --

def _train_and_bad(tmp_path, n_text: int, n_rows: int = 30):
    rng = np.random.default_rng(3)
    train = _write(tmp_path / "train.csv", rng.normal(size=(40, 3)).round(4).tolist())
    rows = rng.normal(size=(n_rows, 3)).round(4).tolist()
    for k in range(n_text):
        rows[4 + 3 * k][1] = f"oops{k}"   # column b, file lines 6, 9, ...
    return train, _write(tmp_path / "bad.csv", rows)


def _chained_run(s, chain):
    """A PCA run behind ``chain`` (as the Preparation dock makes it), fitted."""
    run = s.create_run("pca", {"n_components": 2}, chain=chain)
    s.start_run(run.id)
    return s.complete_run(run.id, s.fit_task(run)())


@pytest.mark.parametrize("n_text", [6, 1])   # read as categorical (6 of 30), or as numbers with a stray cell
@pytest.mark.parametrize("chain", [None, [("standardize", {})]])
def test_replay_refuses_text_in_a_numeric_column_naming_line_and_cell(tmp_path, n_text, chain):
    train, bad = _train_and_bad(tmp_path, n_text)
    s = Session()
    s.load(str(train))
    run = _chained_run(s, chain)
    project = save_project(s, tmp_path / "p.msproj")
    with pytest.raises(DataError) as err:
        replay(project, bad, tmp_path / "out")
    text = str(err.value)
    assert "bad.csv" in text and "'b'" in text and "numeric" in text
    assert "'oops0'" in text and "line 6" in text, text
    assert not (tmp_path / "out").exists()


def test_replay_with_an_impute_step_reads_the_text_as_missing_with_a_note(tmp_path):
    train, bad = _train_and_bad(tmp_path, 6)
    s = Session()
    s.load(str(train))
    run = _chained_run(s, [("impute", {"strategy": "mean"}), ("standardize", {})])
    project = save_project(s, tmp_path / "p.msproj")
    result = replay(project, bad, tmp_path / "out")
    assert any("'b'" in n and "'oops0' on line 6" in n and "impute" in n for n in result.notes), result.notes
    got = np.loadtxt(result.outputs[0][1], delimiter=",", skiprows=1)[:, 1:]
    # the reference: the text cells missing, filled with the training means, then the fitted steps
    import manifold_studio as ms

    raw = np.genfromtxt(bad, delimiter=",", skip_header=1)     # text -> nan
    np.testing.assert_allclose(got, run.estimator.extend(
        __import__("pandas").DataFrame(raw, columns=["a", "b", "c"])), atol=1e-12)
    assert np.isnan(raw[:, 1]).sum() == 6 and not np.isnan(got).any()
    del ms


def test_apply_of_a_pipeline_refuses_text_in_a_numeric_column(tmp_path, capsys):
    train, bad = _train_and_bad(tmp_path, 6)
    model, out = tmp_path / "m.npz", tmp_path / "x.csv"
    save_pca_model(tmp_path, train, model, "standardize")
    capsys.readouterr()
    assert cli_main(["apply", "--model", str(model), "--data", str(bad), "--out", str(out), "-q"]) == 2
    err = capsys.readouterr().err
    assert "Column 'b' was numeric" in err and "line 6" in err and "'oops0'" in err, err
    assert not out.exists()
    # with an impute step the text cells are missing values for it to fill
    save_pca_model(tmp_path, train, model, "impute", "standardize")
    assert cli_main(["apply", "--model", str(model), "--data", str(bad), "--out", str(out), "-q"]) == 0
    assert len(out.read_text().splitlines()) == 31


def test_a_forged_run_id_cannot_lead_out_of_the_folder(tmp_path):
    rng = np.random.default_rng(0)
    s = Session()
    s.load(str(_write(tmp_path / "train.csv", rng.normal(size=(20, 3)).round(4).tolist())))
    run = s.run("pca", n_components=2)
    run.id = "1/../../escaped"           # as a tampered project could hold it
    out = tmp_path / "a" / "b"
    result = replay(s, tmp_path / "train.csv", out)
    written = [p for _rid, p in result.outputs]
    assert written and all(p.parent == out for p in written)     # the name is made safe: no path
    assert [p.name for p in tmp_path.rglob("*escaped*")] == ["run1_______escaped_pca.csv"]
