"""The command line: `main([...])` in-process, plus real runs of the console script."""
import csv
import json
import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms import ClassificationAlgorithm, ClusteringAlgorithm, Int
from manifold_studio.cli.main import main
from manifold_studio.hookspecs import hookimpl

PREFIX = "manifold-studio: error: "


# --------------------------------------------------------------------------- helpers
class NearestMean(ClassificationAlgorithm):
    id = "test_nearest_mean"
    name = "Nearest class mean (test)"
    help = "Test classifier."
    params = ()

    def _fit(self, X, y, progress):
        self.classes_ = np.unique(y)
        self.means_ = np.array([X[y == c].mean(axis=0) for c in self.classes_])

    def _extend(self, X):
        d = ((X[:, None, :] - self.means_[None]) ** 2).sum(-1)
        return self.classes_[np.argmin(d, axis=1)]


class FirstPoints(ClusteringAlgorithm):
    id = "test_first_points"
    name = "First points as centres (test)"
    help = "Test clustering."
    params = (Int("n_clusters", 2, "clusters", low=1),)

    def _fit(self, X, y, progress):
        self.cluster_centers_ = X[: self._p["n_clusters"]].copy()
        self.labels_ = self._extend(X)

    def _extend(self, X):
        return np.argmin(((X[:, None, :] - self.cluster_centers_[None]) ** 2).sum(-1), axis=1)


class Interrupted(ClusteringAlgorithm):
    id = "test_interrupted"
    name = "Interrupted (test)"
    help = "Raises KeyboardInterrupt as Ctrl-C would."
    params = ()

    def _fit(self, X, y, progress):
        raise KeyboardInterrupt


class Crashing(ClusteringAlgorithm):
    id = "test_crashing"
    name = "Crashing (test)"
    help = "Has a bug."
    params = ()

    def _fit(self, X, y, progress):
        raise ZeroDivisionError("a bug")


class _TestPlugin:
    @hookimpl
    def register_algorithms(self):
        return [NearestMean, FirstPoints, Interrupted, Crashing]


class _BrokenPlugin:
    @hookimpl
    def register_loaders(self):
        raise RuntimeError("this loader plugin is broken")


@pytest.fixture
def host(fresh_host):
    fresh_host.register(_TestPlugin(), name="test_cli_plugin")
    fresh_host.register(_BrokenPlugin(), name="test_cli_broken")
    return fresh_host


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line_error(rc, err, *fragments):
    assert rc == 2, err
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1, err
    assert lines[0].startswith(PREFIX), err
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment.lower() in lines[0].lower(), (fragment, lines[0])


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


def read_result(path, row_ids):
    """(header, rows) of a result CSV after checking that its first column is the row id column
    holding ``row_ids`` (the input's line numbers, or 0.. for a sample)."""
    header, rows = read_csv(path)
    assert header[0] == "row_id"
    assert [int(r[0]) for r in rows] == list(row_ids)
    return header[1:], [r[1:] for r in rows]


def write_iris_like(path, rows, header=("sepal_length", "sepal_width", "petal_length", "petal_width")):
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)
    return path


# --------------------------------------------------------------------------- list / help / gui
def test_list_shows_algorithms_by_kind_loaders_samples_and_failures(host, capsys):
    rc, out, err = run(capsys, "list")
    assert rc == 0 and err == ""
    assert "embedding" in out and "clustering" in out and "classification" in out
    assert "pca — Principal component analysis" in out
    assert "n_components" in out and "an integer >= 1" in out
    assert "csv — CSV / TSV" in out and ".npz" in out and "label_column" in out
    assert "iris" in out and "swiss_roll" in out
    assert "test_cli_broken (hook)" in out and "this loader plugin is broken" in out
    embedding = out.index("  embedding")
    classification = out.index("  classification")
    assert embedding < out.index("pca —") < out.index("  clustering") < classification
    assert out.index("test_nearest_mean") > classification


def test_list_json(host, capsys):
    rc, out, _ = run(capsys, "list", "--json")
    data = json.loads(out)
    assert rc == 0
    pca = next(a for a in data["algorithms"]["embedding"] if a["id"] == "pca")
    assert [p["name"] for p in pca["params"]][:2] == ["n_components", "whiten"]
    assert {"csv", "numpy"} <= {l["id"] for l in data["loaders"]}
    assert "iris" in {s["id"] for s in data["samples"]}
    assert any(f["plugin"] == "test_cli_broken" for f in data["failures"])


