"""The import dialog for CSV/TSV and Excel files (as Orange's File widget): a preview of the
first rows (:func:`manifold_studio.tables.readers.preview_table`), one line per column with its
inferred type, distinct values, missing count and an editable role, the reading options
(delimiter, header, decimal mark, ... from the loader's constraints) and, for a workbook, the
sheet. The choices are remembered per file (QSettings keyed by the absolute path) and proposed
the next time that file is opened.

The distinct and missing counts first come from the preview rows, then from the whole column:
the file is read in full on a background thread (:func:`whole_column_counts`) and the lines are
updated when it is done (their tooltip says which). When no column is the target, a text or
categorical column with few classes (2 to :data:`MAX_TARGET_CLASSES`, counted over the whole
column) is proposed as the target. The missing-values option follows the preparation chain:
``keep`` when the chain imputes, ``drop`` otherwise, and a line says so.
"""
from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHeaderView, QLabel, QSplitter, QTableWidget,
    QTableWidgetItem, QVBoxLayout, QWidget,
)

from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.errors import error_message
from manifold_studio.gui.data_panel import LoaderOptionsDialog
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.preferences import open_settings
from manifold_studio.tables.model import CATEGORICAL, ROLES, TARGET, TEXT
from manifold_studio.tables.readers import excel_sheets, preview_table, read_table

#: rows shown in the preview
PREVIEW_ROWS = 20
#: the columns list shows at least this many lines
MIN_COLUMN_ROWS = 10
#: a text or categorical column with 2 to this many classes may be proposed as the target
MAX_TARGET_CLASSES = 20
#: how often the dialog looks whether the whole-column counts are ready (ms)
POLL_MS = 40


#: column names that usually hold the label (compared in lower case)
LABEL_NAMES = ("class", "label", "target", "y", "species", "diagnosis", "outcome", "category", "cultivar",
               "group", "type", "variety")


def whole_column_counts(path, **options) -> dict[str, dict]:
    """``{column: {"distinct", "missing", "type", "note", "rows"}}`` over the whole file (Qt-free;
    the dialog runs it on a background thread). Options as :func:`read_table`."""
    opts = {k: v for k, v in options.items() if k not in ("roles", "missing", "label_column", "id_column")}
    table = read_table(path, **opts).table
    return {info.name: {"distinct": info.n_distinct, "missing": info.n_missing, "type": info.type,
                        "note": info.note, "rows": table.n_rows} for info in table.infos()}


