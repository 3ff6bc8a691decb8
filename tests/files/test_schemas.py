"""Strict schemas for model and project files (issue 18, item 4): the JSON documents are
checked against declared schemas and the fitted state against the algorithm's declared state
(names derived from its code, shape relations, kinds, finite values) before anything is
restored; a project whose results do not fit its data sets opens with the run marked damaged."""
import json
import re
import shutil

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms import ClusteringAlgorithm, Int
from manifold_studio.algorithms.state_schema import Fitted, StateError, declared_state, validate_state
from manifold_studio.files import schemas
from manifold_studio.files.model_file import ModelFileError, load_model, save_model
from manifold_studio.project.project_file import read_project, save_project
from manifold_studio.session.model import DONE, FAILED, Session

from hostile_files import PROJECT_KEY, drop_member, edit_document, set_member


@pytest.fixture(scope="module")
def pca_model(tmp_path_factory):
    X = np.random.default_rng(0).normal(size=(40, 5))
    return save_model(ms.get_algorithm("pca", n_components=2).fit(X), tmp_path_factory.mktemp("m") / "base.npz")


@pytest.fixture
def model(pca_model, tmp_path):
    return shutil.copy(pca_model, tmp_path / "m.npz")


@pytest.fixture(scope="module")
def base_project(tmp_path_factory):
    s = Session()
    s.load("sample:iris")
    pca = s.run("pca", n_components=2)
    s.extend(pca.id, rows=np.arange(10))
    s.run("kmeans", n_clusters=3, random_state=0)
    return save_project(s, tmp_path_factory.mktemp("p") / "base.msproj")


@pytest.fixture
def project(base_project, tmp_path):
    return shutil.copy(base_project, tmp_path / "p.msproj")


def refused(path, pattern, reader=load_model):
    with pytest.raises(ModelFileError) as info:
        reader(path)
    message = str(info.value)
    assert "\n" not in message and len(message) < 400, message
    assert re.search(pattern, message), message
    for leak in ("Traceback", "TypeError", "RecursionError", "internal error", "operands could not be broadcast"):
        assert leak not in message
    return message


# -- model header -------------------------------------------------------------------------------
@pytest.mark.parametrize("edit, pattern", [
    (lambda d: d.update(params=[1, 2]), r"m\.npz: the model description is invalid: field 'params' must be an "
                                        r"object, not a list \[1, 2\]"),
    (lambda d: '{"a":' * 100_000 + "1" + "}" * 100_000, r"m\.npz: the model description is nested more than 64 levels"),
    (lambda d: d.update(format_version="1"), r"m\.npz: the model description's field 'format_version' must be a whole "
                                             r"number, not str '1'"),
    (lambda d: d.update(format_version=True), r"'format_version' must be a whole number, not bool True"),
    (lambda d: d.update(scalars=[1]), r"field 'scalars' must be an object"),
    (lambda d: d.update(algorithm=5), r"field 'algorithm' must be text, not a whole number 5"),
    (lambda d: d.update(training_data={"feature_names": "abc"}), r"field 'training_data\.feature_names' must be a list"),
    (lambda d: d.pop("algorithm") and None, r"field 'algorithm' is missing"),
    (lambda d: "{not json", r"the model description is not valid JSON \(it breaks off or is malformed at character 1\)"),
    (lambda d: "[1, 2]", r"the model description is not in the manifold-studio-model format"),
])
def test_malformed_model_headers_are_named(model, edit, pattern):
    edit_document(model, edit)
    refused(model, pattern)


def test_a_newer_format_still_asks_for_an_update(model):
    edit_document(model, lambda d: d.update(format_version=2))
    refused(model, r"m\.npz was written in model format version 2 .* this version reads format 1: update")


# -- fitted state ---------------------------------------------------------------------------------
def test_a_pca_model_claiming_to_be_kmeans_is_refused(model):
    edit_document(model, lambda d: d.update(algorithm="kmeans"))
    refused(model, r"the model says it is of kind 'embedding', but kmeans is a clustering algorithm")
    edit_document(model, lambda d: d.update(algorithm="kmeans", kind="clustering"))
    refused(model, r"member '(mean_|components_|\w+)' is not a fitted attribute of a kmeans model")


