"""The data panel: sample data, open a file (or drop one on the window), the loaded data sets.

The panel only asks the window to load (``window.load_source``); loading runs on a worker
thread and a failed load leaves every loaded data set as it was.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QGroupBox,
    QHBoxLayout,
    QLabel,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QSizePolicy,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.errors import InvalidParameterError
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.undo import remove_dataset


class LoaderOptionsDialog(QDialog):
    """Options of a loader (label column, delimiter, ...) as a generated form."""

    def __init__(self, loader, path: Path, parent=None):
        super().__init__(parent)
        self.setWindowTitle(f"Open {path.name} — {loader.name or loader.id}")
        self.form = ParamForm(loader.options)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        self.form.validityChanged.connect(buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel(f"<b>{path.name}</b> will be read by {loader.name or loader.id}."))
        lay.addWidget(self.form)
        lay.addWidget(buttons)

    def values(self) -> dict:
        return self.form.values()


class DataPanel(QWidget):
    def __init__(self, window, parent=None):
        super().__init__(parent)
        self.window = window
        host = window.host

        samples_box = QGroupBox("Samples")
        self.sample_list = QListWidget()
        self.sample_list.setObjectName("sample_list")
        for sid, sample in sorted(host.samples.items(), key=lambda kv: (kv[1].name or kv[0]).lower()):
            item = QListWidgetItem(sample.name or sid)
            item.setData(Qt.ItemDataRole.UserRole, sid)
            item.setToolTip(f"<b>{sample.name or sid}</b> (<code>sample:{sid}</code>)<br>{sample.description}")
            self.sample_list.addItem(item)
        if not host.samples:
            self.sample_list.addItem(QListWidgetItem("(no sample data plugin loaded)"))
            self.sample_list.setEnabled(False)
        rows = max(1, self.sample_list.count())
        fit = self.sample_list.sizeHintForRow(0) * rows + 2 * self.sample_list.frameWidth() + 4
        self.sample_list.setMaximumHeight(max(60, min(fit, 170)))
        self.sample_list.setMinimumHeight(max(60, min(fit, 90)))
        self.sample_form = ParamForm(empty_text="No options.")
        self.sample_form.setVisible(False)  # shown for a sample that has options
        self.sample_form.setObjectName("sample_options")
        self.sample_form.setToolTip("Options of the selected sample data set.")
        self.sample_list.currentItemChanged.connect(self._on_sample_selected)
        self.sample_list.itemDoubleClicked.connect(lambda _item: self.load_selected_sample())
        self.load_sample_button = QPushButton("Load sample")
        self.load_sample_button.setToolTip("Load the selected sample data set (or double-click it).")
        self.load_sample_button.clicked.connect(self.load_selected_sample)
        self.open_button = QPushButton("Open file…")
        exts = sorted({e for loader in host.loaders.values() for e in loader.extensions})
        self.open_button.setToolTip("Read a data file: " + (", ".join(exts) or "no loader plugin loaded")
                                    + ". You can also drop a file on the window.")
        self.open_button.clicked.connect(self.choose_file)
        self.open_folder_button = QPushButton("Open folder…")
        self.open_folder_button.setToolTip("Read a folder of images (PNG, JPEG, …): one row per image, "
                                           "sub-folder names as labels.")
        self.open_folder_button.clicked.connect(self.choose_folder)
        buttons = QHBoxLayout()
        buttons.addWidget(self.load_sample_button)
        buttons.addWidget(self.open_button)
        buttons.addWidget(self.open_folder_button)
        sl = QVBoxLayout(samples_box)
        sl.setContentsMargins(6, 4, 6, 4)
        sl.addWidget(self.sample_list)
        sl.addWidget(self.sample_form)

        loaded_box = QGroupBox("Loaded data")
        self.dataset_combo = QComboBox()
        self.dataset_combo.setObjectName("dataset_combo")
        self.dataset_combo.setToolTip("The data set the next run uses.")
        self.dataset_combo.currentIndexChanged.connect(self._on_combo)
        self.remove_button = QPushButton("Remove")
        self.remove_button.setToolTip("Forget this data set (runs computed from it are kept; "
                                      "Edit ▸ Undo brings it back).")
        self.remove_button.clicked.connect(self._remove_current)
        row = QHBoxLayout()
        row.addWidget(self.dataset_combo, 1)
        row.addWidget(self.remove_button)
        self.info_label = QLabel("No data loaded.")
        self.info_label.setObjectName("data_info")
        self.info_label.setWordWrap(True)
        self.report = QPlainTextEdit()
        self.report.setReadOnly(True)
        self.report.setPlaceholderText("Loader report (columns left out, missing values, …)")
        self.report.setMaximumHeight(self._report_height(4))
        self.report.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Maximum)
        ll = QVBoxLayout(loaded_box)
        ll.setContentsMargins(6, 4, 6, 4)
        ll.addLayout(row)
        ll.addWidget(self.info_label)
        ll.addWidget(self.report)

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        lay.addLayout(buttons)  # first: loading stays in view however low the dock is (1366 × 768)
        lay.addWidget(loaded_box)
        lay.addWidget(samples_box)
        lay.addStretch(1)

        window.bridge.datasetsChanged.connect(self.refresh)
        self.refresh()

    # -- actions ------------------------------------------------------------------------------
    def _report_height(self, lines: int) -> int:
        return self.report.fontMetrics().lineSpacing() * lines + 12

    def select_sample(self, sample_id: str) -> bool:
        for i in range(self.sample_list.count()):
            item = self.sample_list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == sample_id:
                self.sample_list.setCurrentItem(item)
                return True
        return False

    def load_selected_sample(self):
        item = self.sample_list.currentItem()
        sid = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        if not sid:
            self.window.report_error("Pick a sample data set in the list first.", log=False)
            return None
        try:
            options = self.sample_form.values()
        except InvalidParameterError as exc:
            self.window.report_error(str(exc), log=False)
            return None
        defaults = {p.name: p.default for p in self.sample_form.params}
        changed = {k: v for k, v in options.items() if defaults.get(k) != v}
        return self.window.load_source(f"sample:{sid}", changed)

    def _on_sample_selected(self, item, _previous=None):
        sid = item.data(Qt.ItemDataRole.UserRole) if item is not None else None
        sample = self.window.host.samples.get(sid) if sid else None
        options = sample.options if sample is not None else ()
        self.sample_form.set_params(options)
        self.sample_form.setVisible(bool(options))

    def choose_file(self):
        exts = sorted({e for loader in self.window.host.loaders.values() for e in loader.extensions})
        filt = f"Data files ({' '.join('*' + e for e in exts)});;All files (*)" if exts else "All files (*)"
        path, _ = QFileDialog.getOpenFileName(self, "Open a data file", "", filt)
        if path:
            self.window.open_file(path)

    def choose_folder(self):
        path = QFileDialog.getExistingDirectory(self, "Open a folder of images")
        if path:
            self.window.open_file(path)

    def _on_combo(self, index: int):
        name = self.dataset_combo.itemData(index)
        if name and name != self.window.session.current_dataset_name:
            self.window.session.set_current_dataset(name)

    def _remove_current(self):
        name = self.window.session.current_dataset_name
        if name:
            remove_dataset(self.window, name)

    # -- display ------------------------------------------------------------------------------
    def refresh(self):
        session = self.window.session
        self.dataset_combo.blockSignals(True)
        self.dataset_combo.clear()
        for name in session.datasets:
            self.dataset_combo.addItem(name, name)
        if session.current_dataset_name:
            self.dataset_combo.setCurrentIndex(self.dataset_combo.findData(session.current_dataset_name))
        self.dataset_combo.blockSignals(False)
        self.remove_button.setEnabled(bool(session.datasets))
        ds = session.current_dataset
        if ds is None:
            self.info_label.setText("No data loaded.")
            self.report.setPlainText("")
            self.report.setVisible(False)
            return
        if ds.has_labels:
            import numpy as np

            n_classes = len(np.unique(ds.labels.astype(str))) if ds.labels.dtype.kind in "OUS" else len(np.unique(ds.labels))
            labels = f"labels: <b>{ds.label_name or 'yes'}</b> ({n_classes} distinct)"
        else:
            labels = "no labels"
        src = f"<br><small>{ds.source}</small>" if ds.source else ""
        shape = (f"<b>{ds.n_samples:,} × {ds.n_samples:,} distance matrix</b> ({ds.n_samples:,} items)"
                 if ds.distance_matrix else f"<b>{ds.n_samples:,} × {ds.n_features}</b> (points × features)")
        self.info_label.setText(f"{shape}, {labels}{src}")
        self.report.setPlainText("\n".join(ds.report))
        self.report.setVisible(bool(ds.report))
        # as tall as the report (wrapped lines counted), up to 12 lines; it scrolls beyond
        wrapped = sum(max(1, len(line) // 60 + 1) for line in ds.report)
        self.report.setMaximumHeight(self._report_height(min(max(wrapped, 2), 12)))
        if not ds.report:
            self.info_label.setText(self.info_label.text() + "<br><small>Loaded without remarks.</small>")
