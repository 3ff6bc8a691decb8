"""``select_columns`` patterns are bounded (issue 29): a pattern whose search can backtrack
catastrophically — a repeat inside a repeat, alternatives inside a repeat, a back-reference — is
refused at once, naming it, from its structure (never from a clock); ordinary patterns work."""
from __future__ import annotations

import time

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError, InvalidParameterError

EVIL = "a" * 34 + "!"


def _csv(path, names, n=6):
    rng = np.random.default_rng(0)
    rows = [",".join(names)] + [",".join(f"{v:.3f}" for v in rng.normal(size=len(names))) for _ in range(n)]
    path.write_text("\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize("pattern", ["(a+)+$", "(a*)*b", "(a|aa)+$", r"(\w+\s?)+$", "(x+x+)+y", r"^(a+)\1$",
                                     "(.*a){20}", ".*a.*b.*c.*d"])
def test_catastrophic_patterns_are_refused_quickly_naming_them(tmp_path, pattern):
    start = time.perf_counter()
    with pytest.raises((InvalidParameterError, DataError)) as err:
        ms.make_pipeline(("select_columns", {"pattern": pattern})).fit(
            _csv(tmp_path / "d.csv", [EVIL, "b"]) and ms.load_data(str(tmp_path / "d.csv")))
    assert time.perf_counter() - start < 1.0
    assert repr(pattern) in str(err.value) and "refused" in str(err.value)


def test_the_command_line_refuses_the_hostile_case_in_under_a_second(tmp_path, capsys):
    data = _csv(tmp_path / "d.csv", [EVIL, "b", "c"])
    start = time.perf_counter()
    code = cli_main(["run", "pca", "--data", str(data), "--prep", "select_columns:pattern=(a+)+$",
                     "--out", str(tmp_path / "out.csv")])
    assert time.perf_counter() - start < 1.0
    err = capsys.readouterr().err
    assert code == 2 and "'(a+)+$'" in err and "repeat inside a repeat" in err
    assert not (tmp_path / "out.csv").exists()


def test_ordinary_patterns_still_select_columns(tmp_path):
    ds = ms.load_data(str(_csv(tmp_path / "d.csv", ["sepal_length", "sepal_width", "petal_length", "x1"])))
    cases = {"^sepal": ["sepal_length", "sepal_width"], "_length$": ["sepal_length", "petal_length"],
             r"(sepal|petal)_w": ["sepal_width"], r"^x\d+$": ["x1"], r"(?:al_){1,2}l": ["sepal_length", "petal_length"]}
    for pattern, kept in cases.items():
        pipe = ms.make_pipeline(("select_columns", {"pattern": pattern})).fit(ds)
        assert pipe.columns_out_ == kept, pattern
        np.testing.assert_array_equal(pipe.prepare(ds), ds.X[:, [ds.feature_names.index(k) for k in kept]])


def test_overlong_names_and_too_much_work_are_refused(tmp_path):
    ds = ms.load_data(str(_csv(tmp_path / "d.csv", ["a" * 1200, "b"])))
    with pytest.raises(DataError, match="1,200 characters"):
        ms.make_pipeline(("select_columns", {"pattern": "b"})).fit(ds)
    ds = ms.load_data(str(_csv(tmp_path / "e.csv", [f"{'a' * 900}{j}" for j in range(300)])))
    with pytest.raises(DataError, match="could take too long"):
        ms.make_pipeline(("select_columns", {"pattern": ".*x.*y.*z"})).fit(ds)
