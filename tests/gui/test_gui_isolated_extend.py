"""pytest-qt: the window's Out of sample panel extends a model with a third-party preparation step
in a worker process, as ``run --extend`` and ``run --fit-sample`` do (issue 29): the step below
segfaults in ``transform`` in any process but the one that fitted it, so an extension run in the
window's process would end the test run. Each extension (from a file, to held-out rows, after a
fit on a sample) ends only its worker: the panel says so naming the step and the signal, and the
window, its data sets and its runs are kept."""
from __future__ import annotations

import os

import numpy as np
import pytest

from broken_steps import steps_host  # noqa: F401 (a fixture)
from gui_helpers import wait_idle, wait_last_run

pytest.importorskip("pytestqt")

import manifold_studio as ms  # noqa: E402
from manifold_studio.session.records import DONE, FAILED  # noqa: E402

WINDOW_DIALOGS = False


def _fitted_chain_run(qtbot, w):
    """PCA behind the third-party step tp_double (doubles every value), fitted in its worker."""
    w.session.load("sample:iris")
    w.preparation_panel.add_step("tp_double")
    w.run_algorithm("pca", {"n_components": 2})
    run = wait_last_run(qtbot, w, timeout=60_000)
    assert run.meta.get("worker_process") and int(open(os.environ["CLI_STEP_PID_FILE"]).read()) != os.getpid()
    return run


def _iris_csv(tmp_path):
    X = ms.load_data("sample:iris").X
    path = tmp_path / "new.csv"
    path.write_text("sepal_length,sepal_width,petal_length,petal_width\n"
                    + "\n".join(",".join(repr(float(v)) for v in row) for row in X[:20]) + "\n")
    return X[:20], path


def test_a_step_segfaulting_in_the_extension_of_a_file_fails_only_its_worker(qtbot, make_window, steps_host,
                                                                             tmp_path, monkeypatch):
    w = make_window(steps_host)
    run = _fitted_chain_run(qtbot, w)
    panel = w.views["extend"]
    datasets, runs = list(w.session.datasets), list(w.session.runs)
    _X, path = _iris_csv(tmp_path)
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")   # crash anywhere but the fitting worker
    with qtbot.waitSignal(panel.extendFailed, timeout=60_000) as failed:
        panel.extend_file(path, ask=False)
    message = failed.args[0]
    assert "SIGSEGV" in message and "tp_double" in message and "new.csv" in message, message
    assert "unaffected. Nothing was changed." in message
    wait_idle(qtbot, w)
    # the window, its data sets and its runs survive; nothing was added
    assert w.isVisible() and list(w.session.datasets) == datasets and list(w.session.runs) == runs
    assert run.status == DONE and not run.extensions and w.session.current_run is run
    assert "SIGSEGV" in panel.status.text()


@pytest.mark.slow  # four worker processes: a few seconds each on a busy machine
def test_hold_out_and_fit_on_a_sample_extend_in_a_worker_too(qtbot, make_window, steps_host, tmp_path,
                                                            monkeypatch):
    w = make_window(steps_host)
    run = _fitted_chain_run(qtbot, w)
    panel = w.views["extend"]
    X = w.session.current_dataset.X
    # without a crash: the file's extension in its worker is what the model gives (PCA of 2 X)
    X20, path = _iris_csv(tmp_path)
    with qtbot.waitSignal(panel.extended, timeout=60_000) as done:
        panel.extend_file(path, ask=False)
    reference = ms.get_algorithm("pca", n_components=2).fit(2.0 * X)
    np.testing.assert_allclose(np.abs(done.args[0].values), np.abs(reference.extend(2.0 * X20)), atol=1e-9)
    wait_idle(qtbot, w)
    monkeypatch.setenv("STEP_CRASH_AFTER_FIT", "1")
    # hold-out: fitted on the rest in one worker, the held-out rows extended in another
    with qtbot.waitSignal(panel.extendFailed, timeout=60_000) as failed:
        panel.holdout_fraction.setValue(20.0)
        panel.fit_with_holdout("pca", {"n_components": 2})
    assert "SIGSEGV" in failed.args[0] and "tp_double" in failed.args[0], failed.args[0]
    held_run = list(w.session.runs.values())[-1]
    wait_idle(qtbot, w)
    assert held_run.status == DONE and not held_run.extensions
    # fit on a sample, extend to all: the run fails with the signal, the earlier runs are kept
    panel.fit_on_sample("pca", {"n_components": 2}, m=40)
    failed_run = wait_last_run(qtbot, w, status=FAILED, timeout=60_000)
    assert "SIGSEGV" in failed_run.error and "tp_double" in failed_run.error, failed_run.error
    wait_idle(qtbot, w)
    assert w.isVisible() and run.status == DONE and held_run.status == DONE
