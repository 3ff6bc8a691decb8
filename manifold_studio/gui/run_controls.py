"""Run and Cancel buttons, the progress bar and the current progress message.

The controls follow the window's *foreground job* (a fit, a load, or any job a tool starts
with ``window.start_job``): the bar and message show its progress, Cancel cancels it, and Run
is disabled while it runs or while the settings form holds an invalid value (the button's
tooltip then says why).
"""
from __future__ import annotations

from PySide6.QtWidgets import (
    QCheckBox,
    QHBoxLayout,
    QLabel,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

#: from this many rows, algorithms whose fit holds the GIL (``holds_gil``) run in a separate
#: process by default (below, a fit is short and the process start-up of about a second dominates)
ISOLATE_GIL_ROWS = 2_000


class RunControls(QWidget):
    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.run_button = QPushButton("Run")
        self.run_button.setObjectName("run_button")
        self.run_button.setDefault(True)
        self.run_button.setStyleSheet("QPushButton { font-weight: bold; padding: 4px 18px; }")
        self.run_button.clicked.connect(lambda: self.window.run_algorithm())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setObjectName("cancel_button")
        self.cancel_button.setEnabled(False)
        self.cancel_button.setToolTip("Stop the running job (takes effect within about a second).")
        self.cancel_button.clicked.connect(self.window.cancel_jobs)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1000)
        self.progress.setValue(0)
        self.progress.setTextVisible(True)
        self.progress.setFormat("idle")
        self.message = QLabel("")
        self.message.setObjectName("progress_message")
        self.message.setWordWrap(True)
        # why Run is disabled, in words next to it (not only in the button's tooltip)
        self.reason_label = QLabel("")
        self.reason_label.setObjectName("run_blocked_reason")
        self.reason_label.setWordWrap(True)
        self.reason_label.setStyleSheet("color: #a04000;")
        self.reason_label.setVisible(False)

        self.isolate_box = QCheckBox("in a separate process")
        self.isolate_box.setObjectName("isolate_box")
        self.isolate_box.setToolTip(
            "Fit in a worker process of its own: if the plugin crashes, runs out of memory or hangs, only "
            "that run ends (with a message); the window and your data are unaffected. On by default for "
            "plugins that do not come with Manifold Studio, and on large data for the methods whose library calls "
            "would otherwise freeze the window (hierarchical clustering, Isomap, LLE, Laplacian eigenmaps). "
            "Starting the process takes about a second.")
        self._isolate_choice: dict[str, bool] = {}  # the user's choice per algorithm
        self.isolate_box.toggled.connect(self._remember_isolation)

        row = QHBoxLayout()
        row.addWidget(self.run_button)
        row.addWidget(self.cancel_button)
        row.addWidget(self.progress, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 4)
        lay.addLayout(row)
        lay.addWidget(self.reason_label)
        lay.addWidget(self.isolate_box)
        lay.addWidget(self.message)
        self._busy = False
        self._algorithm = None

    # -- worker process -----------------------------------------------------------------------------
    def isolated_for(self, algorithm_id: str, cls=None) -> bool:
        """Whether ``algorithm_id`` runs in a worker process: the user's choice, else on for
        plugins installed from another distribution (pip or the user plugin folder). Plugins
        registered by code already running in this process (a script, a test) stay in-process."""
        if algorithm_id in self._isolate_choice:
            return self._isolate_choice[algorithm_id]
        host = self.window.host
        cls = host.algorithms.get(algorithm_id) if cls is None else cls
        dataset = self.window.session.current_dataset
        if getattr(cls, "holds_gil", False) and dataset is not None and dataset.n_samples >= ISOLATE_GIL_ROWS:
            return True   # its library calls would freeze the window (and ignore Cancel) for seconds
        return host.is_third_party(algorithm_id)

    def show_algorithm(self, algorithm_id: str | None) -> None:
        """Set the check box for the algorithm now selected."""
        self._algorithm = algorithm_id
        self.isolate_box.blockSignals(True)
        self.isolate_box.setChecked(bool(algorithm_id) and self.isolated_for(algorithm_id))
        self.isolate_box.blockSignals(False)

    def _remember_isolation(self, on: bool) -> None:
        if self._algorithm:
            self._isolate_choice[self._algorithm] = bool(on)

    def set_busy(self, busy: bool, title: str = "") -> None:
        self._busy = busy
        self.cancel_button.setEnabled(busy)
        if busy:
            self.progress.setValue(0)
            self.progress.setFormat("%p%")
            self.progress.setToolTip(title)
            self.message.setText(f"{title}…")
        self.update_run_enabled()

    def show_progress(self, fraction: float, message: str) -> None:
        self.progress.setValue(int(round(fraction * 1000)))
        if message:
            self.message.setText(message)

    def show_end(self, state: str, text: str, fraction: float | None = None) -> None:
        if fraction is not None:
            self.progress.setValue(int(round(fraction * 1000)))
        self.progress.setFormat(state)
        self.progress.setToolTip(text)
        self.message.setText(text)

    def update_run_enabled(self) -> None:
        reason = self.window.run_blocker()
        if self._busy:
            reason = "A job is running: wait for it or cancel it."
        self.run_button.setEnabled(not reason)
        self.run_button.setToolTip(reason or "Fit the selected algorithm on the current data set (Ctrl+R).")
        blocked = bool(reason) and not self._busy and bool(self.window.session.datasets)
        self.reason_label.setText(f"Run is off: {reason}" if blocked else "")
        self.reason_label.setVisible(blocked)