def test_help_and_version(capsys):
    assert main(["--help"]) == 0
    assert "run" in capsys.readouterr().out
    assert main(["run", "--help"]) == 0
    assert "--extend-out" in capsys.readouterr().out
    assert main(["--version"]) == 0
    assert ms.__version__ in capsys.readouterr().out


def test_gui_is_started_lazily_with_and_without_subcommand(monkeypatch):
    calls = []
    fake = types.ModuleType("manifold_studio.gui.app")
    fake.main = lambda argv=None: calls.append(argv) or 0
    monkeypatch.setitem(sys.modules, "manifold_studio.gui.app", fake)
    assert main([]) == 0
    assert main(["gui", "--sample", "moons", "--help"]) == 0
    assert calls == [[], ["--sample", "moons", "--help"]]


# --------------------------------------------------------------------------- run / apply
def test_run_pca_on_a_sample_with_extension(tmp_path, capsys):
    ds = ms.load_data("sample:iris")
    new = write_iris_like(tmp_path / "new.csv", ds.X[::10])
    rc, out, err = run(capsys, "run", "pca", "--data", "sample:iris", "--param", "n_components=2",
                       "--out", tmp_path / "emb.csv", "--extend", new, "--extend-out", tmp_path / "new_emb.csv")
    assert rc == 0, err
    assert "pca: fitted on Iris (150 × 4) in" in out and " s" in out
    header, rows = read_result(tmp_path / "emb.csv", range(150))
    assert header == ["pca_1", "pca_2", "species"]
    est = ms.get_algorithm("pca", n_components=2).fit(ds.X)
    emb = np.array([[float(v) for v in r[:2]] for r in rows])
    np.testing.assert_array_equal(emb, est.embedding_)  # repr() round-trips floats exactly
    assert [r[2] for r in rows] == list(ds.labels)
    header, rows = read_result(tmp_path / "new_emb.csv", range(2, 2 + 15))  # line numbers of new.csv
    assert header == ["pca_1", "pca_2"]
    np.testing.assert_allclose(np.array(rows, dtype=float), est.extend(ds.X[::10]), rtol=1e-12, atol=1e-12)
    # Theorem-5.1-style check: extending a training point gives its embedding
    np.testing.assert_allclose(np.array(rows, dtype=float), est.embedding_[::10], atol=1e-12)


def test_run_on_a_csv_file_with_label_column_and_data_options(tmp_path, capsys):
    path = tmp_path / "d.tsv"
    path.write_text("kind\tx\ty\tz\na\t1\t2\t3\nb\t4\t5\t7\na\t7\t8\t8\nb\t1\t0\t0\n")
    rc, out, err = run(capsys, "run", "pca", "--data", path, "--label-column", "kind",
                       "--data-option", "delimiter=tab", "-p", "n_components=1", "whiten=true",
                       "--out", "-")
    assert rc == 0, err
    lines = out.strip().splitlines()
    assert lines[0] == "row_id,pca_1,kind" and len(lines) == 5
    assert [l.split(",")[0] for l in lines[1:]] == ["2", "3", "4", "5"]  # the file's line numbers
    assert [l.split(",")[2] for l in lines[1:]] == ["a", "b", "a", "b"]
    assert "fitted on d (4 × 3)" in err  # info goes to stderr when the CSV goes to stdout


def test_run_reports_dropped_rows_as_notes(tmp_path, capsys):
    path = tmp_path / "m.csv"
    path.write_text("a,b\n1,2\n3,\n5,7\n8,8\n")
    rc, out, err = run(capsys, "run", "pca", "--data", path, "--out", tmp_path / "o.csv", "-q")
    assert rc == 0
    assert "note: 1 row(s) with missing" in err and "line 3 ('b')" in err
    assert out == ""  # -q: notes only


def test_run_sample_options(tmp_path, capsys):
    rc, _, err = run(capsys, "run", "pca", "--data", "sample:moons", "-D", "n_samples=60", "noise=0",
                     "--out", tmp_path / "o.csv")
    assert rc == 0, err
    assert len(read_csv(tmp_path / "o.csv")[1]) == 60


