"""The map's global faithfulness in the run summary, computed on a worker when an embedding run
finishes (issue 31)."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from scipy.spatial.distance import cdist

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from manifold_studio.analysis.map_neighbours import TRUST_SEED  # noqa: E402
from manifold_studio.gui import run_faithfulness as rf  # noqa: E402
from manifold_studio.gui.views.neighbour_layer import SAMPLE_KEY, TRUST_KEY  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca",), ("wine",))


def _brute(X, xy, rows, k=10):
    def knn(A):
        d = cdist(A[rows], A)
        d[np.arange(len(rows)), rows] = np.inf
        return np.argsort(d, axis=1, kind="stable")[:, :k]
    a, b = knn(X), knn(xy)
    return float(np.mean([len(set(a[i]) & set(b[i])) / k for i in range(len(rows))]))


def test_a_finished_embedding_gets_the_figure_in_its_summary(qtbot, make_window, host, monkeypatch):
    on_main = []
    task = rf.run_trust_task

    def spy(*args, **kwargs):
        on_main.append(threading.current_thread() is threading.main_thread())
        return task(*args, **kwargs)

    monkeypatch.setattr(rf, "run_trust_task", spy)
    w = make_window(host)
    w.map_instruments.run_faithfulness.delay_ms = 0
    w.session.load("sample:wine")
    run = w.session.run("pca")
    qtbot.waitUntil(lambda: TRUST_KEY in run.summary, timeout=20_000)
    assert on_main == [False]
    X = w.session.prepared_data(run.id).X
    n = len(X)
    assert run.summary[TRUST_KEY] == pytest.approx(_brute(X, run.embedding[:, :2], np.arange(n)), abs=1e-4)
    assert SAMPLE_KEY not in run.summary
    shown = w.run_log.item(w.run_log.row_of(run.id), 6).text()   # the runs table shows it
    assert f"{TRUST_KEY}={run.summary[TRUST_KEY]}" in shown
    # a larger map than the sample: a stated random sample of rows
    w.map_instruments.run_faithfulness.sample = 60
    second = w.session.run("pca", n_components=3)
    qtbot.waitUntil(lambda: TRUST_KEY in second.summary, timeout=20_000)
    assert second.summary[SAMPLE_KEY] == 60 and on_main == [False, False]
    rows = np.sort(np.random.default_rng(TRUST_SEED).choice(n, 60, replace=False))
    X2 = w.session.prepared_data(second.id).X
    assert second.summary[TRUST_KEY] == pytest.approx(_brute(X2, second.embedding[:, :2], rows), abs=1e-4)
