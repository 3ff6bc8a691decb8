"""Clear messages for the cases of issue 29, "Why" item 9: an id column index out of range says
"Id column" and the number of columns; load option ``roles`` of the wrong shape names the option
and the expected shape (also from a tampered project, in replay); Isomap on an all-zero distance
matrix refuses instead of writing a map of zeros. (A wheel of preparation steps only says what it
provides: tests/plugins/test_probe_where_it_runs.py.)"""
from __future__ import annotations

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.reproduce.replay import replay
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.session.model import Session


def _csv(tmp_path, rows=12):
    rng = np.random.default_rng(0)
    path = tmp_path / "d.csv"
    path.write_text("a,b,c\n" + "\n".join(",".join(f"{v:.3f}" for v in r) for r in rng.normal(size=(rows, 3))) + "\n")
    return path


def test_id_column_out_of_range_says_id_column_and_the_number_of_columns(tmp_path, capsys):
    code = cli_main(["run", "pca", "--data", str(_csv(tmp_path)), "--id-column", "99", "--out", str(tmp_path / "o.csv")])
    err = capsys.readouterr().err
    assert code == 2
    assert "Id column index 99 is out of range: d.csv has 3 column(s), indices 0 to 2" in err
    assert "Label column" not in err
    with pytest.raises(DataError, match="Label column index 7 is out of range"):
        ms.load_data(str(_csv(tmp_path)), label_column=7)    # the label column still says so


@pytest.mark.parametrize("bad", ["year", "a:meta", 3, ["a", "meta"]])
def test_roles_of_the_wrong_shape_name_the_option_and_its_shape(tmp_path, bad):
    with pytest.raises(InvalidParameterError) as err:
        ms.load_data(str(_csv(tmp_path)), roles=bad)
    assert "parameter 'roles'" in str(err.value) and "column=role pairs" in str(err.value)
    assert "dictionary update" not in str(err.value)


def test_replay_of_a_project_whose_roles_option_is_a_string(tmp_path):
    path = _csv(tmp_path)
    s = Session()
    ds = s.load(str(path))
    s.run("pca", n_components=2)
    ds.load_options = {**dict(getattr(ds, "load_options", None) or {}), "roles": "nonsense"}  # as if tampered
    with pytest.raises(DataError, match=r"load option 'roles' .* column=role pairs"):
        replay(s, path, tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_isomap_refuses_an_all_zero_distance_matrix(tmp_path, capsys):
    with pytest.raises(DataError, match="Every distance in the matrix between the 10 points is 0"):
        ms.get_algorithm("isomap", metric="precomputed", n_neighbors=3).fit(np.zeros((10, 10)))
    with pytest.raises(DataError, match="Every geodesic distance between the 8 points is 0"):
        ms.get_algorithm("isomap", n_neighbors=3).fit(np.ones((8, 3)))
    # a matrix with distances still fits (scikit-learn's Isomap gives the same map up to sign)
    from sklearn.manifold import Isomap

    X = np.random.default_rng(1).normal(size=(30, 3))
    ours = ms.get_algorithm("isomap", n_neighbors=6, n_components=2).fit(X).embedding_
    theirs = Isomap(n_neighbors=6, n_components=2).fit_transform(X)
    np.testing.assert_allclose(np.abs(ours), np.abs(theirs), atol=1e-6)