def test_run_clustering_and_classification(host, tmp_path, capsys):
    rc, _, err = run(capsys, "run", "test_first_points", "--data", "sample:blobs", "--param", "n_clusters=3",
                     "--out", tmp_path / "c.csv")
    assert rc == 0, err
    header, rows = read_result(tmp_path / "c.csv", range(600))
    assert header == ["cluster", "blob"] and len(rows) == 600
    rc, _, err = run(capsys, "run", "test_nearest_mean", "--data", "sample:iris", "--out", tmp_path / "p.csv")
    assert rc == 0, err
    _ = _ + err
    header, rows = read_result(tmp_path / "p.csv", range(150))
    assert header == ["predicted", "species"]
    acc = np.mean([r[0] == r[1] for r in rows])
    assert acc > 0.9
    assert f"training accuracy {acc:.4f} ({round(acc * 150)} of 150 correct)" in _


def test_classifier_extend_and_apply_report_accuracy_on_labelled_files(host, tmp_path, capsys):
    ds = ms.load_data("sample:iris")
    train, test = tmp_path / "train.csv", tmp_path / "test.csv"
    for path, rows in ((train, range(0, 150, 2)), (test, range(1, 150, 2))):
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh)
            w.writerow(list(ds.feature_names) + ["y"])
            for i in rows:
                w.writerow(list(ds.X[i]) + [ds.labels[i]])
    model = tmp_path / "m.npz"
    rc, out, err = run(capsys, "run", "test_nearest_mean", "--data", train, "--label-column", "y",
                       "--out", tmp_path / "p.csv", "--extend", test, "--extend-out", tmp_path / "pred.csv",
                       "--save-model", model)
    assert rc == 0, err
    header, rows = read_result(tmp_path / "pred.csv", range(2, 2 + 75))
    acc = np.mean([r[0] == r[1] for r in rows])
    assert header == ["predicted", "y"] and acc > 0.85
    assert f"accuracy on test: {acc:.4f} ({round(acc * 75)} of 75 correct)" in out + err
    rc, out, err = run(capsys, "apply", "--model", model, "--data", test, "--label-column", "y",
                       "--out", tmp_path / "again.csv")
    assert rc == 0, err
    assert f"accuracy on test: {acc:.4f}" in out + err