def propose_target(counts: dict[str, dict]) -> str | None:
    """The column to propose as the target when none is set, among the text or categorical columns
    with 2 to :data:`MAX_TARGET_CLASSES` classes, no missing value and no date part: one named like a
    label (:data:`LABEL_NAMES`), else the one with the fewest classes (the first on a tie); None
    when there is none."""
    fits = [name for name, c in counts.items()
            if c["type"] in (TEXT, CATEGORICAL) and 2 <= c["distinct"] <= MAX_TARGET_CLASSES
            and c["missing"] == 0 and "date part" not in (c.get("note") or "")]
    named = [name for name in fits if name.strip().lower() in LABEL_NAMES]
    if named:
        return named[0]
    return min(fits, key=lambda name: counts[name]["distinct"]) if fits else None


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

    def __init__(self, loader, path, parent=None, distance_matrix: bool | None = None, chain=None):
        super().__init__(parent)
        #: whether the preparation chain ([(step_id, params), ...]) fills missing values
        self.chain_imputes = chain_imputes([step for step, _ in (chain or [])])
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-counts")
        self._pending = None       # (generation, future) of the whole-column counts
        self._generation = 0
        self.whole_counts: dict[str, dict] = {}
        self._notes: list[str] = []     # the preview's notes on the columns, said under the tables
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._collect_counts)
        self.finished.connect(lambda _result: self._stop_counting())
        self.loader, self.path = loader, Path(path)
        self.setWindowTitle(f"Import {self.path.name} — {loader.name or loader.id}")
        self.resize(900, 640)
        names = {p.name for p in loader.options}
        self.form = ParamForm(tuple(p for p in loader.options if p.name not in OWN_OPTIONS))
        self.form.set_row_spacing(2)
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
        self.columns.horizontalHeader().setStretchLastSection(True)
        # compact rows (the role boxes fit a line of text) so that ten of them, the options and the
        # preview fit a 1366 x 768 screen
        row_h = self.columns.fontMetrics().height() + 10
        self.columns.verticalHeader().setMinimumSectionSize(row_h)
        self.columns.verticalHeader().setDefaultSectionSize(row_h)
        self.columns.setMinimumHeight(row_h * MIN_COLUMN_ROWS + self.columns.horizontalHeader().sizeHint().height()
                                      + 2 * self.columns.frameWidth() + 2)
        self.missing_note = QLabel("")
        self.missing_note.setWordWrap(True)
        self.missing_note.setObjectName("import_missing_note")
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
        lay.addWidget(self.missing_note)
        lay.addWidget(self.distance_box)
        # the columns list and the preview share the height through a splitter the user can drag
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("import_splitter")
        self.splitter.setChildrenCollapsible(False)
        for title, table in ((QLabel("<b>Columns</b> (set a role: feature, target, meta or skipped)"), self.columns),
                             (QLabel(f"<b>The first {PREVIEW_ROWS} rows</b>"), self.preview)):
            pane = QWidget()
            pane_lay = QVBoxLayout(pane)
            pane_lay.setContentsMargins(0, 0, 0, 0)
            pane_lay.addWidget(title)
            pane_lay.addWidget(table, 1)
            self.splitter.addWidget(pane)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        lay.addWidget(self.splitter, 1)
        lay.addWidget(self.status)
        lay.addWidget(self.buttons)
        self.proposed: dict[str, str] = {}
        self.role_boxes: dict[str, QComboBox] = {}
        saved = remembered(self.path)
        self._saved_roles = dict(saved.get("roles") or {})
        self.distance_box.setChecked(bool(saved.get(DISTANCE_OPTION)) if distance_matrix is None else distance_matrix)
        self.form.set_values({k: v for k, v in saved.items() if k in self.form.editors})
        self._follow_chain_for_missing("missing" in saved)
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
        self._notes = [note.rstrip(".") for note in table.report[:3]]
        self.status.setText(f"{len(infos)} columns; " + "; ".join(self._notes))
        self._preview_rows = len(frame)
        self._chosen_roles = keep
        self._count_whole_columns()

    # -- missing values follow the chain ------------------------------------------------
    def _follow_chain_for_missing(self, remembered_choice: bool) -> None:
        editor = self.form.editors.get("missing")
        if editor is None:
            return
        if not remembered_choice:
            editor.set_value("keep" if self.chain_imputes else "drop")
        if self.chain_imputes:
            self.missing_note.setText("Missing values: <b>keep</b> is proposed because the preparation chain "
                                      "imputes them (rows with gaps are kept as missing and filled by the chain).")
        else:
            self.missing_note.setText("Missing values: <b>drop</b> is proposed because the preparation chain has "
                                      "no impute step (rows with gaps are left out and listed); add <i>Impute</i> "
                                      "in the Preparation dock to keep them.")

    # -- whole-column counts on a background thread -------------------------------------
    def _count_whole_columns(self) -> None:
        self._generation += 1
        opts = self._options()
        opts.pop("roles", None)
        self._pending = (self._generation, self._executor.submit(whole_column_counts, self.path, **opts))
        for r in range(self.columns.rowCount()):
            for c in (2, 3):
                item = self.columns.item(r, c)
                if item is not None:
                    item.setToolTip(f"From the first {PREVIEW_ROWS} rows; counting the whole column…")
        self._poll.start()

    def counting(self) -> bool:
        """Whether the whole-column counts are still being computed."""
        return self._pending is not None

    def _collect_counts(self) -> None:
        if self._pending is None:
            self._poll.stop()
            return
        generation, future = self._pending
        if not future.done():
            return
        self._pending = None
        self._poll.stop()
        if generation != self._generation:
            return
        try:
            counts = future.result()
        except Exception as exc:  # noqa: BLE001 - the preview counts stay, and the status says why
            self.status.setText(self.status.text() + f" (whole-column counts unavailable: {error_message(exc)})")
            return
        self.whole_counts = counts
        rows = next(iter(counts.values()))["rows"] if counts else 0
        for r in range(self.columns.rowCount()):
            name = self.columns.item(r, 0).text()
            if name not in counts:
                continue
            for c, value in ((2, counts[name]["distinct"]), (3, counts[name]["missing"])):
                item = self.columns.item(r, c)
                item.setText(f"{value:,}")
                item.setToolTip(f"Counted over the whole column ({rows:,} rows).")
        self._propose_target(counts)

    def _propose_target(self, counts) -> None:
        boxes = self.role_boxes
        if any(box.currentText() == TARGET for box in boxes.values()):
            return
        name = propose_target({k: v for k, v in counts.items() if k in boxes
                               and k not in getattr(self, "_chosen_roles", {})})
        if name is None:
            return
        boxes[name].setCurrentText(TARGET)
        # the preview's note on that column (kept as a meta column, its classes counted in the
        # first rows only) no longer holds: the proposal replaces it
        notes = [note for note in self._notes if f"'{name}'" not in note]
        notes.append(f"{name!r} ({counts[name]['distinct']} classes in the whole column) is proposed as the "
                     "target (no column was one): change its role if it is not the label")
        self.status.setText(f"{len(boxes)} columns; " + "; ".join(notes))

    def _stop_counting(self) -> None:
        self._poll.stop()
        self._pending = None
        self._executor.shutdown(wait=False, cancel_futures=True)

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


def options_dialog(loader, path, parent=None, distance_matrix: bool | None = None, chain=None):
    """The dialog asking how to read ``path``: the import dialog for CSV/TSV and Excel files
    (loaders with column roles; ``distance_matrix`` presets its "This file is a distance matrix"
    box, None: as last time; ``chain``, the preparation chain, sets the missing-values default),
    else the loader's generated options form."""
    names = {p.name for p in loader.options}
    if "roles" in names and loader.id in ("csv", "excel"):
        return ImportDialog(loader, path, parent, distance_matrix, chain)
    return LoaderOptionsDialog(loader, path, parent)
