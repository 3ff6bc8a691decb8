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
