"""apply with a model fitted without a chain (issue 29): a column that was numeric at fit time
and holds text in the new file is refused naming the column, the line and the cell; never
recoded into category codes, nothing written."""
import numpy as np
import pytest
from cli_helpers import save_pca_model

from manifold_studio.cli.main import main
def test_apply_of_a_bare_model_refuses_text_in_a_numeric_column(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).round(3)
    train = tmp_path / "train.csv"
    train.write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    model = tmp_path / "m.msmodel"
    save_pca_model(tmp_path, train, model)
    rows = [",".join(map(str, r)) for r in X]
    for i in (3, 7, 9, 12, 15, 20, 22, 30):
        parts = rows[i].split(","); parts[1] = "n/a-text" if i % 2 else "bad"; rows[i] = ",".join(parts)
    new = tmp_path / "new.csv"
    new.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    out = tmp_path / "o.csv"
    code = main(["apply", "--model", str(model), "--data", str(new), "--out", str(out), "--in-process"])
    err = capsys.readouterr().err
    assert code != 0 and "Column 'b' was numeric when the model was fitted" in err and "line" in err
    assert not out.exists()


def _stray_files(tmp_path, lines=(3, 7)):
    """train.csv (40 x 3 numbers) and new.csv: the same rows with text in column b on ``lines``
    (of 40: still read as a numeric column, those cells missing)."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(40, 3)).round(3)
    rows = [",".join(map(str, r)) for r in X]
    train = tmp_path / "train.csv"
    train.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    for i in lines:
        parts = rows[i].split(","); parts[1] = f"oops{i}"; rows[i] = ",".join(parts)
    new = tmp_path / "new.csv"
    new.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    return X, train, new


@pytest.mark.parametrize("prep", [[], ["standardize"]])
def test_apply_refuses_a_numeric_column_with_stray_text_cells_as_replay_does(tmp_path, capsys, prep):
    """A few text cells in a column numeric at fit time (the column is still read as numbers):
    refused naming the column, the line and the cell — not read as missing with its rows dropped —
    with the message replay gives for the same file."""
    from manifold_studio.errors import DataError
    from manifold_studio.project.project_file import save_project
    from manifold_studio.reproduce.replay import replay
    from manifold_studio.session.model import Session

    _X, train, new = _stray_files(tmp_path)
    model, out = tmp_path / "m.msmodel", tmp_path / "o.csv"
    save_pca_model(tmp_path, train, model, *prep)
    capsys.readouterr()
    code = main(["apply", "--model", str(model), "--data", str(new), "--out", str(out), "--in-process"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists(), err
    expected = ("new.csv: Column 'b' was numeric when the model was fitted, but in the new data some of its "
                "cells are not numbers: on line 5 it holds 'oops3' (lines 5, 9).")
    assert expected in err, err
    assert "dropped" not in err
    # replay of a project with the same fit refuses the same file with the same sentence
    s = Session()
    s.load(str(train))
    s.run("pca", chain=[("standardize", {})] if prep else None)
    project = save_project(s, tmp_path / "p.msproj")
    with pytest.raises(DataError) as exc:
        replay(project, new, tmp_path / "out")
    assert str(exc.value) == expected.replace("the model", "run #1 (pca)") + (
        " Fix the cells (or make them missing for an impute step to fill); they are not recoded.")


def test_apply_with_an_impute_step_reads_stray_text_as_missing_and_fills_it(tmp_path, capsys):
    X, train, new = _stray_files(tmp_path)
    model, out = tmp_path / "m.msmodel", tmp_path / "o.csv"
    save_pca_model(tmp_path, train, model, "impute")
    capsys.readouterr()
    assert main(["apply", "--model", str(model), "--data", str(new), "--out", str(out), "--in-process"]) == 0
    err = capsys.readouterr().err
    assert "column 'b' holds text ('oops3' on line 5)" in err and "impute step to fill" in err, err
    got = np.loadtxt(out, delimiter=",", skiprows=1)
    assert got.shape[0] == 40           # no row dropped
    # reference: the text cells filled with the training mean of b (impute's default), then PCA
    from manifold_studio.files.model_file import load_model_with_metadata

    est, _ = load_model_with_metadata(model)
    filled = X.copy()
    filled[[3, 7], 1] = X[:, 1].mean()
    np.testing.assert_allclose(got[:, 1:], est.final.extend(filled), atol=1e-9)


@pytest.mark.parametrize("prep", [[], ["--prep", "standardize"], ["--prep", "minmax"]])
def test_run_extend_refuses_stray_text_in_a_numeric_column_with_or_without_a_chain(tmp_path, capsys, prep):
    """run --extend checks the new file's types as apply does, a chain or not, before it fits:
    the same sentence, exit 2, nothing written."""
    _X, train, new = _stray_files(tmp_path)
    out, ext = tmp_path / "r.csv", tmp_path / "e.csv"
    code = main(["run", "pca", "--data", str(train), *prep, "--extend", str(new), "--extend-out", str(ext),
                 "--out", str(out), "-q"])
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and not ext.exists(), err
    assert ("new.csv: Column 'b' was numeric when the model was fitted, but in the new data some of its "
            "cells are not numbers: on line 5 it holds 'oops3' (lines 5, 9).") in err, err


def test_run_extend_with_an_impute_step_fills_stray_text_and_says_so(tmp_path, capsys):
    X, train, new = _stray_files(tmp_path)
    out, ext, model = tmp_path / "r.csv", tmp_path / "e.csv", tmp_path / "m.msmodel"
    assert main(["run", "pca", "--data", str(train), "--prep", "impute", "--extend", str(new), "--extend-out",
                 str(ext), "--out", str(out), "--save-model", str(model), "--in-process"]) == 0
    err = capsys.readouterr().err
    assert "column 'b' holds text ('oops3' on line 5)" in err and "impute step to fill" in err, err
    got = np.loadtxt(ext, delimiter=",", skiprows=1)
    from manifold_studio.files.model_file import load_model_with_metadata

    est, _ = load_model_with_metadata(model)
    filled = X.copy()
    filled[[3, 7], 1] = X[:, 1].mean()
    assert got.shape[0] == 40
    np.testing.assert_allclose(got[:, 1:], est.final.extend(filled), atol=1e-9)
