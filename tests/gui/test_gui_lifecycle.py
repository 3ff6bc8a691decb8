"""One lifecycle (issue 30, item 2): the window runs the specs the session creates.

- A sparse data set extends in the window for every method that takes sparse input, through the
  same extension path as the session's (the window used to densify and fail with "setting an
  array element with a sequence").
- A running fit's partial result reaches the map through its public ``MapView.show_partial``.
"""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from gui_helpers import discovered_host, wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.gui.fit_partials import route_partial, router_for  # noqa: E402
from manifold_studio.session.lifecycle import prepare_extension  # noqa: E402
from manifold_studio.session.model import Session  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402

WINDOW_DIALOGS = False
#: the methods that take sparse input (every one: test_every_method_that_takes_sparse_input_is_here), with
#: parameters that fit 60 rows quickly and meet their sparse condition
SPARSE_METHODS = (("pca", {"n_components": 2}), ("nmf", {"n_components": 2}), ("kmeans", {"n_clusters": 2}),
                  ("svm", {}), ("perceptron", {}), ("linear_classifier", {}),
                  ("kernel_pca", {"kernel": "linear", "n_components": 2}), ("mlp", {"max_iter": 50}),
                  ("isomap", {"n_neighbors": 10}), ("lle", {"n_neighbors": 10}),
                  ("laplacian_eigenmaps", {"n_neighbors": 10}), ("spectral_clustering", {"n_clusters": 2}),
                  ("tsne", {"perplexity": 10.0, "max_iter": 250}), ("umap", {"n_neighbors": 10, "n_epochs": 50}))
#: numba compiles their loops on the first fit of a process (several seconds)
SLOW = {"tsne", "umap"}


@pytest.fixture(scope="module")
def host():
    return discovered_host(tuple(a for a, _p in SPARSE_METHODS))


