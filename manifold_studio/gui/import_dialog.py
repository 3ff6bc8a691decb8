"""The import dialog for CSV/TSV and Excel files (as Orange's File widget): a preview of the
first rows (:func:`manifold_studio.tables.readers.preview_table`), one line per column with its
inferred type, distinct values, missing count and an editable role, the reading options
(delimiter, header, decimal mark, ... from the loader's constraints) and, for a workbook, the
sheet. The choices are remembered per file (QSettings keyed by the absolute path) and proposed
the next time that file is opened.
"""
from __future__ import annotations

import json
from pathlib import Path

from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHeaderView, QLabel, QTableWidget, QTableWidgetItem,
    QVBoxLayout,
)

from manifold_studio.errors import error_message
from manifold_studio.gui.data_panel import LoaderOptionsDialog
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.preferences import open_settings
from manifold_studio.tables.model import ROLES
from manifold_studio.tables.readers import excel_sheets, preview_table

#: rows shown in the preview
PREVIEW_ROWS = 20
#: options the dialog sets itself (roles per column; the sheet from a list)
OWN_OPTIONS = ("roles", "sheet")
SETTINGS_GROUP = "import"
#: the key ``values()`` sets when "This file is a distance matrix" is ticked (not a loader option)
DISTANCE_OPTION = "distance_matrix"


def remembered(path) -> dict:
    """The options last chosen for file ``path`` ({} when none)."""
    raw = open_settings().value(f"{SETTINGS_GROUP}/{Path(path).resolve()}")
    try:
        value = json.loads(raw) if isinstance(raw, str) else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def remember(path, options: dict) -> None:
    settings = open_settings()
    settings.setValue(f"{SETTINGS_GROUP}/{Path(path).resolve()}", json.dumps(options, default=list))
    settings.sync()


