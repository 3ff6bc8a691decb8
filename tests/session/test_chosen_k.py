"""Which run a chosen k cuts (issue 30, What to build 4; session/chosen_k.py): a finished run of
the same method on the same input (data set, preparation chain, all rows) with the same
parameters but k, whose tree has at least k leaves; a method without a tree gets a new run."""
from __future__ import annotations

import numpy as np

from manifold_studio.session.chosen_k import plan_chosen_k
from manifold_studio.session.model import Session


def test_plan_cuts_only_a_run_of_the_same_input_and_parameters():
    s = Session()
    s.load("sample:wine")
    name = s.current_dataset_name
    ward = s.run("hierarchical", n_clusters=3, method="ward")
    plan = plan_chosen_k(s, "hierarchical", {"method": "ward"}, 4, dataset_name=name)
    assert plan.cuts and plan.run is ward and plan.params["n_clusters"] == 4
    assert f"Run #{ward.id}" in plan.why and "no refit" in plan.why
    s.cut(ward.id, n_clusters=4)   # the command the dendrogram's cut uses
    assert np.unique(ward.cut_labels).size == 4 and ward.meta["cut"]["n_clusters"] == 4
    other = plan_chosen_k(s, "hierarchical", {"method": "average"}, 4, dataset_name=name)
    assert not other.cuts and "No finished" in other.why and other.params == {"method": "average", "n_clusters": 4}
    chained = plan_chosen_k(s, "hierarchical", {"method": "ward"}, 4, dataset_name=name,
                            chain=[("standardize", {})])
    assert not chained.cuts  # the run was fitted on the raw data
    too_many = plan_chosen_k(s, "hierarchical", {"method": "ward"}, 179, dataset_name=name)
    assert not too_many.cuts  # wine has 178 rows
    km = plan_chosen_k(s, "kmeans", {}, 4, dataset_name=name)
    assert not km.cuts and "cannot be cut" in km.why and km.params == {"n_clusters": 4}


def test_a_divisive_tree_is_cut_only_into_at_most_its_clusters():
    s = Session()
    s.load("sample:iris")
    div = s.run("hierarchical", n_clusters=4, method="divisive", random_state=0)
    params = {"method": "divisive", "random_state": 0}
    assert plan_chosen_k(s, "hierarchical", params, 2, dataset_name=div.dataset_name).run is div
    assert not plan_chosen_k(s, "hierarchical", params, 5, dataset_name=div.dataset_name).cuts
