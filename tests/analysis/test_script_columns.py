"""The exported script loads tables with their column names and roles, so a chain that names
columns runs there as in the session (issue 29): iris, ``select_columns exclude=[sepal_width]``
then ``log columns=[petal_length]``, PCA and an evaluated SVM behind it."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np

import manifold_studio as ms
from manifold_studio.reproduce.script_export import run_output_name, write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.evaluation import KFOLD, evaluate
from manifold_studio.project.project_file import save_project
from manifold_studio.session.model import Session

CHAIN = [("select_columns", {"exclude": ["sepal_width"]}), ("log", {"columns": ["petal_length"]})]


def _chained_run(s, algorithm, **params):
    run = s.create_run(algorithm, params, chain=CHAIN)
    task = s.fit_task(run)
    s.start_run(run.id)
    return s.complete_run(run.id, task())


def test_a_chain_naming_columns_runs_in_the_script_as_in_the_session(tmp_path):
    s = Session()
    ds = s.load("sample:iris")
    pca = _chained_run(s, "pca", n_components=2)
    svm = _chained_run(s, "svm", C=1.5)
    res = evaluate(lambda: s.run_estimator(svm), ds.X, ds.labels, KFOLD, n_splits=4, random_state=2)
    svm.meta["evaluation"] = {"summary": res.summary(), **res.params}
    # the reference, by hand: the columns left, sepal_width dropped, petal_length through log1p
    X = ds.X[:, [0, 2, 3]].copy()
    X[:, 1] = np.log1p(X[:, 1])
    np.testing.assert_allclose(pca.embedding, ms.get_algorithm("pca", n_components=2).fit(X).embedding_,
                               rtol=0, atol=1e-9)
    script = write_script(save_project(s, tmp_path / "p.msproj"), tmp_path / "analysis.py")
    assert script_spec(script.read_text())["runs"][0]["chain"] == [[s, p] for s, p in CHAIN]
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(tmp_path / "out" / f"{run_output_name(pca)}.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(got, pca.embedding, rtol=0, atol=1e-9)
    labels = np.loadtxt(tmp_path / "out" / f"{run_output_name(svm)}.csv", delimiter=",", skiprows=1, dtype=str)
    assert labels.tolist() == [str(v) for v in svm.labels]
    saved = json.loads((tmp_path / "out" / f"{run_output_name(svm)}_evaluation.json").read_text())
    assert saved["fold_accuracy"] == res.fold_accuracy.tolist() and saved["n_splits"] == 4