class ImportDialog(QDialog):
    """Options, column roles and a preview for one table file; ``values()`` gives the loader's
    options (the roles changed from the proposed ones in ``roles``)."""

    def __init__(self, loader, path, parent=None, distance_matrix: bool | None = None):
        super().__init__(parent)
        self.loader, self.path = loader, Path(path)
        self.setWindowTitle(f"Import {self.path.name} — {loader.name or loader.id}")
        self.resize(900, 640)
        names = {p.name for p in loader.options}
        self.form = ParamForm(tuple(p for p in loader.options if p.name not in OWN_OPTIONS))
        self.sheet_box = QComboBox()
        self.sheet_box.setObjectName("import_sheet")
        self.sheets = []
        if "sheet" in names:
            try:
                self.sheets = excel_sheets(self.path)
            except Exception as exc:  # noqa: BLE001 - the preview says why
                self.sheets = []
                self._sheet_error = error_message(exc)
            self.sheet_box.addItems(self.sheets)
        self.status = QLabel("")
        self.status.setWordWrap(True)
        self.status.setObjectName("import_status")
        self.columns = QTableWidget(0, 5)
        self.columns.setObjectName("import_columns")
        self.columns.setHorizontalHeaderLabels(["Column", "Type", "Distinct", "Missing", "Role"])
        self.columns.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.preview = QTableWidget(0, 0)
        self.preview.setObjectName("import_preview")
        self.distance_box = QCheckBox("This file is a distance matrix (the distances between the items of its rows)")
        self.distance_box.setObjectName("import_distance_matrix")
        self.distance_box.setToolTip(
            "Read the numeric columns as a square n × n matrix of distances between n items (a header row and a "
            "first column of names are optional) and check it: square, finite, non-negative, zero diagonal, "
            "symmetric. Only the methods that take distances (metric = precomputed) can then fit it.")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay = QVBoxLayout(self)
        top = QFormLayout()
        if self.sheets:
            top.addRow("Sheet:", self.sheet_box)
        lay.addLayout(top)
        lay.addWidget(self.form)
        lay.addWidget(self.distance_box)
        lay.addWidget(QLabel("<b>Columns</b> (set a role: feature, target, meta or skipped)"))
        lay.addWidget(self.columns, 1)
        lay.addWidget(QLabel(f"<b>The first {PREVIEW_ROWS} rows</b>"))
        lay.addWidget(self.preview, 1)
        lay.addWidget(self.status)
        lay.addWidget(self.buttons)
        self.proposed: dict[str, str] = {}
        self.role_boxes: dict[str, QComboBox] = {}
        saved = remembered(self.path)
        self._saved_roles = dict(saved.get("roles") or {})
        self.distance_box.setChecked(bool(saved.get(DISTANCE_OPTION)) if distance_matrix is None else distance_matrix)
        self.form.set_values({k: v for k, v in saved.items() if k in self.form.editors})
        if saved.get("sheet") in self.sheets:
            self.sheet_box.setCurrentText(saved["sheet"])
        self.form.changed.connect(self.refresh)
        self.sheet_box.currentIndexChanged.connect(lambda _i: self.refresh())
        self.refresh()

    def _options(self) -> dict:
        opts = {k: v for k, v in self.form.values().items() if v is not None}
        opts.pop("missing", None)  # the preview shows every row; 'missing' applies when loading
        if self.sheets:
            opts["sheet"] = self.sheet_box.currentText()
        return opts

    def refresh(self) -> None:
        """Read the first rows again with the current options and show columns and rows."""
        ok = self.form.is_valid()
        table = None
        if ok:
            try:
                opts = self._options()
                opts.pop("roles", None)
                table = preview_table(self.path, max_rows=PREVIEW_ROWS, **opts).table
            except Exception as exc:  # noqa: BLE001 - say why, keep the dialog open
                self.status.setText(f"Cannot read {self.path.name} with these options: {error_message(exc)}")
                ok = False
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ok)
        if table is None:
            return
        keep = {name: box.currentText() for name, box in self.role_boxes.items()
                if box.currentText() != self.proposed.get(name)}
        keep = {**self._saved_roles, **keep}
        self._saved_roles = {}
        self.proposed = dict(table.roles)
        self.role_boxes = {}
        infos = table.infos()
        self.columns.setRowCount(len(infos))
        for r, info in enumerate(infos):
            for c, text in enumerate((info.name, info.type, f"{info.n_distinct:,}", f"{info.n_missing:,}")):
                item = QTableWidgetItem(text)
                item.setToolTip(table.column(info.name).note or text)
                self.columns.setItem(r, c, item)
            box = QComboBox()
            box.addItems(list(ROLES))
            box.setCurrentText(keep.get(info.name, info.role) if keep.get(info.name) in ROLES else info.role)
            box.setObjectName(f"role_{info.name}")
            self.columns.setCellWidget(r, 4, box)
            self.role_boxes[info.name] = box
        frame = table.to_frame()
        self.preview.setColumnCount(len(frame.columns))
        self.preview.setRowCount(len(frame))
        self.preview.setHorizontalHeaderLabels([str(c) for c in frame.columns])
        for r in range(len(frame)):
            for c in range(len(frame.columns)):
                v = frame.iat[r, c]
                self.preview.setItem(r, c, QTableWidgetItem("" if v is None or v != v else str(v)))
        self.status.setText(f"{len(infos)} columns; " + "; ".join(table.report[:3]))

    def roles(self) -> dict[str, str]:
        """The roles changed from the proposed ones."""
        return {name: box.currentText() for name, box in self.role_boxes.items()
                if box.currentText() != self.proposed.get(name)}

    def values(self) -> dict:
        """The loader's options: the form's, the sheet and the changed roles (remembered)."""
        opts = dict(self.form.values())
        if self.sheets:
            opts["sheet"] = self.sheet_box.currentText()
        roles = self.roles()
        if "roles" in {p.name for p in self.loader.options}:
            opts["roles"] = roles or None
        if self.distance_box.isChecked():
            opts[DISTANCE_OPTION] = True
        remember(self.path, {k: v for k, v in opts.items() if v is not None})
        return opts


def options_dialog(loader, path, parent=None, distance_matrix: bool | None = None):
    """The dialog asking how to read ``path``: the import dialog for CSV/TSV and Excel files
    (loaders with column roles; ``distance_matrix`` presets its "This file is a distance matrix"
    box, None: as last time), else the loader's generated options form."""
    names = {p.name for p in loader.options}
    if "roles" in names and loader.id in ("csv", "excel"):
        return ImportDialog(loader, path, parent, distance_matrix)
    return LoaderOptionsDialog(loader, path, parent)