@pytest.mark.parametrize("name", ["__dict__", "__class__", "_p", "extend", "n_components", "fit_"])
def test_undeclared_members_are_refused_unread(model, name):
    set_member(model, f"state/{name}", np.ones(3))
    refused(model, rf"member '{name}' is not a fitted attribute of a pca model")


@pytest.mark.parametrize("name", ["__dict__", "n_components", "extend_"])
def test_undeclared_scalars_are_refused(model, name):
    edit_document(model, lambda d: d["scalars"].update({name: 7}))
    refused(model, rf"member '{name}' is not a fitted attribute of a pca model")


def test_a_model_full_of_nan_is_refused(model):
    set_member(model, "state/components_", np.full((2, 5), np.nan))
    refused(model, r"m\.npz: member 'components_' holds NaN or infinite values")
    set_member(model, "state/components_", np.ones((2, 5)))
    set_member(model, "state/mean_", np.array([1, 2, np.inf, 4, 5]))
    refused(model, r"member 'mean_' holds NaN or infinite values")


def test_tampered_shapes_name_the_member_not_numpy(model):
    set_member(model, "state/components_", np.ones((5, 7)))
    refused(model, r"m\.npz: member 'components_' has shape \(5, 7\), but its axis 0 should have 2 "
                   r"\(n_components_ is 2\)")
    set_member(model, "state/components_", np.ones((2, 5)))
    set_member(model, "state/mean_", np.ones(4))
    refused(model, r"member 'mean_' has shape \(4,\), but its axis 0 should have 5 \(n_features_in_ is 5\)")
    set_member(model, "state/mean_", np.ones((5, 1)))
    refused(model, r"member 'mean_' has 2 dimension\(s\) \(5, 1\); a pca model has 1")


def test_wrong_kinds_and_types_are_named(model):
    set_member(model, "state/components_", np.array([["a"] * 5] * 2))
    refused(model, r"member 'components_' has type <U1; allowed kinds: bool, integer, unsigned integer, float")
    drop_member(model, "state/components_")
    refused(model, r"member 'components_' is missing: a pca model needs it")


def test_wrong_scalars_are_named(pca_model, tmp_path):
    for edit, pattern in (
            (lambda d: d["scalars"].update(n_features_in_="5"), r"member 'n_features_in_' must be a whole number"),
            (lambda d: d["scalars"].update(n_features_in_=0), r"'n_features_in_' must be a positive whole number"),
            (lambda d: d["scalars"].update(total_variance_={"a": 1}), r"member 'total_variance_' must be a number"),
            (lambda d: d["params"].update(n_components="two"), r"parameter 'n_components'"),
            (lambda d: d["scalars"].pop("n_features_in_") and None, r"member 'n_features_in_' is missing")):
        path = shutil.copy(pca_model, tmp_path / "m.npz")
        edit_document(path, edit)
        refused(path, pattern)


class Centres(ClusteringAlgorithm):
    """A third-party style algorithm that declares nothing: its names are derived from its code."""

    id = "test_schema_centres"
    name = "Centres (test)"
    help = "Test algorithm."
    params = (Int("n_clusters", 2, "clusters", low=1),)

    def _fit(self, X, y, progress):
        self.centres_ = X[:self._p["n_clusters"]].copy()
        self.labels_ = self._extend(X)

    def _extend(self, X):
        return np.argmin(((X[:, None, :] - self.centres_[None]) ** 2).sum(-1), axis=1)


def test_declared_state_is_derived_from_the_code():
    names = declared_state(Centres)
    assert {"centres_", "labels_", "n_features_in_", "fit_time_"} <= set(names)
    assert not {"_p", "n_clusters", "__dict__", "fit", "is_fitted"} & set(names)
    assert "n_classes_" not in declared_state(ms.algorithm_class("svm"))  # a property, not state
    est = Centres().fit(np.arange(12.0).reshape(6, 2))
    with pytest.raises(StateError, match=r"'__dict__' is not a fitted attribute of test_schema_centres"):
        Centres().restore_state({"__dict__": {}, "n_features_in_": 2})
    with pytest.raises(StateError, match=r"'n_clusters' is not a fitted attribute"):
        Centres().restore_state({"n_clusters": 9, "n_features_in_": 2})
    other = Centres().restore_state(est.fitted_state())
    np.testing.assert_array_equal(other.extend(np.arange(12.0).reshape(6, 2)), est.labels_)


