"""The window's Test & Score and Compare clusterings with a third-party part (issue 29 item 3,
issue 30): they run in a worker process, give the numbers an in-process run gives, and a step
that segfaults there ends only the worker, with a message naming the signal."""
from __future__ import annotations

import os

import numpy as np
import pytest

from broken_steps import steps_host  # noqa: F401 (a fixture)
from manifold_studio.analysis.compare_clusterings import compare_on_dataset
from manifold_studio.analysis.compare_learners import compare_learners
from manifold_studio.project.isolated_compare import (
    compare_learners_in_worker,
    compare_on_dataset_in_worker,
    comparison_needs_worker,
)
from manifold_studio.analysis.chain import chained_estimator
from manifold_studio.session.isolated_fit import PluginProcessError
from manifold_studio.session.model import Session




def _learners(host, ds, chain):
    return [chained_estimator(chain, host.algorithm_class(a)(**p), ds)
            for a, p in (("svm", {}), ("linear_classifier", {}))]


def test_test_and_score_with_a_third_party_step_runs_in_a_worker_with_the_same_figures(steps_host):
    s = Session(steps_host)
    ds = s.load("sample:iris")
    chain = [("tp_double", {}), ("standardize", {})]
    learners = _learners(steps_host, ds, chain)
    assert comparison_needs_worker(learners) == ["tp_double"]
    assert comparison_needs_worker(_learners(steps_host, ds, [("standardize", {})])) == []
    got = compare_learners_in_worker(learners, ds.X, ds.labels, names=["svm", "linear"], cv=3, seed=0)
    assert int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()  # the step ran in the worker
    here = compare_learners(_learners(steps_host, ds, chain), ds.X, ds.labels, names=["svm", "linear"], cv=3, seed=0)
    for a, b in zip(got.learners, here.learners):
        assert a.name == b.name
        np.testing.assert_array_equal(a.predictions, b.predictions)
        np.testing.assert_allclose(a.fold_metrics["accuracy"], b.fold_metrics["accuracy"], atol=1e-12)


def test_a_segfaulting_step_ends_only_the_worker_of_test_and_score(steps_host):
    s = Session(steps_host)
    ds = s.load("sample:iris")
    learners = _learners(steps_host, ds, [("tp_segv", {})])
    with pytest.raises(PluginProcessError, match=r"Test & Score.*SIGSEGV.*unaffected"):
        compare_learners_in_worker(learners, ds.X, ds.labels, names=["svm", "linear"], cv=3, seed=0)


def test_compare_clusterings_with_a_third_party_step_in_a_worker(steps_host):
    s = Session(steps_host)
    ds = s.load("sample:iris")
    chain = [("tp_double", {}), ("standardize", {})]
    methods = [("kmeans", {"n_init": 2})]
    assert comparison_needs_worker(methods, chain) == ["tp_double"]
    got = compare_on_dataset_in_worker(methods, ds, range(3, 4), chain=chain, seed=0)
    here = compare_on_dataset(methods, ds, range(3, 4), chain=chain, seed=0)
    assert [r.k for r in got.rows] == [r.k for r in here.rows] == [3]
    for a, b in zip(got.rows, here.rows):
        np.testing.assert_array_equal(a.labels, b.labels)
        assert a.value("silhouette") == pytest.approx(b.value("silhouette"), abs=1e-12)


def test_a_segfaulting_step_ends_only_the_worker_of_compare_clusterings(steps_host):
    s = Session(steps_host)
    ds = s.load("sample:iris")
    methods = [("kmeans", {"n_init": 2})]
    with pytest.raises(PluginProcessError, match=r"Compare clusterings.*SIGSEGV"):
        compare_on_dataset_in_worker(methods, ds, range(2, 3), chain=[("tp_segv", {})], seed=0)


def test_a_run_evaluation_with_a_third_party_step_in_a_worker(steps_host):
    from manifold_studio.project.isolated_compare import evaluation_in_worker
    from manifold_studio.evaluation import KFOLD, evaluate

    s = Session(steps_host)
    s.load("sample:iris")
    run = s.create_run("linear_classifier", {}, chain=[("tp_double", {})])
    est = s.run_estimator(run)
    assert comparison_needs_worker([est]) == ["tp_double"]
    X, y = s.training_data(run)
    got = evaluation_in_worker(est, X, y, KFOLD, n_splits=3, random_state=0)
    assert int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()
    here = evaluate(s.run_estimator(run), X, y, KFOLD, n_splits=3, random_state=0)
    np.testing.assert_allclose(got.fold_accuracy, here.fold_accuracy, atol=1e-12)
    np.testing.assert_array_equal(got.confusion, here.confusion)


def test_a_segfaulting_step_ends_only_the_worker_of_an_evaluation(steps_host):
    from manifold_studio.project.isolated_compare import evaluation_in_worker
    from manifold_studio.evaluation import KFOLD

    s = Session(steps_host)
    s.load("sample:iris")
    crash = s.create_run("linear_classifier", {}, chain=[("tp_segv", {})])
    X, y = s.training_data(crash)
    with pytest.raises(PluginProcessError, match=r"evaluation.*SIGSEGV"):
        evaluation_in_worker(s.run_estimator(crash), X, y, KFOLD, n_splits=3, random_state=0)
