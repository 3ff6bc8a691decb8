"""Cancel of an iterative fit that keeps its current map says "stopped ... at your request"
everywhere — status bar, run controls, message log — never "done in" (issue 33)."""
from __future__ import annotations

import time

import pytest

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt  # noqa: E402

from manifold_studio.algorithms import EmbeddingAlgorithm, FitCancelled  # noqa: E402
from manifold_studio.hookspecs import hookimpl  # noqa: E402

WINDOW_DIALOGS = False


class _Stoppable(EmbeddingAlgorithm):
    id = "stoppable_message_test"
    name = "Keeps its current map on Cancel"
    help = "An iterative map: Cancel keeps the iterate reached (like t-SNE)."
    params = ()

    def _fit(self, X, y, progress):
        Z = X[:, :2].copy()
        try:
            for i in range(1, 5000):
                progress.checkpoint(i / 5000, f"iteration {i}")
                Z = Z * 0.999
                time.sleep(0.005)
        except FitCancelled:
            self._stop_early(f"after {i} of 5000 iterations")
        self.embedding_ = Z

    def _extend(self, X):
        return X[:, :2]


class _Plugin:
    @hookimpl
    def register_algorithms(self):
        return [_Stoppable]


def test_cancel_of_an_iterative_fit_says_stopped_not_done(qtbot, make_window):
    host = discovered_host((), ("iris",))
    host.register(_Plugin(), name="message-test-plugin")
    w = make_window(host)
    w.session.load("sample:iris")
    said = []
    w.statusBar().messageChanged.connect(said.append)
    run = w.run_algorithm("stoppable_message_test", {})
    qtbot.waitUntil(lambda: w.run_controls.progress.value() > 0, timeout=5000)
    qtbot.wait(150)
    qtbot.mouseClick(w.run_controls.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: run.status == "done" and not w.busy, timeout=5000)
    assert run.meta["stopped_early"]
    seconds = f"{run.timings['duration_s']:.2f} s"
    text = f"stopped after {seconds} at your request (the map when Cancel was pressed is kept)"
    assert any(m.startswith(f"Run {run.title()} {text}") for m in said), said
    assert w.run_controls.message.text().endswith(text)
    log = w.message_log.toPlainText()
    assert f"Run {run.title()} {text}" in log
    assert w.run_controls.progress.format() == "stopped"
    assert f"{run.title()} done in" not in " ".join(said) + log and "done in" not in w.run_controls.message.text()