def test_shape_symbols_bind_across_members():
    class Declared(Centres):
        id = "test_schema_declared"
        fitted_schema = {"centres_": Fitted(shape=("n_clusters", "n_features_in_"), required=True),
                         "labels_": Fitted(shape=("n_train",), kinds="iu"),
                         "weights_#": Fitted(shape=("n_train",), scalar=False)}

    state = {"n_features_in_": 2, "centres_": np.ones((2, 2)), "labels_": np.zeros(5, int),
             "weights_0": np.ones(5), "weights_1": np.ones(4)}
    with pytest.raises(StateError, match=r"member 'weights_1' has shape \(4,\), but its axis 0 should have 5 "
                                         r"\(n_train, as in member 'labels_'\)"):
        validate_state(Declared, {"n_clusters": 2}, state)
    state["weights_1"] = np.ones(5)
    validate_state(Declared, {"n_clusters": 2}, state)
    with pytest.raises(StateError, match=r"'centres_' has shape \(2, 2\), but its axis 0 should have 3 "
                                         r"\(n_clusters is 3\)"):
        validate_state(Declared, {"n_clusters": 3}, state)
    with pytest.raises(StateError, match=r"member 'weights_1' must be an array"):
        validate_state(Declared, {"n_clusters": 2}, {**state, "weights_1": 1.0})


@pytest.mark.parametrize("algorithm_id", sorted(ms.list_algorithms()))
def test_every_builtin_state_meets_its_declared_schema(algorithm_id):
    cls = ms.algorithm_class(algorithm_id)
    rng = np.random.default_rng(1)
    X = np.abs(np.vstack([rng.normal(size=(25, 4)), rng.normal(size=(25, 4)) + 6]))  # NMF: X >= 0
    y = np.array(["a", "b"])[np.arange(50) % 2] if cls.requires_labels else None
    if algorithm_id == "ranking_svm":
        y = np.arange(50) % 3  # relevance grades
    est = ms.get_algorithm(algorithm_id).fit(X, y)
    validate_state(cls, est.validate_params(), est.fitted_state())
    assert any(spec.shape is not None for spec in declared_state(cls).values()), "no shape relation declared"


# -- project documents --------------------------------------------------------------------------
def read(path):
    return read_project(path)


@pytest.mark.parametrize("edit, pattern", [
    (lambda d: d.update(view_settings=[1]), r"field 'view_settings' must be an object, not a list \[1\]"),
    (lambda d: d["runs"][0].update(id="one"), r"field 'runs\[0\]\.id' must be a whole number, not text 'one'"),
    (lambda d: d.update(datasets={}), r"field 'datasets' must be a list"),
    (lambda d: d.pop("runs"), r"field 'runs' is missing"),
    (lambda d: d.update(format_version="1"), r"field 'format_version' must be a whole number, not str '1'"),
    (lambda d: '{"format": "manifold-studio-project", "x": ' + "[" * 100_000 + "]" * 100_000 + "}",
     r"the project description is nested more than 64 levels deep"),
    (lambda d: d["datasets"][0].update(X="nope"), r"field 'datasets\[0\]\.X' refers to member 'nope', which the "
                                                  r"file does not hold"),
    (lambda d: d["runs"][0].update(status="running"), r"field 'runs\[0\]\.status' must be one of done, failed, cancelled"),
    (lambda d: d["runs"].append(d["runs"][0]), r"field 'runs\[2\]\.id': run #1 appears twice"),
    (lambda d: d.update(history=[{"time": "x"}]), r"field 'history\[0\]\.time' must be a number"),
    (lambda d: d["runs"][0]["model"].update(params=[1]), r"field 'runs\[0\]\.model\.params' must be an object"),
    (lambda d: d["datasets"][0].update(feature_names=["a"]), r"datasets\[0\] \('Iris'\) is damaged: .*1 feature "
                                                            r"names for 4 columns"),
    (lambda d: d.update(current_run="1"), r"field 'current_run' must be a whole number or null, not text '1'"),
])
def test_malformed_project_documents_are_named(project, edit, pattern):
    edit_document(project, edit, PROJECT_KEY)
    message = refused(project, pattern, read)
    assert message.startswith("p.msproj")


