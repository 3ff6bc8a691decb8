"""What a run fits on: the data set (through the preparation chain, named in the entry when there
is one: "data (178 × 13) → standardize") or the embedding of an earlier run ("cluster this map").

Shown in the algorithm panel above the settings. ``source_run()`` is read by
``MainWindow.run_algorithm`` when the Run button starts a fit. The "Cluster this map" button
(and the Tools menu action of the same name) selects the map currently shown and a clustering
method, so that Run clusters the map.
"""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QPushButton, QWidget

RAW = -1


class InputSelector(QWidget):
    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        self.combo = QComboBox()
        self.combo.setObjectName("input_selector")
        self.combo.setToolTip("What the algorithm is fitted on: the data set (through the Preparation "
                              "steps, when there are any), or the embedding (map) computed by an "
                              "earlier run on it — e.g. cluster a 2-D map (no preparation).")
        self.combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.combo.setMinimumContentsLength(14)
        self.this_map_button = QPushButton("Cluster this map")
        self.this_map_button.setObjectName("cluster_this_map")
        self.this_map_button.setToolTip("Fit on the map shown now (its run's embedding) and pick a "
                                        "clustering method; then press Run.")
        self.this_map_button.clicked.connect(self.cluster_this_map)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 2, 0, 2)
        lay.addWidget(QLabel("Fit on:"))
        lay.addWidget(self.combo, 1)
        lay.addWidget(self.this_map_button)
        window.bridge.runChanged.connect(lambda _r: self.refresh())
        window.bridge.datasetsChanged.connect(self.refresh)
        window.bridge.currentRunChanged.connect(lambda _r: self._update_button())
        window.bridge.event.connect(self._on_session_event)
        self.refresh()

    # -- public API -----------------------------------------------------------------------------
    def source_run(self) -> int | None:
        """Id of the run whose embedding to fit on, or None for the raw data."""
        value = self.combo.currentData()
        return None if value is None or value == RAW else int(value)

    def set_source_run(self, run_id: int | None) -> bool:
        idx = self.combo.findData(RAW if run_id is None else int(run_id))
        if idx < 0:
            return False
        self.combo.setCurrentIndex(idx)
        return True

    def candidates(self) -> list:
        """Finished embedding runs of the current data set, newest first."""
        session = self.window.session
        name = session.current_dataset_name
        return [r for r in reversed(list(session.runs.values()))
                if r.succeeded and r.embedding is not None and r.dataset_name == name]

    def refresh(self) -> None:
        keep = self.source_run()
        self.combo.blockSignals(True)
        self.combo.clear()
        self.combo.addItem("", RAW)
        self._show_data_entry()
        for r in self.candidates():
            dims = r.embedding.shape[1] if r.embedding.ndim == 2 else 1
            self.combo.addItem(f"#{r.id} {r.algorithm_id} map ({dims}-D)", r.id)
        idx = self.combo.findData(RAW if keep is None else keep)
        self.combo.setCurrentIndex(max(idx, 0))
        self.combo.blockSignals(False)
        self._update_button()

    def data_entry(self) -> str:
        """The data set's entry: "raw data (178 × 13)", or with a preparation chain the steps a run
        fits through ("data (178 × 13) → standardize"), so "Fit on" never says raw when it is not."""
        session = self.window.session
        ds = session.current_dataset
        shape = f" ({ds.n_samples:,} × {ds.n_features})" if ds is not None else ""
        steps = [str(step) for step, _params in session.chain]
        return f"data{shape} → {' → '.join(steps)}" if steps else f"raw data{shape}"

    def _on_session_event(self, event) -> None:
        if event.kind == "chain_changed":
            self._show_data_entry()

    def _show_data_entry(self) -> None:
        """The data set's entry and its tooltip (the whole text, when a narrow dock cuts it)."""
        idx, text = self.combo.findData(RAW), self.data_entry()
        self.combo.setItemText(idx, text)
        self.combo.setItemData(idx, text, Qt.ItemDataRole.ToolTipRole)

    def _map_run(self):
        view = self.window.map_view
        run = view.run if view is not None else None
        if run is None or not run.succeeded:
            return None
        map_run = view.map_run_for(run)
        if map_run is None or map_run.dataset_name != self.window.session.current_dataset_name:
            return None
        return map_run

    def _update_button(self) -> None:
        self.this_map_button.setEnabled(self._map_run() is not None)

    def cluster_this_map(self) -> int | None:
        """Fit on the map shown now; select a clustering method (k-means if available)."""
        map_run = self._map_run()
        if map_run is None:
            self.window.report_error("No map of the current data set is shown: run an embedding first.",
                                     log=False)
            return None
        self.refresh()
        self.set_source_run(map_run.id)
        panel = self.window.algorithm_panel
        current = self.window.host.algorithms.get(panel.algorithm_id)
        if current is None or current.kind != "clustering":
            clustering = sorted(a for a, c in self.window.host.algorithms.items() if c.kind == "clustering")
            pick = "kmeans" if "kmeans" in clustering else (clustering[0] if clustering else None)
            if pick:
                panel.select_algorithm(pick)
        self.window.show_status(f"Clustering the map of run #{map_run.id}: set the parameters and press Run.")
        return map_run.id