def _sparse(name: str, n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    X = sp.random(n, 30, density=0.2, random_state=seed, format="csr") * 4.0
    y = rng.integers(0, 2, n)
    X = X + sp.csr_matrix((y[:, None] * np.eye(1, 30, 0)) * 3.0)  # the class shows in column 0
    return Dataset(name, sp.csr_matrix(X), labels=y, label_name="class")


def _session(host) -> Session:
    s = Session(host)
    s.add_dataset(_sparse("train", 60, 0))
    s.add_dataset(_sparse("new", 25, 1), make_current=False)
    s.set_current_dataset("train")
    return s


def test_every_method_that_takes_sparse_input_is_here(host):
    takes_sparse = {aid for aid, cls in host.algorithms.items() if cls.accepts_sparse}
    assert takes_sparse <= {a for a, _p in SPARSE_METHODS}, sorted(takes_sparse - {a for a, _p in SPARSE_METHODS})


@pytest.mark.parametrize("algo,params", [pytest.param(a, p, marks=[pytest.mark.slow] if a in SLOW else [],
                                                      id=a if a != "kernel_pca" else "kernel_pca_linear")
                                         for a, p in SPARSE_METHODS])
def test_sparse_data_extends_in_the_window_as_in_the_session(qtbot, make_window, host, algo, params):
    w = make_window(host, _session(host), initial_algorithm=None)
    assert w.session.dataset("new").is_sparse
    run = w.run_algorithm(algo, dict(params), "train")
    assert run is not None
    run = wait_last_run(qtbot, w, DONE)
    panel = w.views["extend"]
    with qtbot.waitSignal(panel.extended, timeout=20_000) as sig:
        assert panel.extend_rows(run, "new") is not None
    ext = sig.args[0]
    wait_idle(qtbot, w)
    # the session's own extension of the same model gives the same values
    expected = prepare_extension(w.session, run.id, "new")().values
    assert ext.dataset_name == "new" and len(ext.values) == 25
    np.testing.assert_allclose(np.asarray(ext.values, dtype=float), np.asarray(expected, dtype=float))
    assert w.session.runs[run.id].extensions == [ext]


@pytest.mark.parametrize("algo,params", [("pca", {"n_components": 2}), ("svm", {})])
def test_a_sparse_file_extends_in_the_window(qtbot, make_window, host, tmp_path, algo, params):
    """Extend ▸ a Matrix Market file: read in chunks, the rows kept as a sparse data set."""
    import scipy.io

    new = _sparse("new", 25, 1)
    scipy.io.mmwrite(tmp_path / "more.mtx", sp.csr_matrix(new.X))
    w = make_window(host, _session(host), initial_algorithm=None)
    w.run_algorithm(algo, dict(params), "train")
    run = wait_last_run(qtbot, w, DONE)
    panel = w.views["extend"]
    with qtbot.waitSignal(panel.extended, timeout=20_000) as sig:
        assert panel.extend_file(tmp_path / "more.mtx", ask=False) is not None
    wait_idle(qtbot, w)
    ext = sig.args[0]
    np.testing.assert_allclose(np.asarray(ext.values, dtype=float), np.asarray(run.estimator.extend(new.X), dtype=float))
    kept = w.session.datasets["more"]
    assert kept.is_sparse and kept.X.shape == (25, 30) and w.session.current_dataset.name == "train"


def test_a_partial_result_reaches_the_map_through_its_public_method(qtbot, make_window, host):
    w = make_window(host, _session(host), initial_algorithm=None)
    dense = Dataset("dense", np.random.default_rng(2).normal(size=(80, 4)), labels=np.arange(80) % 3)
    w.session.add_dataset(dense)
    view = w.map_view
    calls = []
    original = view.show_partial

    def counting(run, values, dataset=None):
        calls.append((run.id, np.array(values)))
        return original(run, values, dataset)

    view.show_partial = counting
    run = w.session.create_run("tsne", {"max_iter": 250}, "dense")
    w.session.start_run(run.id)
    router = router_for(w)
    rng = np.random.default_rng(4)
    frames = [rng.normal(size=(80, 2)) for _ in range(3)]
    for Y in frames:
        route_partial(w, run.id, Y)
        qtbot.waitUntil(lambda: not router.pending and not router.timer.isActive(), timeout=5_000)
        assert np.array_equal(view.xy, Y) and view.point_count() == 80
    assert [rid for rid, _ in calls] == [run.id] * 3
    assert all(np.array_equal(got, Y) for (_rid, got), Y in zip(calls, frames))
    assert view.previewing_run == run.id and "running" in view.title_label.text()
    route_partial(w, run.id, np.zeros((7, 2)))  # not the run's points: no preview, nothing logged
    qtbot.waitUntil(lambda: not router.pending and not router.timer.isActive(), timeout=5_000)
    assert np.array_equal(view.xy, frames[-1])
    assert not any(e.level == "warning" for e in w.session.history)
    w.session.cancel_run(run.id)


def test_k_means_steps_recolour_the_map_of_the_same_points(qtbot, make_window, host):
    w = make_window(host, _session(host), initial_algorithm=None)
    X = np.vstack([np.random.default_rng(5).normal(c, 0.3, size=(40, 2)) for c in (0.0, 3.0, 6.0)])
    w.session.add_dataset(Dataset("blobs", X))
    w.run_algorithm("pca", {"n_components": 2}, "blobs")
    wait_last_run(qtbot, w, DONE)
    wait_idle(qtbot, w)
    view = w.map_view
    steps = []
    original = view.show_partial_labels

    def counting(run, labels, rows):
        shown = original(run, labels, rows)
        steps.append((shown, np.array(labels), view.coloring.codes.copy()))
        return shown

    view.show_partial_labels = counting
    run = w.session.create_run("kmeans", {"n_clusters": 3, "random_state": 0}, "blobs")
    w.session.start_run(run.id)
    step = np.repeat([2, 0, 1], 40)
    drawn = view._item
    route_partial(w, run.id, {"labels": step, "iteration": 1})
    assert steps and steps[0][0]  # drawn at once: the first preview of a run
    # only the drawn item's brushes change: no full redraw (~100 ms of the event loop at 20,000 points)
    assert view._item is drawn and np.array_equal(view._run_labels, step)
    assert len({b.color().name() for b in drawn.data["brush"]}) == 3
    _shown, labels, codes = steps[0]
    # the colours partition the points as the step's labels do
    assert len({(a, b) for a, b in zip(labels, codes)}) == 3 == len(set(codes))
    assert view.previewing_run == run.id and "running" in view.title_label.text()
    w.session.cancel_run(run.id)
    w.show_run(w.session.current_run)
    assert view.previewing_run is None
    # a real k-means fit in the window publishes its steps to the same method
    steps.clear()
    w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0, "n_init": 1}, "blobs")
    done = wait_last_run(qtbot, w, DONE)
    assert steps and all(shown for shown, _l, _c in steps)
    assert view.previewing_run is None and np.array_equal(view.color_labels, done.labels)