def test_save_model_and_apply(tmp_path, capsys):
    ds = ms.load_data("sample:iris")
    model = tmp_path / "pca.npz"
    rc, out, err = run(capsys, "run", "pca", "--data", "sample:iris", "--out", tmp_path / "e.csv",
                       "--save-model", model)
    assert rc == 0 and model.exists() and "saved the fitted model" in out
    # columns in another order plus a label column: matched by name
    order = [2, 0, 3, 1]
    names = [ds.feature_names[i] for i in order]
    new = tmp_path / "new.csv"
    with open(new, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(names + ["species"])
        for row, lab in zip(ds.X[:5, order], ds.labels[:5]):
            w.writerow(list(row) + [lab])
    rc, out, err = run(capsys, "apply", "--model", model, "--data", new, "--label-column", "species",
                       "--out", tmp_path / "applied.csv")
    assert rc == 0, err
    assert "matched to the training data by name" in err
    header, rows = read_result(tmp_path / "applied.csv", range(2, 7))
    assert header == ["pca_1", "pca_2", "species"]
    expected = ms.get_algorithm("pca").fit(ds.X).embedding_[:5]
    np.testing.assert_allclose(np.array([r[:2] for r in rows], dtype=float), expected, atol=1e-12)


def test_extend_file_without_the_label_column(tmp_path, capsys):
    train = tmp_path / "train.csv"
    train.write_text("x,y,cls\n0,0,a\n1,0,a\n0,1,b\n1,1,b\n2,1,b\n")
    new = tmp_path / "new.csv"
    new.write_text("x,y\n0.5,0.5\n")
    rc, _, err = run(capsys, "run", "pca", "--data", train, "--label-column", "cls", "--out",
                     tmp_path / "o.csv", "--extend", new, "--extend-out", tmp_path / "n.csv")
    assert rc == 0, err
    assert "no label column 'cls'" in err
    assert read_result(tmp_path / "n.csv", [2])[0] == ["pca_1", "pca_2"]


# --------------------------------------------------------------------------- bad input: exit 2, one line
@pytest.fixture
def files(tmp_path):
    f = {}
    (tmp_path / "empty.csv").write_bytes(b"")
    f["empty"] = tmp_path / "empty.csv"
    (tmp_path / "text.csv").write_text("name,value\nx,one\ny,two\n")
    f["text"] = tmp_path / "text.csv"
    (tmp_path / "ragged.csv").write_text("a,b,c\n1,2,3\n4,5\n")
    f["ragged"] = tmp_path / "ragged.csv"
    (tmp_path / "image.csv").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    f["binary_csv"] = tmp_path / "image.csv"
    (tmp_path / "table.npy").write_text("a,b\n1,2\n3,4\n")
    f["text_npy"] = tmp_path / "table.npy"
    np.save(tmp_path / "objects.npy", np.array([{"a": 1}, None], dtype=object), allow_pickle=True)
    f["objects"] = tmp_path / "objects.npy"
    (tmp_path / "one.csv").write_text("a,b,c\n1,2,3\n")
    f["one_row"] = tmp_path / "one.csv"
    X = np.arange(12.0).reshape(4, 3)
    X[2, 1] = np.nan
    np.save(tmp_path / "nan.npy", X)
    f["nan"] = tmp_path / "nan.npy"
    (tmp_path / "missing.csv").write_text("a,b\n1,2\n3,\n5,6\n")
    f["missing"] = tmp_path / "missing.csv"
    (tmp_path / "five.csv").write_text("a,b,c,d,e\n1,2,3,4,5\n")
    f["five_columns"] = tmp_path / "five.csv"
    f["out"] = tmp_path / "out.csv"
    return f


BAD_RUNS = {
    "unknown algorithm": (["run", "nope", "--data", "sample:iris", "--out", "{out}"],
                          ["unknown algorithm 'nope'", "pca"]),
    "unknown parameter": (["run", "pca", "--data", "sample:iris", "--param", "foo=1", "--out", "{out}"],
                          ["unknown parameter 'foo'", "n_components"]),
    "invalid value": (["run", "pca", "--data", "sample:iris", "--param", "n_components=-1", "--out", "{out}"],
                      ["n_components", "allowed"]),
    "not NAME=VALUE": (["run", "pca", "--data", "sample:iris", "--param", "n_components", "--out", "{out}"],
                       ["--param expects NAME=VALUE"]),
    "n_components too large": (["run", "pca", "--data", "sample:iris", "--param", "n_components=7",
                                "--out", "{out}"], ["n_components=7", "at most min(n, n_features) = min(150, 4) = 4"]),
    "missing file": (["run", "pca", "--data", "{empty}.nothere", "--out", "{out}"], ["file not found"]),
    "empty file": (["run", "pca", "--data", "{empty}", "--out", "{out}"], ["empty.csv", "empty"]),
    "text in the only column": (["run", "pca", "--data", "{text}", "--out", "{out}"],
                                ["text.csv has no numeric column"]),
    "ragged csv": (["run", "pca", "--data", "{ragged}", "--out", "{out}"],
                   ["ragged.csv, line 3", "expected 3", "found 2"]),
    "binary with .csv extension": (["run", "pca", "--data", "{binary_csv}", "--out", "{out}"],
                                   ["image.csv is not a text", "PNG"]),
    "text with .npy extension": (["run", "pca", "--data", "{text_npy}", "--out", "{out}"],
                                 ["table.npy is not a NumPy"]),
    "npy of Python objects": (["run", "pca", "--data", "{objects}", "--out", "{out}"],
                              ["objects.npy holds Python objects", "refused for safety"]),
    "one row": (["run", "pca", "--data", "{one_row}", "--out", "{out}"], ["1 sample(s)", "at least 2"]),
    "NaN": (["run", "pca", "--data", "{nan}", "--out", "{out}"], ["NaN", "row 2 column 1"]),
    "missing values refused": (["run", "pca", "--data", "{missing}", "-D", "missing=error", "--out", "{out}"],
                               ["missing.csv has missing", "line 3"]),
    "bad data option": (["run", "pca", "--data", "{missing}", "-D", "delimiter=colon", "--out", "{out}"],
                        ["delimiter", "allowed"]),
    "label column of a sample": (["run", "pca", "--data", "sample:iris", "--label-column", "x", "--out", "{out}"],
                                 ["--label-column does not apply"]),
    "unknown label column": (["run", "pca", "--data", "{missing}", "--label-column", "zz", "--out", "{out}"],
                             ["no column named 'zz'"]),
    "unknown sample": (["run", "pca", "--data", "sample:nope", "--out", "{out}"], ["unknown sample", "iris"]),
    "missing --out": (["run", "pca", "--data", "sample:iris"], ["required", "--out"]),
    "extend without extend-out": (["run", "pca", "--data", "sample:iris", "--extend", "{five_columns}",
                                   "--out", "{out}"], ["--extend FILE and --extend-out FILE"]),
    "extend with other columns": (["run", "pca", "--data", "sample:iris", "--extend", "{five_columns}",
                                   "--extend-out", "{out}.2.csv", "--out", "{out}"],
                                  ["5 numeric column(s)", "fitted on 4"]),
    "output folder missing": (["run", "pca", "--data", "sample:iris", "--out", "{out}/x/y.csv"],
                              ["does not exist"]),
    "unknown command": (["frobnicate"], ["invalid choice"]),
    "classification without labels": (["run", "test_nearest_mean", "--data", "{nan}", "--out", "{out}"],
                                      ["needs labels", "--label-column"]),
    "apply a data file as model": (["apply", "--model", "{nan}", "--data", "{one_row}", "--out", "{out}"],
                                   ["nan.npy is not a Manifold Studio model"]),
}


@pytest.mark.parametrize("case", list(BAD_RUNS))
def test_bad_input_exits_2_with_one_line(case, files, host, capsys):
    argv, fragments = BAD_RUNS[case]
    argv = [a.format(**{k: str(v) for k, v in files.items()}) for a in argv]
    files["out"].write_text("previous result\n")
    rc, out, err = run(capsys, *argv)
    assert_one_line_error(rc, err, *fragments)
    assert files["out"].read_text() == "previous result\n"  # nothing already there is lost


def test_apply_with_other_number_of_features(tmp_path, files, capsys):
    model = tmp_path / "m.npz"
    assert run(capsys, "run", "pca", "--data", "sample:iris", "--out", files["out"], "--save-model", model)[0] == 0
    rc, _, err = run(capsys, "apply", "--model", model, "--data", files["five_columns"], "--out", files["out"])
    assert_one_line_error(rc, err, "5 numeric column(s)", "fitted on 4", "sepal_length")


def test_ctrl_c_exits_130(host, capsys):
    rc, _, err = run(capsys, "run", "test_interrupted", "--data", "sample:iris", "--out", "-")
    assert rc == 130 and err.strip() == PREFIX + "interrupted"


def test_unexpected_error_is_one_line_exit_1(host, capsys, monkeypatch):
    rc, _, err = run(capsys, "run", "test_crashing", "--data", "sample:iris", "--out", "-")
    assert rc == 1 and len(err.strip().splitlines()) == 1
    assert "internal error: ZeroDivisionError: a bug" in err and "Traceback" not in err
    with pytest.raises(ZeroDivisionError):
        main(["--debug", "run", "test_crashing", "--data", "sample:iris", "--out", "-"])


# --------------------------------------------------------------------------- real processes
def _console_script():
    script = Path(sys.executable).with_name("manifold-studio")
    return [str(script)] if script.exists() else [sys.executable, "-m", "manifold_studio"]


def _env():
    env = dict(os.environ)
    env.pop("MANIFOLD_STUDIO_DEBUG", None)
    return env


def test_console_script_run_with_extend(tmp_path):
    ds = ms.load_data("sample:iris")
    write_iris_like(tmp_path / "new.csv", ds.X[:3] + 0.1)
    cmd = _console_script() + ["run", "pca", "--data", "sample:iris", "--param", "n_components=2",
                               "--out", "emb.csv", "--extend", "new.csv", "--extend-out", "new_emb.csv"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 0, proc.stderr
    assert "fitted on Iris (150 × 4) in" in proc.stdout and "extended to new (3 points)" in proc.stdout
    assert proc.stderr == ""  # no progress output when stderr is not a terminal
    header, rows = read_result(tmp_path / "emb.csv", range(150))
    assert header == ["pca_1", "pca_2", "species"] and len(rows) == 150
    header, rows = read_result(tmp_path / "new_emb.csv", [2, 3, 4])
    est = ms.get_algorithm("pca", n_components=2).fit(ds.X)
    np.testing.assert_allclose(np.array(rows, dtype=float), est.extend(ds.X[:3] + 0.1), atol=1e-12)


def test_console_script_bad_input(tmp_path):
    cmd = _console_script() + ["run", "pca", "--data", "sample:iris", "--param", "n_components=9",
                               "--out", "emb.csv"]
    proc = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=_env())
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(PREFIX) and "n_components" in proc.stderr
    assert not (tmp_path / "emb.csv").exists()


def test_python_m_list_imports_no_qt(tmp_path):
    code = ("import sys; from manifold_studio.cli.main import main; rc = main(['list']); "
            "qt = [m for m in sys.modules if m.split('.')[0] in ('PySide6', 'pyqtgraph', 'shiboken6')]; "
            "print('QT:', qt); sys.exit(rc)")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          env=_env(), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "QT: []" in proc.stdout and "pca" in proc.stdout


def test_gui_that_cannot_start_is_one_line(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "manifold_studio.gui.app", None)  # import fails
    rc, _, err = run(capsys, "gui")
    assert rc == 1 and err.count("\n") == 1 and err.startswith(PREFIX + "the GUI cannot start")


def test_progress_is_shown_on_a_terminal_only(tmp_path, capsys, monkeypatch):
    from manifold_studio.cli import console

    rc, _, err = run(capsys, "run", "pca", "--data", "sample:iris", "--out", tmp_path / "a.csv")
    assert rc == 0 and err == ""
    monkeypatch.setattr(console, "isatty", lambda stream: True)
    rc, _, err = run(capsys, "run", "pca", "--data", "sample:iris", "--out", tmp_path / "b.csv")
    assert rc == 0 and "\r\x1b[Kpca: 100%" in err and err.endswith("\r\x1b[K")


def test_run_fit_on_a_sample_extends_to_all_points(tmp_path, capsys):
    out = tmp_path / "roll.csv"
    rc, _, err = run(capsys, "run", "isomap", "--data", "sample:swiss_roll", "-D", "n_samples=3000",
                     "--fit-sample", "1000", "--param", "n_neighbors=10", "--out", str(out))
    assert rc == 0, err
    header, rows = read_result(out, range(3000))
    assert header[:2] == ["isomap_1", "isomap_2"] and header[-1] == "fitted"
    values = np.array([[float(v) for v in r[:2]] for r in rows])
    fitted = np.array([int(r[-1]) for r in rows])
    assert values.shape == (3000, 2) and np.isfinite(values).all()
    assert fitted.sum() == 1000
    # the fitted rows carry the sample fit's own embedding, the others its Nyström extension:
    # the whole map still follows the roll parameter
    from scipy.stats import spearmanr
    t = np.array([float(r[2]) for r in rows])
    assert max(abs(spearmanr(values[:, 0], t)[0]), abs(spearmanr(values[:, 1], t)[0])) > 0.99


def test_run_fit_sample_must_be_positive(capsys):
    rc, _, err = run(capsys, "run", "pca", "--data", "sample:iris", "--fit-sample", "0", "--out", "x.csv")
    assert_one_line_error(rc, err, "--fit-sample")


def test_classifier_cross_validation_and_holdout_from_the_command_line(capsys):
    from manifold_studio.cli.main import main

    assert main(["run", "svm", "--data", "sample:iris", "--cv", "5", "--out", "-"]) == 0
    out, err = capsys.readouterr()
    assert "(5-fold cross-validation)" in err and "class setosa: precision 1.000, recall 1.000 (50 test rows)" in err
    import re

    acc = float(re.search(r"accuracy (\d\.\d+) ± (\d\.\d+) \(5-fold", err).group(1))
    assert 0.9 < acc <= 1.0
    assert main(["run", "perceptron", "--data", "sample:iris", "--holdout", "0.2", "--out", "-"]) == 0
    assert "on a stratified hold-out of 30 rows" in capsys.readouterr().err
    assert main(["run", "pca", "--data", "sample:iris", "--cv", "3", "--out", "-"]) != 0
    assert "evaluate classifiers; pca is an embedding algorithm" in capsys.readouterr().err
    assert main(["run", "svm", "--data", "sample:iris", "--holdout", "1.5", "--out", "-"]) != 0


def test_ranking_svm_from_the_command_line_reports_its_ranking_quality(tmp_path, capsys):
    rng = np.random.default_rng(0)
    w = np.array([1.0, -2.0, 0.5])
    rows = ["query,a,b,c,relevance"]
    for q in range(10):
        X = rng.normal(size=(8, 3))
        for x, r in zip(X, np.digitize(X @ w, [-1, 0, 1])):
            rows.append(f"{q},{x[0]},{x[1]},{x[2]},{r}")
    path = tmp_path / "rank.csv"
    path.write_text("\n".join(rows) + "\n")
    rc, out, err = run(capsys, "run", "ranking_svm", "--data", path, "--label-column", "relevance",
                       "--param", "query_column=0", "--out", tmp_path / "scores.csv")
    assert rc == 0, err
    import re

    m = re.search(r"pairwise accuracy (\d\.\d+) \(([\d,]+) ordered pairs\), mean Kendall tau (\d\.\d+) over 10", out)
    assert m and float(m.group(1)) > 0.9 and float(m.group(3)) > 0.7
