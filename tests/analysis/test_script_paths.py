"""The exported script finds its data from any folder (issue 21, item 5): a data file under the
script's folder is named relative to the script, any other absolutely; the script checks the
file's size and SHA-256; the column roles saved in the project are the ones the script and the
replay use."""
from __future__ import annotations

import csv
import hashlib
import shutil
import subprocess
import sys

import numpy as np

from manifold_studio.reproduce.replay import replay
from manifold_studio.reproduce.script_export import run_output_name, write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import Session


def _write_csv(path, n=60, seed=5):
    rng = np.random.default_rng(seed)
    cls = np.repeat(np.arange(3), n // 3)
    X = np.array([[0, 0, 0], [5, 1, 0], [0, 5, 2]], float)[cls] + rng.normal(scale=0.7, size=(n, 3))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "c", "kind"])
        for row, c in zip(X, cls):
            w.writerow([*map(repr, row.tolist()), f"k{c}"])
    return path


def _session(data):
    s = Session()
    s.load(str(data), label_column="kind")
    run = s.run("pca", n_components=2)
    km = s.run("kmeans", n_clusters=3, random_state=3)
    return s, run, km


def _run(script, cwd, out):
    return subprocess.run([sys.executable, str(script), str(out)], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def _embedding(path):
    with open(path, newline="") as f:
        return np.array(list(csv.reader(f))[1:], float)


def test_data_outside_the_script_folder_is_named_absolutely_and_runs_from_a_third_folder(tmp_path):
    data_dir, script_dir, elsewhere = (tmp_path / d for d in ("data", "scripts", "elsewhere"))
    for d in (data_dir, script_dir, elsewhere):
        d.mkdir()
    data = _write_csv(data_dir / "points.csv")
    s, pca, km = _session(data)
    proj = save_project(s, tmp_path / "p.msproj")
    script = write_script(proj, script_dir / "analysis.py")
    text = script.read_text()
    digest = hashlib.sha256(data.read_bytes()).hexdigest()
    d = script_spec(text)["datasets"][0]
    assert (d["path"], d["size"], d["sha256"]) == (str(data.resolve()), data.stat().st_size, digest)
    done = _run(script, elsewhere, "out")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr
    np.testing.assert_allclose(_embedding(elsewhere / "out" / f"{run_output_name(pca)}.csv"), pca.embedding,
                               rtol=0, atol=1e-9)
    labels = _embedding(elsewhere / "out" / f"{run_output_name(km)}.csv")[:, 0]
    np.testing.assert_array_equal(labels, km.labels)


def test_data_under_the_script_folder_is_relative_so_the_folder_can_move(tmp_path):
    project_dir = tmp_path / "study"
    (project_dir / "data").mkdir(parents=True)
    data = _write_csv(project_dir / "data" / "points.csv")
    s, pca, _km = _session(data)
    proj = save_project(s, project_dir / "p.msproj")
    write_script(proj, project_dir / "analysis.py")
    assert script_spec((project_dir / "analysis.py").read_text())["datasets"][0]["path"] == "data/points.csv"
    moved = shutil.move(str(project_dir), str(tmp_path / "moved"))  # the whole folder, elsewhere
    (tmp_path / "cwd").mkdir()
    done = _run(f"{moved}/analysis.py", tmp_path / "cwd", tmp_path / "res")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(_embedding(tmp_path / "res" / f"{run_output_name(pca)}.csv"), pca.embedding,
                               rtol=0, atol=1e-9)


def test_a_changed_or_missing_data_file_is_said(tmp_path):
    data = _write_csv(tmp_path / "points.csv")
    s, _pca, _km = _session(data)
    script = write_script(save_project(s, tmp_path / "p.msproj"), tmp_path / "analysis.py")
    _write_csv(data, seed=6)  # same size class of file, other numbers
    done = _run(script, tmp_path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    assert f"Warning: {data.resolve()} is not the file the analysis read" in done.stderr
    data.unlink()
    done = _run(script, tmp_path, tmp_path / "out2")
    assert done.returncode == 1
    assert f"The data file {data.resolve()} is not there" in done.stderr


def test_the_script_and_the_replay_use_the_roles_saved_in_the_project(tmp_path):
    s = Session()
    ds = s.load("sample:penguins")  # a sample: its load options do not hold the roles
    ds.set_roles({"year": "feature", "bill_length_mm": "meta"})
    pca = s.run("pca", n_components=2)
    proj = save_project(s, tmp_path / "p.msproj")
    script = write_script(proj, tmp_path / "analysis.py")
    roles = script_spec(script.read_text())["datasets"][0]["roles"]
    assert roles["year"] == "feature" and roles["bill_length_mm"] == "meta"
    done = _run(script, tmp_path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(_embedding(tmp_path / "out" / f"{run_output_name(pca)}.csv"), pca.embedding,
                               rtol=0, atol=1e-9)
    # replay on a CSV of the same columns, where 'year' is inferred as meta and 'bill_length_mm' a feature
    table = read_project(proj).session.current_dataset.table
    new = tmp_path / "new.csv"
    rows = ds.table_rows[:25]
    with open(new, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(table.names)
        for r in rows:
            w.writerow(["" if v is None or v != v else v for v in
                        (table.column(n).take([r]).decoded()[0] for n in table.names)])
    result = replay(proj, new, tmp_path / "replayed")
    assert [p.name for _id, p in result.outputs] == [f"{run_output_name(pca)}.csv"]
    with open(result.outputs[0][1], newline="") as f:
        header, *body = list(csv.reader(f))
    # the meta columns follow the row id (bill_length_mm, made meta in the session, among them)
    assert header[0] == "row_id" and "bill_length_mm" in header and "year" not in header
    got = np.array([[r[header.index(n)] for n in ("pca_1", "pca_2")] for r in body], float)
    np.testing.assert_allclose(got, pca.estimator.extend(ds.X[:25]), rtol=0, atol=1e-9)


def test_a_column_made_by_labelling_does_not_break_the_script(tmp_path):
    from manifold_studio.session.annotate import label_into_column

    s = Session()
    ds = s.load("sample:iris")  # no table of its own: labelling makes one, with a column the sample lacks
    label_into_column(ds, np.arange(5), "checked", "yes")
    pca = s.run("pca", n_components=2)
    script = write_script(save_project(s, tmp_path / "p.msproj"), tmp_path / "analysis.py")
    assert script_spec(script.read_text())["datasets"][0]["roles"]["checked"] == "meta"
    done = _run(script, tmp_path, tmp_path / "out")
    assert done.returncode == 0, done.stderr
    np.testing.assert_allclose(_embedding(tmp_path / "out" / f"{run_output_name(pca)}.csv"), pca.embedding,
                               rtol=0, atol=1e-9)


def test_a_script_into_a_folder_that_cannot_be_written_is_refused_in_one_line(tmp_path, locked, capsys):
    from manifold_studio.cli.main import main as cli_main

    s, _pca, _km = _session(_write_csv(tmp_path / "points.csv"))
    proj = save_project(s, tmp_path / "p.msproj")
    assert cli_main(["script", str(proj), "-o", str(locked / "a.py")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith(f"Cannot write to {locked}: permission denied.") and len(err.splitlines()) == 1
    assert cli_main(["script", str(proj), "-o", str(tmp_path / "a.txt")]) == 2
    assert "unknown file extension ('.txt'); allowed: .py" in capsys.readouterr().err
    assert sorted(p.name for p in locked.iterdir()) == ["old.png"]


def test_a_session_not_saved_yet_gets_the_digest_at_export(tmp_path):
    from manifold_studio.reproduce.script_export import session_script

    data = _write_csv(tmp_path / "points.csv")
    s, _pca, _km = _session(data)
    assert "sha256" not in s.current_dataset.source_file  # loading only notes size and time
    text = session_script(s, script_dir=tmp_path)
    d = script_spec(text)["datasets"][0]
    assert (d["path"], d["size"], d["sha256"]) == ("points.csv", data.stat().st_size,
                                                   hashlib.sha256(data.read_bytes()).hexdigest())
    assert script_spec(session_script(s))["datasets"][0]["path"] == str(data.resolve())  # no script folder: absolute
