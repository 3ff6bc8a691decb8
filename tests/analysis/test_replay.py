"""Replay a project's chain on another file with the same columns."""
from __future__ import annotations

import csv

import numpy as np
import pytest

from manifold_studio.reproduce.replay import replay
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError
from manifold_studio.project.project_file import save_project
from manifold_studio.session.model import Session


def _write(path, X, cls, columns=("a", "b", "c", "d")):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow([*columns, "kind"])
        for row, c in zip(X, cls):
            w.writerow([*map(repr, row.tolist()), f"k{c}"])
    return path


def _points(n, seed):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0, 0], [4, 4, 0, 1], [0, 4, 4, 2]], float)
    cls = rng.integers(0, 3, n)
    return centres[cls] + rng.normal(scale=0.8, size=(n, 4)), cls


def _read(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.fixture
def project(tmp_path):
    X, cls = _points(90, 1)
    s = Session()
    s.load(str(_write(tmp_path / "train.csv", X, cls)), label_column="kind")
    iso = s.run("isomap", n_neighbors=20, n_components=2)
    km = s.run("kmeans", source_run=iso.id, n_clusters=3, random_state=0)
    svm = s.run("svm")
    return save_project(s, tmp_path / "p.msproj"), (iso, km, svm)


def test_replay_applies_every_saved_model_and_names_outputs_after_the_runs(project, tmp_path):
    path, (iso, km, svm) = project
    Xn, cls = _points(25, 2)
    # the same columns in another order: matched by name
    new = _write(tmp_path / "new.csv", Xn[:, [2, 0, 3, 1]], cls, columns=("c", "a", "d", "b"))
    result = replay(path, new, tmp_path / "results")
    names = [p.name for _, p in result.outputs]
    assert names == ["run1_isomap.csv", "run2_kmeans.csv", "run3_svm.csv"]
    assert result.notes == []
    header, rows = _read(tmp_path / "results" / "run1_isomap.csv")
    assert header == ["row_id", "isomap_1", "isomap_2"]  # as the README and every other output
    emb = np.array([[float(v) for v in r[1:]] for r in rows])
    expected = iso.estimator.extend(Xn)
    np.testing.assert_array_equal(emb, expected)
    _, rows = _read(tmp_path / "results" / "run2_kmeans.csv")
    np.testing.assert_array_equal([int(r[1]) for r in rows], km.estimator.extend(expected))
    _, rows = _read(tmp_path / "results" / "run3_svm.csv")
    assert [r[1] for r in rows] == [str(v) for v in svm.estimator.predict(Xn)]
    assert [r[0] for r in rows] == [str(i) for i in range(2, 27)]  # the new file's line numbers


def test_replay_on_a_file_lacking_a_column_names_it_and_writes_nothing(project, tmp_path, capsys):
    path, _ = project
    Xn, cls = _points(10, 3)
    new = _write(tmp_path / "new.csv", Xn[:, :3], cls, columns=("a", "b", "c"))
    with pytest.raises(DataError, match="new.csv lacks column 'd'"):
        replay(path, new, tmp_path / "out")
    assert not (tmp_path / "out").exists()
    assert cli_main(["replay", str(path), "--data", str(new), "--out-dir", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip()
    assert "lacks column 'd'" in err and len(err.splitlines()) == 1


def test_cli_replay_writes_each_output(project, tmp_path, capsys):
    path, _ = project
    Xn, cls = _points(12, 4)
    new = _write(tmp_path / "new.csv", Xn, cls)
    assert cli_main(["replay", str(path), "--data", str(new), "--out-dir", str(tmp_path / "r")]) == 0
    out = capsys.readouterr().out
    assert "run1_isomap.csv" in out and "12 rows" in out
    assert sorted(p.name for p in (tmp_path / "r").iterdir()) == ["run1_isomap.csv", "run2_kmeans.csv",
                                                                 "run3_svm.csv"]


def test_replay_of_a_run_with_a_preparation_chain_applies_its_pipeline(tmp_path):
    import manifold_studio as ms

    X, cls = _points(60, 5)
    train = _write(tmp_path / "train.csv", X * [1, 100, 1, 0.01], cls)
    s = Session()
    ds = s.load(str(train), label_column="kind")
    run = s.run("pca", n_components=2)
    # a run as the Preparation dock records it: its estimator the fitted pipeline, its chain in meta
    run.estimator = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=2)).fit(
        ds.X, columns=ds.feature_names)
    run.meta["chain"] = [["standardize", {}]]
    Xn, cn = _points(15, 6)
    new = _write(tmp_path / "new.csv", (Xn * [1, 100, 1, 0.01])[:, [3, 2, 1, 0]], cn, columns=("d", "c", "b", "a"))
    result = replay(s, new, tmp_path / "out")
    _, rows = _read(result.outputs[0][1])
    np.testing.assert_allclose(np.array([r[1:] for r in rows], float),
                               run.estimator.extend(Xn * [1, 100, 1, 0.01]), rtol=0, atol=1e-12)
    lacking = _write(tmp_path / "lacking.csv", Xn[:, :3], cn, columns=("a", "b", "c"))
    with pytest.raises(DataError, match="lacking.csv lacks column 'd'"):
        replay(s, lacking, tmp_path / "out2")


def test_replay_of_a_run_whose_chain_step_is_not_installed_names_the_step_and_replays_the_others(tmp_path, capsys):
    """A project fitted with a plugin's preparation step, replayed where that plugin is not
    installed: the run whose chain names the step is skipped with a note naming the step and
    what is installed; the other runs are replayed (nothing else is lost)."""
    from manifold_studio import hookspecs
    from manifold_studio.algorithms.preprocessing import Preprocessor
    from manifold_studio.plugins.host import PluginHost, get_host, reset_host

    class Halves(Preprocessor):
        id, name = "test_halves", "Halves every value"
        params = ()

        def _fit(self, X):
            return self

        def _transform(self, X):
            return X / 2.0

    class Plugin:
        @hookspecs.hookimpl
        def register_preprocessors(self):
            return [Halves]

    host = PluginHost().discover()
    host.register(Plugin(), name="test_halves_plugin")
    assert "test_halves" in host.preprocessors
    X, cls = _points(60, 7)
    data = _write(tmp_path / "train.csv", X, cls)
    old = get_host()
    reset_host(host)   # the plugin is installed while the project is made
    try:
        s = Session(host)
        s.load(str(data), label_column="kind")
        pca = s.run("pca", n_components=2)
        halved = s.run("kmeans", chain=[("test_halves", {})], n_clusters=3)
        project = save_project(s, tmp_path / "p.msproj")
    finally:
        reset_host(old)
    result = replay(project, data, tmp_path / "out")   # the default host: no test_halves
    assert [rid for rid, _ in result.outputs] == [pca.id]
    _, rows = _read(result.outputs[0][1])
    np.testing.assert_allclose(np.array([r[1:] for r in rows], float), pca.embedding, atol=1e-9)
    (note,) = result.notes
    assert note.startswith(f"Run #{halved.id} (kmeans) is skipped: its model cannot be restored")
    assert "'test_halves', which no loaded plugin provides" in note and "standardize" in note
    assert cli_main(["replay", str(project), "--data", str(data), "--out-dir", str(tmp_path / "cli"),
                     "--in-process"]) == 0
    assert "'test_halves', which no loaded plugin provides" in capsys.readouterr().out


def test_replay_outputs_carry_the_new_files_meta_columns_after_the_row_id(tmp_path, capsys):
    """As run and apply: the meta columns of the file replayed on follow the row id (its own
    values, not the training file's); --no-metas leaves them out."""
    def write(path, X, sites):
        with open(path, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["a", "b", "c", "d", "site"])
            for row, site in zip(X, sites):
                w.writerow([*map(repr, row.tolist()), site])
        return path

    X, _ = _points(40, 3)
    s = Session()
    s.load(str(write(tmp_path / "train.csv", X, [f"s{i % 3}" for i in range(40)])))
    pca = s.run("pca", n_components=2)
    path = save_project(s, tmp_path / "p.msproj")
    Xn, _ = _points(9, 4)
    new = write(tmp_path / "new.csv", Xn, [f"new{i}" for i in range(9)])
    assert cli_main(["replay", str(path), "--data", str(new), "--out-dir", str(tmp_path / "r"), "-q"]) == 0
    header, rows = _read(tmp_path / "r" / "run1_pca.csv")
    assert header == ["row_id", "site", "pca_1", "pca_2"]
    assert [r[1] for r in rows] == [f"new{i}" for i in range(9)]
    np.testing.assert_allclose([[float(v) for v in r[2:]] for r in rows], pca.estimator.extend(Xn), atol=1e-12)
    assert cli_main(["replay", str(path), "--data", str(new), "--out-dir", str(tmp_path / "n"), "--no-metas",
                     "-q"]) == 0
    assert _read(tmp_path / "n" / "run1_pca.csv")[0] == ["row_id", "pca_1", "pca_2"]
    capsys.readouterr()