def test_results_that_do_not_fit_their_data_set_mark_the_run_damaged(project):
    set_member(project, "run/1/embedding", np.ones((3, 2)))
    contents = read_project(project)
    run = contents.session.runs[1]
    assert run.status == FAILED and run.embedding is None and run.estimator is None
    assert run.error == ("Damaged in p.msproj: its embedding has 3 rows for the 150 rows of data set 'Iris'; "
                         "its results were dropped.")
    assert contents.problems == ["Run #1 (pca) is damaged: its embedding has 3 rows for the 150 rows of data set "
                                 "'Iris'; it is marked failed and its results were dropped."]
    assert contents.session.runs[2].status == DONE  # the other run is intact


def test_damaged_labels_extensions_and_models_are_named(project):
    set_member(project, "run/2/labels", np.ones(3, int))
    set_member(project, "run/1/ext/0/values", np.ones((4, 2)))
    set_member(project, "run/1/model/components_", np.full((2, 4), np.nan))
    contents = read_project(project)
    assert contents.session.runs[2].status == FAILED
    assert contents.session.runs[1].status == DONE and contents.session.runs[1].extensions == []
    assert contents.problems == [
        "Run #1 (pca): its extension 'Iris (10 points)' is damaged and was dropped: its extension has 4 rows for "
        "the 10 rows it was fitted on.",
        "Run #1 (pca): its results are kept but its model cannot be restored: p.msproj (run #1): member "
        "'components_' holds NaN or infinite values, which a fitted model cannot have.",
        "Run #2 (kmeans) is damaged: its labels have 3 rows for the 150 rows of data set 'Iris'; it is marked "
        "failed and its results were dropped."]


def test_a_run_model_of_another_algorithm_is_dropped(project):
    edit_document(project, lambda d: d["runs"][0]["model"].update(algorithm="kmeans", kind="clustering"),
                  PROJECT_KEY)
    contents = read_project(project)
    assert contents.session.runs[1].estimator is None and contents.session.runs[1].embedding.shape == (150, 2)
    assert "its model is of algorithm 'kmeans', not the run's 'pca'" in contents.problems[0]


def test_schema_checker_names_nested_fields():
    schema = {"a": schemas.Field(("list",), required=True, items={"b": schemas.Field(("int",), min=0)})}
    schemas.check({"a": [{"b": 1}, {"b": 2}]}, schema)
    with pytest.raises(schemas.SchemaError, match=r"field 'a\[1\]\.b' must be at least 0, not -1"):
        schemas.check({"a": [{"b": 1}, {"b": -1}]}, schema)
    with pytest.raises(schemas.SchemaError, match=r"nested more than 64 levels"):
        schemas.parse_json("[" * 65 + "]" * 65, "document")
    text = json.dumps({"s": "[" * 70 + '\\"'})
    assert schemas.parse_json(text, "document") == {"s": "[" * 70 + '\\"'}  # brackets in strings do not count


# -- the window ----------------------------------------------------------------------------------
def test_the_window_opens_a_damaged_project_with_the_run_named(qtbot, make_window, project):
    from gui_helpers import wait_idle
    from manifold_studio.plugins.host import PluginHost

    set_member(project, "run/1/embedding", np.ones((3, 2)))
    w = make_window(PluginHost().discover(), dialogs=False)
    w.project.open_project(project)
    wait_idle(qtbot, w)
    assert list(w.session.datasets) == ["Iris"] and w.session.runs[1].status == FAILED
    assert any(e.level == "warning" and "Run #1 (pca) is damaged: its embedding has 3 rows" in e.message
               for e in w.session.history)
    assert "1 problem(s), see the log" in w.statusBar().currentMessage()
    w.session.set_current_run(1)  # selecting the damaged run shows no view error
    wait_idle(qtbot, w)
    assert not any(e.level == "error" for e in w.session.history)
    assert json.dumps([e.message for e in w.session.history])  # the log stays plain text
