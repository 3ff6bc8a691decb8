"""pytest-qt: the window's views that call a fitted model run a third-party model's code in worker
processes, never in the window's (issue 29): the Reconstruction view refits and decodes there,
the inverse map (which decodes at once, on hover) does not decode such a model, and the neighbours
are not searched in a space prepared by a third-party step. ``tp_decoder`` (a PCA from a plugin
folder) segfaults in ``extend`` and ``inverse_transform`` in any process but its fitting one."""
from __future__ import annotations

import os

import numpy as np
import pytest

from broken_steps import steps_host  # noqa: F401 (a fixture)
from gui_helpers import wait_idle, wait_last_run

pytest.importorskip("pytestqt")

from manifold_studio.analysis.reconstruction import reconstruction_series  # noqa: E402
from manifold_studio.errors import DataError  # noqa: E402
from manifold_studio.gui.views.neighbour_layer import feature_space  # noqa: E402
from manifold_studio.session.records import DONE  # noqa: E402

WINDOW_DIALOGS = False


def _decoder_run(qtbot, w):
    w.session.load("sample:iris")
    w.run_algorithm("tp_decoder", {"n_components": 2})
    run = wait_last_run(qtbot, w, timeout=60_000)
    assert run.meta.get("worker_process") and int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()
    return run


def test_reconstruction_and_inverse_map_of_a_third_party_model_stay_out_of_the_window(qtbot, make_window,
                                                                                     steps_host, monkeypatch):
    w = make_window(steps_host)
    run = _decoder_run(qtbot, w)
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")   # its code crashes anywhere but its fitting process
    # the inverse map decodes on hover, here: it says why it does not, and never calls the model
    inv = w.map_instruments.inverse
    inv._run_changed()
    assert inv.decode_at(0.5, 0.5) is None and "comes from a plugin" in inv.status.text(), inv.status.text()
    # Reconstruction: each refit runs in a worker, each decoding in another: the first one dies
    view = w.views["reconstruction"]
    w.window_layout.open("view:reconstruction")
    assert view.run is run and view.applies_to(run)
    view.points_spin.setValue(view.points_spin.minimum())
    runs = list(w.session.runs)
    with qtbot.waitSignal(view.seriesFailed, timeout=90_000) as failed:
        view.compute()
    assert "SIGSEGV" in failed.args[0] and "tp_decoder" in failed.args[0], failed.args[0]
    wait_idle(qtbot, w)
    assert w.isVisible() and run.status == DONE and list(w.session.runs) == runs


@pytest.mark.slow  # a worker process per refit and per decoding
def test_reconstruction_in_workers_is_the_in_process_series(qtbot, make_window, steps_host):
    w = make_window(steps_host)
    run = _decoder_run(qtbot, w)
    view = w.views["reconstruction"]
    w.window_layout.open("view:reconstruction")
    with qtbot.waitSignal(view.seriesReady, timeout=180_000) as done:
        view.compute()
    got = done.args[0]
    X, _ = w.session.training_data(run)
    here = reconstruction_series(steps_host.algorithm_class("tp_decoder")(n_components=2), X,
                                 max_points=view.points_spin.value())
    assert got.counts == here.counts and len(got.counts) >= 2
    np.testing.assert_allclose(got.errors, here.errors, atol=1e-10)
    for a, b in zip(got.reconstructions, here.reconstructions):
        np.testing.assert_allclose(a, b, atol=1e-9)
    # and PCA's: the variance left out of the first M principal components (all 150 rows used)
    s2 = np.linalg.svd(X - X.mean(axis=0), compute_uv=False) ** 2
    np.testing.assert_allclose(got.errors, [1 - s2[:m].sum() / s2.sum() for m in got.counts], atol=1e-10)
    wait_idle(qtbot, w)


@pytest.mark.slow  # a chain fitted in a worker process
def test_neighbours_are_not_searched_in_a_space_a_third_party_step_prepares(qtbot, make_window, steps_host):
    w = make_window(steps_host)
    ds = w.session.load("sample:iris")
    w.preparation_panel.add_step("tp_double")
    w.run_algorithm("pca", {"n_components": 2})
    run = wait_last_run(qtbot, w, timeout=60_000)
    os.remove(os.environ["CLI_STEP_PID_FILE"])
    with pytest.raises(DataError, match="third-party step 'tp_double'"):
        feature_space(ds, run)
    assert not os.path.exists(os.environ["CLI_STEP_PID_FILE"])   # its code never ran here
    wait_idle(qtbot, w)


