"""An asked role is honoured or refused with a reason (issue 33, items 5 and 7): penguins' ``sex`` (a
text column with two classes and eleven gaps) made a feature by ``--role``, by ``roles=`` in the API
(file and sample) and by ``Dataset.set_roles``; the load report then says what the role does, not
where inference had put the column; free text is refused naming the column and the allowed roles."""
from __future__ import annotations

import csv
from pathlib import Path

import manifold_studio_builtins
import numpy as np
import pandas as pd
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError

PENGUINS = Path(manifold_studio_builtins.__file__).parent / "data" / "penguins.csv"
MEASURES = ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]


def _expected_with_sex():
    """pandas' reading: the rows with every measurement and a sex, sex coded female=0, male=1."""
    frame = pd.read_csv(PENGUINS).dropna(subset=MEASURES + ["sex"])
    X = frame[MEASURES].to_numpy(dtype=float)
    sex = frame["sex"].map({"female": 0.0, "male": 1.0}).to_numpy()
    return np.column_stack([X, sex]), (frame.index.to_numpy() + 2)   # line numbers (header is line 1)


def _role_notes(report, name):
    return [r for r in report if r.startswith(f"column '{name}'")]


@pytest.mark.parametrize("source", ["file", "sample"])
def test_sex_as_a_feature_is_fitted_as_codes_and_the_report_says_so(source):
    src = str(PENGUINS) if source == "file" else "sample:penguins"
    ds = ms.load_data(src, roles={"sex": "feature"})
    X, lines = _expected_with_sex()
    assert ds.feature_names == MEASURES + ["sex"]
    np.testing.assert_array_equal(ds.X, X)
    np.testing.assert_array_equal(np.asarray(ds.row_ids), lines)
    notes = _role_notes(ds.report, "sex")
    assert len(notes) == 1 and "is a feature as asked" in notes[0]
    assert "(female=0, male=1)" in notes[0] and "11 row(s) without a value" in notes[0] and "one_hot" in notes[0]
    assert not any("kept as a categorical meta column" in r for r in notes)
    # back to meta: the two rows without measurements are the only ones dropped, and the note goes
    ds.set_roles({"sex": "meta"})
    assert ds.X.shape == (342, 4) and not _role_notes(ds.report, "sex")
    assert "sex" in ds.table.meta_names


def test_run_role_sex_feature_on_the_sample_fits_five_columns(tmp_path, capsys):
    rc = cli_main(["run", "pca", "--data", "sample:penguins", "--role", "sex=feature", "-p", "n_components=5",
                   "--out", str(tmp_path / "p.csv")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "333 × 5" in err + out
    assert "'sex' is a feature as asked" in err and "'sex' is not numeric" not in err
    with open(tmp_path / "p.csv", newline="") as fh:
        rows = list(csv.reader(fh))
    assert "sex" not in rows[0] and len(rows) - 1 == 333
    X, lines = _expected_with_sex()
    assert [int(r[0]) for r in rows[1:]] == lines.tolist()
    # five components of the five columns: the total variance is the data's
    emb = np.array([[float(v) for v in r[rows[0].index("pca_1"):rows[0].index("pca_5") + 1]] for r in rows[1:]])
    np.testing.assert_allclose(emb.var(axis=0).sum(), X.var(axis=0).sum(), rtol=1e-10)


def test_free_text_as_a_feature_is_refused_naming_the_column_and_what_is_allowed(tmp_path):
    path = tmp_path / "notes.csv"
    path.write_text("a,b,comment\n" + "".join(f"{i},{2 * i},remark number {i}\n" for i in range(40)))
    with pytest.raises(DataError) as err:
        ms.load_data(str(path), roles={"comment": "feature"})
    text = str(err.value)
    assert "'comment' holds free text: it cannot be a feature (40 distinct values)" in text
    assert "allowed roles for it are target, meta or skipped" in text and "one_hot" in text


def test_roles_on_a_sample_without_a_table_are_refused():
    with pytest.raises(DataError, match=r"Column roles do not apply to sample:moons: it has no table .*'x', 'y'"):
        ms.load_data("sample:moons", roles={"x": "meta"})
