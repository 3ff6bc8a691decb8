"""The project's ``form_values`` field (the settings forms' values per method) and the seed a run
drew: both survive a save and a read; a damaged field is dropped with a note, nothing else lost."""
import json

import numpy as np

from manifold_studio.files.model_file import atomic_savez
from manifold_studio.project.project_file import META_KEY, read_project, save_project
from manifold_studio.session.model import Session


def _session():
    s = Session()
    s.load("sample:iris")
    s.run("kmeans", n_clusters=3, n_init=1, random_state=None)   # a random seed, chosen explicitly
    s.run("kmeans", n_clusters=3, n_init=1)                      # the default seed, 0
    return s


def test_form_values_and_drawn_seeds_round_trip(tmp_path):
    s = _session()
    drawn, fixed = list(s.runs.values())
    assert drawn.params["random_state"] is None and fixed.params["random_state"] == 0
    seed = drawn.estimator.random_state_used_
    assert drawn.summary["random_state_used"] == seed and fixed.summary["random_state_used"] == 0
    values = {"tsne": {"perplexity": 12.0, "random_state": None}, "mlp": {"hidden_layer_sizes": [8, 4]}}
    path = save_project(s, tmp_path / "p.msproj", {"algorithm": "tsne"}, form_values=values)
    contents = read_project(path)
    assert contents.form_values == values and contents.problems == []
    again = list(contents.session.runs.values())
    assert again[0].summary["random_state_used"] == seed and again[0].params["random_state"] is None
    assert again[0].estimator.random_state_used_ == seed                       # with the saved model
    np.testing.assert_array_equal(again[0].labels, drawn.labels)


def test_a_project_without_form_values_or_with_a_damaged_field_opens(tmp_path):
    s = _session()
    path = save_project(s, tmp_path / "p.msproj")
    assert read_project(path).form_values == {}
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(str(arrays[META_KEY]))
    for damaged, note in (({"kmeans": [1, 2]}, "settings of 'kmeans' are not a table"),
                          (["not", "a", "table"], "(form_values) are not a table")):
        meta["form_values"] = damaged
        arrays[META_KEY] = np.array(json.dumps(meta))
        atomic_savez(path, arrays)
        contents = read_project(path)
        assert contents.form_values == {} and any(note in p for p in contents.problems)
        assert len(contents.session.runs) == 2                                 # nothing else lost
