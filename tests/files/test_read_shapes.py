"""Readers validate shapes (issue 29): a report item of the wrong shape is left out with a note
and the project still opens (for the window, ``script`` and ``replay``); a saved Test & Score of
the wrong shape is left out too; a run's chain of the wrong shape refuses the project, naming
the field."""
from __future__ import annotations

import shutil

import numpy as np
import pytest
from hostile_files import PROJECT_KEY, edit_document, set_member

from manifold_studio.reproduce.replay import replay
from manifold_studio.analysis.report import PNG_SIGNATURE, data_item, run_item
from manifold_studio.reproduce.script_export import write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.cli.main import main as cli_main
from manifold_studio.files.model_file import ModelFileError
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import Session

PNG = PNG_SIGNATURE + b"rest of a figure"


@pytest.fixture
def project(tmp_path):
    s = Session()
    ds = s.load("sample:iris")
    run = s.run("pca", n_components=2)
    s.report.add(data_item(ds, caption="first"))
    s.report.add(run_item(run, caption="second", image=PNG))
    return save_project(s, tmp_path / "p.msproj"), run


MALFORMED = [  # (what, item)
    ("facts of three", {"kind": "run", "title": "three", "facts": [["a", "b", "c"]]}),
    ("facts of one", {"kind": "run", "title": "one", "facts": [["a"]]}),
    ("facts as text", {"kind": "run", "title": "text", "facts": "a, b"}),
    ("a fact not text", {"kind": "run", "title": "number", "facts": [["a", 3]]}),
    ("no title", {"kind": "view", "facts": []}),
    ("not an object", ["kind", "title"]),
    ("a figure not stored", {"kind": "view", "title": "lost", "image": "report/9/png"}),
    ("a figure of floats", {"kind": "view", "title": "floats", "image": "report/7/png"}),
]


def test_malformed_report_items_are_left_out_and_the_project_opens(project, tmp_path):
    path, run = project
    def insert(doc):
        doc["report"][1:1] = [item for _, item in MALFORMED]

    edit_document(path, insert, PROJECT_KEY)
    set_member(path, "report/7/png", np.linspace(0, 1, 8))
    contents = read_project(path)
    items = contents.session.report.items
    assert [it.caption for it in items] == ["first", "second"]  # the good ones, in order
    assert items[1].image == PNG and items[1].facts[0][0] == "Method"
    notes = [p for p in contents.problems if p.startswith("Report item")]
    assert [int(n.split()[2]) for n in notes] == list(range(2, 2 + len(MALFORMED)))
    assert "must be a list of 2 items, not of 3" in notes[0] and "must be a list of 2 items, not of 1" in notes[1]
    assert "report[3].facts' must be a list, not text" in notes[2]
    assert "report[4].facts[0][1]' must be text" in notes[3]
    assert "report[5].title' is missing" in notes[4] and "report[6] must be an object" in notes[5]
    assert "which the file does not hold" in notes[6] and "is damaged" in notes[7]
    # the script and replay open it too
    script = write_script(path, tmp_path / "analysis.py")
    assert script_spec(script.read_text())["runs"][0]["algorithm"] == "pca"
    shutil.copy(path, tmp_path / "again.msproj")
    assert cli_main(["script", str(tmp_path / "again.msproj"), "-o", str(tmp_path / "b.py")]) == 0
    data = tmp_path / "iris.csv"
    ds = contents.session.current_dataset
    np.savetxt(data, ds.X, delimiter=",", header=",".join(ds.feature_names), comments="")
    result = replay(path, data, tmp_path / "out")
    got = np.loadtxt(result.outputs[0][1], delimiter=",", skiprows=1)[:, 1:]
    np.testing.assert_allclose(got, run.estimator.extend(ds.X), rtol=0, atol=1e-9)


def test_a_saved_test_and_score_of_the_wrong_shape_is_left_out(tmp_path):
    from manifold_studio.project.analysis_records import comparison_record

    s = Session()
    ds = s.load("sample:iris")
    s.run("pca", n_components=2)
    doc, arrays = comparison_record(_comparison(ds))
    doc["dataset"] = ds.name
    path = save_project(s, tmp_path / "p.msproj", analyses={"test_score": (doc, arrays)})
    assert "test_score" in read_project(path).analyses
    edit_document(path, lambda d: d["analyses"]["test_score"]["document"]["learners"][0].update(
        {"chain": [["standardize", {}, "extra"]]}), PROJECT_KEY)
    contents = read_project(path)
    assert "test_score" not in contents.analyses
    assert any("'test_score' is damaged" in p and "chain[0]' must be a list of 2 items" in p
               for p in contents.problems)
    spec = script_spec(write_script(path, tmp_path / "a.py").read_text())
    assert spec["test_score"] is None and [r["algorithm"] for r in spec["runs"]] == ["pca"]


def _comparison(ds):
    import manifold_studio as ms
    from manifold_studio.evaluation import compare_learners

    return compare_learners([ms.get_algorithm("perceptron", max_epochs=10)], ds.X, ds.labels, cv=3, seed=0,
                            names=["p"])


@pytest.mark.parametrize("chain, field", [
    ([["standardize", {}, 1]], "runs[0].meta.chain[0]' must be a list of 2 items"),
    ([["standardize"]], "runs[0].meta.chain[0]' must be a list of 2 items"),
    ([[3, {}]], "runs[0].meta.chain[0][0]' must be text"),
    ("standardize", "runs[0].meta.chain' must be a list"),
])
def test_a_run_chain_of_the_wrong_shape_refuses_the_project_naming_the_field(project, chain, field):
    path, _run = project
    edit_document(path, lambda doc: doc["runs"][0]["meta"].update({"chain": chain}), PROJECT_KEY)
    with pytest.raises(ModelFileError, match=field.replace("[", r"\[").replace("]", r"\]")):
        read_project(path)


def test_a_cut_of_the_wrong_shape_refuses_the_project_naming_the_field(project):
    path, _run = project
    edit_document(path, lambda doc: doc["runs"][0]["meta"].update({"cut": {"n_clusters": "4"}}), PROJECT_KEY)
    with pytest.raises(ModelFileError, match=r"runs\[0\]\.meta\.cut\.n_clusters' must be a whole number"):
        read_project(path)