def test_choose_k_fits_a_third_party_clustering_in_workers(qtbot, make_window, steps_host, monkeypatch):
    """Choose k fits a plugin's clustering once per k: each fit in a worker process, giving the
    in-process criteria; a fit that segfaults ends only its worker, and the tool says so."""
    from manifold_studio.analysis.choose_k import choose_k

    w = make_window(steps_host)
    ds = w.session.load("sample:iris")
    tool = w.choose_k_tool
    tool.start("tp_bands", 2, 3)
    qtbot.waitUntil(lambda: tool.result is not None and not tool.busy, timeout=60_000)
    assert int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()   # fitted in a worker
    here = choose_k(ds.X, range(2, 4), steps_host.algorithm_class("tp_bands"), {},
                    validation_fraction=float(tool.validation.value()), random_state=int(tool.seed.value()))
    for name in ("within", "davies_bouldin", "silhouette", "validation_log_likelihood"):
        np.testing.assert_allclose(getattr(tool.result, name), getattr(here, name), atol=1e-12)
    wait_idle(qtbot, w)
    monkeypatch.setenv("STEP_CRASH_IN_FIT", "1")
    job = tool.start("tp_bands", 2, 3)
    qtbot.waitUntil(lambda: job.finished, timeout=60_000)
    assert "SIGSEGV" in tool.message.text() and w.isVisible() and len(w.session.datasets) == 1, tool.message.text()
    wait_idle(qtbot, w)


@pytest.mark.slow  # a chain fitted in one worker process, extended in another
def test_apply_this_analysis_extends_a_third_party_chain_in_a_worker(qtbot, make_window, steps_host, tmp_path,
                                                                     monkeypatch):
    """The window's *Apply this analysis to another file* (replay) extends a run whose chain holds a
    third-party step in a worker process: a step that segfaults there fails the job naming the
    signal, nothing is written, and the window keeps its runs."""
    import manifold_studio as ms

    w = make_window(steps_host)
    w.session.load("sample:iris")
    w.preparation_panel.add_step("tp_double")
    w.run_algorithm("pca", {"n_components": 2})
    run = wait_last_run(qtbot, w, timeout=60_000)
    X = ms.load_data("sample:iris").X[:20]
    new = tmp_path / "new.csv"
    new.write_text("sepal_length,sepal_width,petal_length,petal_width\n"
                   + "\n".join(",".join(repr(float(v)) for v in row) for row in X) + "\n")
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")   # crash anywhere but the fitting worker
    job = w.project.apply_to_file(str(new), str(tmp_path / "res"))
    qtbot.waitUntil(lambda: job.finished, timeout=60_000)
    assert job.state == "failed" and "SIGSEGV" in job.error and "tp_double" in job.error, job.error
    assert not (tmp_path / "res").exists() or not any((tmp_path / "res").iterdir())
    wait_idle(qtbot, w)
    assert w.isVisible() and run.status == DONE and list(w.session.runs) == [run.id]


@pytest.mark.slow  # worker processes for the fit and each projection
def test_cluster_centres_are_projected_by_a_third_party_map_in_a_worker(qtbot, make_window, steps_host,
                                                                        monkeypatch):
    """Raw-data clusters drawn on a third-party map: their centres are projected with the map
    run's extend in a worker process (the map's own values); when that worker dies, the centres
    fall back to the mean map position of each cluster, and the window is kept."""
    w = make_window(steps_host)
    dec = _decoder_run(qtbot, w)
    overlay = w.cluster_overlay

    def centres_of(km):
        qtbot.waitUntil(lambda: not overlay.busy and overlay.centres is not None and overlay.centres_run is km,
                        timeout=60_000)
        return overlay.centres

    km = w.run_algorithm("kmeans", {"n_clusters": 3, "random_state": 0})
    wait_last_run(qtbot, w)
    got = centres_of(km)
    assert got.how == "projected" and w.map_view.map_run_for(km) is dec
    np.testing.assert_allclose(got.xy, dec.estimator.extend(km.estimator.cluster_centers_)[:, :2], atol=1e-9)
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")   # now the map's extend crashes outside its fit
    km2 = w.run_algorithm("kmeans", {"n_clusters": 2, "random_state": 0})
    wait_last_run(qtbot, w)
    got = centres_of(km2)
    assert got.how == "mean" and w.isVisible()
    for j in range(2):
        np.testing.assert_allclose(got.xy[j], dec.embedding[km2.labels == j, :2].mean(axis=0))
    wait_idle(qtbot, w)
