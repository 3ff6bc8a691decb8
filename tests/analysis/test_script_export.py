"""Export a session as a Python script and run it in a fresh process: same numbers."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from manifold_studio.reproduce.script_export import (
    NothingToExport,
    run_output_name,
    session_script,
    write_script,
)
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.cli.main import main as cli_main
from manifold_studio.evaluation import KFOLD, evaluate
from manifold_studio.project.project_file import save_project
from manifold_studio.session.model import Session


def _write_csv(path, n=90, seed=3):
    rng = np.random.default_rng(seed)
    centres = np.array([[0, 0, 0, 0], [4, 4, 0, 1], [0, 4, 4, 2]], float)
    cls = np.repeat(np.arange(3), n // 3)
    X = centres[cls] + rng.normal(scale=0.8, size=(n, 4))
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["a", "b", "c", "d", "kind"])
        for row, c in zip(X, cls):
            w.writerow([*map(repr, row.tolist()), f"k{c}"])
    return path


def _read_out(path):
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


@pytest.fixture
def session(tmp_path):
    s = Session()
    s.load(str(_write_csv(tmp_path / "points.csv")), label_column="kind")
    s.current_dataset.set_role("d", "meta")  # a role changed in the session: the script repeats it
    iso = s.run("isomap", n_neighbors=20, n_components=2)
    km = s.run("kmeans", source_run=iso.id, n_clusters=3, random_state=7)
    svm = s.run("svm", C=2.0)
    res = evaluate((s.host.algorithm_class("svm"), dict(svm.params)), *s.training_data(svm),
                   KFOLD, n_splits=5, random_state=11)
    svm.meta["evaluation"] = {"summary": res.summary(), "mean_accuracy": res.mean_accuracy,
                              "fold_accuracy": res.fold_accuracy.tolist(), **res.params}
    s._expected = {"iso": iso, "km": km, "svm": svm, "eval": res}
    return s


def test_exported_script_reproduces_the_session_in_a_fresh_process(session, tmp_path):
    exp = session._expected
    proj = save_project(session, tmp_path / "p.msproj")
    script = write_script(proj, tmp_path / "analysis.py")
    text = script.read_text()
    assert "import manifold_studio as ms" in text and "ms.load_data" in text
    assert script_spec(text)["datasets"][0]["options"]["label_column"] == "kind"  # the loader options are repeated
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, str(script), str(out)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    header, rows = _read_out(out / f"{run_output_name(exp['iso'])}.csv")
    assert header == ["isomap_1", "isomap_2"]
    emb = np.array(rows, float)
    np.testing.assert_allclose(emb, exp["iso"].embedding, rtol=0, atol=1e-9)
    header, rows = _read_out(out / f"{run_output_name(exp['km'])}.csv")
    assert header == ["label"]
    np.testing.assert_array_equal(np.array([int(r[0]) for r in rows]), exp["km"].labels)
    header, rows = _read_out(out / f"{run_output_name(exp['svm'])}.csv")
    assert [r[0] for r in rows] == [str(v) for v in exp["svm"].labels]
    saved = json.loads((out / f"{run_output_name(exp['svm'])}_evaluation.json").read_text())
    assert saved["fold_accuracy"] == exp["eval"].fold_accuracy.tolist()
    assert saved["n_splits"] == 5 and saved["random_state"] == 11
    assert np.array(saved["confusion"]).tolist() == exp["eval"].confusion.tolist()


def test_a_preparation_chain_becomes_make_pipeline_and_runs(session, tmp_path):
    import manifold_studio as ms

    iso, svm = session._expected["iso"], session._expected["svm"]
    iso.meta["chain"] = [["standardize", {}]]
    svm.meta["chain"] = [["standardize", {}], ["minmax", {}]]
    text = session_script(session)
    assert [(r["algorithm"], r["chain"]) for r in script_spec(text)["runs"]][0] == ("isomap", [["standardize", {}]])
    script = tmp_path / "chain.py"
    script.write_text(text)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    ds = session.current_dataset
    want = ms.make_pipeline("standardize", ms.get_algorithm("isomap", **iso.params)).fit(ds.X).embedding_
    _, rows = _read_out(tmp_path / "out" / f"{run_output_name(iso)}.csv")
    np.testing.assert_allclose(np.array(rows, float), want, rtol=0, atol=1e-9)
    res = evaluate(lambda: ms.make_pipeline("standardize", "minmax", ms.get_algorithm("svm", **svm.params)),
                   ds.X, ds.labels, KFOLD, n_splits=5, random_state=11)
    saved = json.loads((tmp_path / "out" / f"{run_output_name(svm)}_evaluation.json").read_text())
    assert saved["fold_accuracy"] == res.fold_accuracy.tolist()


def test_script_export_when_nothing_has_run_says_so(tmp_path):
    s = Session()
    s.load(str(_write_csv(tmp_path / "points.csv")), label_column="kind")
    with pytest.raises(NothingToExport, match="no run has finished"):
        session_script(s)
    proj = save_project(s, tmp_path / "empty.msproj")
    assert cli_main(["script", str(proj), "-o", str(tmp_path / "a.py")]) == 2
    assert not (tmp_path / "a.py").exists()


def test_cli_script_writes_the_script(session, tmp_path, capsys):
    proj = save_project(session, tmp_path / "p.msproj")
    assert cli_main(["script", str(proj), "-o", str(tmp_path / "a.py")]) == 0
    text = (tmp_path / "a.py").read_text()
    compile(text, "a.py", "exec")
    spec = script_spec(text)
    assert "run2 = fit_run(SPEC['runs'][1], data1, source=run1)" in text  # k-means is fitted on the isomap map
    assert spec["runs"][1]["algorithm"] == "kmeans" and spec["runs"][1]["needs_labels"] is False
    assert spec["datasets"][0]["options"]["roles"]["d"] == "meta"  # the role changed in the session


def test_a_data_set_made_in_the_session_is_left_out_with_its_runs(session):
    sub = session.current_dataset.subset(np.arange(30), name="first 30")
    sub.source = ""
    session.add_dataset(sub)
    session.run("pca", n_components=2)
    text = session_script(session)
    compile(text, "analysis.py", "exec")
    notes = script_spec(text)["notes"]
    assert "Data set 'first 30' was made in the session" in notes[0]
    assert any("was fitted on data set 'first 30', which the script cannot load" in n for n in notes)
    assert [d["name"] for d in script_spec(text)["datasets"]] == ["points"]


def test_a_test_and_score_with_a_chain_is_reproduced_by_the_script(tmp_path):
    """Load a CSV, standardize, Test & Score of an SVM and the perceptron on 5 folds (as the
    window does it: each learner the run's pipeline bound to the data set's columns): the script
    written from the saved project repeats it in a fresh process with the same numbers."""
    import manifold_studio as ms
    from manifold_studio.evaluation import compare_learners
    from manifold_studio.project.analysis_records import comparison_record
    from manifold_studio.analysis.chain import chained_estimator

    s = Session()
    ds = s.load(str(_write_csv(tmp_path / "points.csv", n=120, seed=5)), label_column="kind")
    chain = [("standardize", {})]
    learners = [chained_estimator(chain, ms.get_algorithm("svm", C=2.0, kernel="rbf"), ds),
                chained_estimator(chain, ms.get_algorithm("perceptron", max_epochs=40), ds)]
    c = compare_learners(learners, ds.X, ds.labels, cv=5, seed=3, names=["svm", "perceptron"])
    assert c.preparation() == "standardize"
    doc, arrays = comparison_record(c)
    doc["dataset"] = ds.name
    proj = save_project(s, tmp_path / "scored.msproj", analyses={"test_score": (doc, arrays)})
    script = write_script(proj, tmp_path / "analysis.py")
    text = script.read_text()
    assert "comparison = test_and_score(SPEC['test_score'], data1)" in text
    assert [a["chain"] for a in script_spec(text)["test_score"]["learners"]] == [[["standardize", {}]]] * 2
    out = tmp_path / "results"
    done = subprocess.run([sys.executable, str(script), str(out)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    saved = json.loads((out / "test_score.json").read_text())
    assert saved["preparation"] == "standardize"
    assert [te for _, te in saved["folds"]] == [te.tolist() for _, te in c.folds]
    assert list(saved["learners"]) == ["svm", "perceptron"]
    for r in c.learners:
        mine = saved["learners"][r.name]
        for m, values in r.fold_metrics.items():
            if not m.endswith("_time"):
                np.testing.assert_array_equal(np.array(mine["fold_metrics"][m], float), values)
        assert mine["predictions"] == r.predictions.tolist()
        assert mine["pooled_auc"] == c.pooled_auc(r.name)
