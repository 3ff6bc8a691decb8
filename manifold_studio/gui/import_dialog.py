"""The import dialog for CSV/TSV and Excel files (as Orange's File widget): a preview of the
first rows (:func:`manifold_studio.tables.readers.preview_table`), one line per column with its
inferred type, distinct values, missing count and an editable role, the reading options
(delimiter, header, decimal mark, ... from the loader's constraints) and, for a workbook, the
sheet. The choices are remembered per file (QSettings keyed by the absolute path) and proposed
the next time that file is opened.

The distinct and missing counts first come from the preview rows, then from the whole column:
the file is read in full on a background thread (:func:`whole_column_counts`) and the lines and
the reader's notes are updated when it is done (their tooltip says which). When no column is the
target, a text or categorical column with few classes (2 to :data:`MAX_TARGET_CLASSES`, counted
over the whole column) is proposed as the target. One column at most is the target, and the
"Label column" field always names it: choosing a target in the role column fills the field, and
naming a column in the field makes it the target. A role chosen against the inferred one replaces
the reader's note on that column (:mod:`manifold_studio.tables.role_notes`); free text cannot be a
feature, so its role box does not offer it. The missing-values option follows the preparation
chain: ``keep`` when the chain imputes, ``drop`` otherwise, and a line says so.

The options and notes sit left of the two tables (columns above, preview below, split by a handle
the user can drag), so that at 1366 x 768 the columns list shows ten lines and the preview several.
"""
from __future__ import annotations

import html
import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QCheckBox, QComboBox, QDialog, QDialogButtonBox, QFormLayout, QHeaderView, QLabel, QScrollArea, QSplitter,
    QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget,
)

from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.errors import error_message
from manifold_studio.gui.data_panel import LoaderOptionsDialog
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.preferences import open_settings
from manifold_studio.tables.import_counts import (  # noqa: F401 (LABEL_NAMES, MAX_TARGET_CLASSES: documented here)
    LABEL_NAMES, MAX_TARGET_CLASSES, propose_target, whole_column_counts,
)
from manifold_studio.tables.model import FEATURE, META, ROLES, TARGET, TEXT
from manifold_studio.tables.readers import excel_sheets, preview_table
from manifold_studio.tables.role_notes import feature_note, is_role_note

#: rows shown in the preview
PREVIEW_ROWS = 20
#: the columns list shows at least this many lines
MIN_COLUMN_ROWS = 10
#: the preview shows at least this many lines
MIN_PREVIEW_ROWS = 5
#: how often the dialog looks whether the whole-column counts are ready (ms)
POLL_MS = 40
#: the dialog's size when the screen allows it (it fits 1366 x 768 with a title bar)
DEFAULT_SIZE = (1120, 700)


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
    options (the roles changed from the proposed ones in ``roles``, the target in ``label_column``)."""

    def __init__(self, loader, path, parent=None, distance_matrix: bool | None = None, chain=None):
        super().__init__(parent)
        #: whether the preparation chain ([(step_id, params), ...]) fills missing values
        self.chain_imputes = chain_imputes([step for step, _ in (chain or [])])
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-counts")
        self._pending = None       # (generation, future) of the whole-column counts
        self._generation = 0
        self.whole_counts: dict[str, dict] = {}
        self._notes: list[str] = []     # the reader's notes on the columns, said beside the tables
        self._columns = {}              # the preview's columns by name (for the notes on asked roles)
        self._proposal = ""             # the note on the proposed target
        self._label = None              # the column the "Label column" field names (as last synced)
        self._target_chosen = False     # whether the user chose the target (then none is proposed)
        self._building = False          # the role boxes are being filled (not the user's choice)
        self._proposing = False         # a target is being proposed (not the user's choice)
        self._poll = QTimer(self)
        self._poll.setInterval(POLL_MS)
        self._poll.timeout.connect(self._collect_counts)
        self.finished.connect(lambda _result: self._stop_counting())
        self.loader, self.path = loader, Path(path)
        self.setWindowTitle(f"Import {self.path.name} — {loader.name or loader.id}")
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
        self.status.setTextFormat(Qt.TextFormat.RichText)
        self.status.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        self.columns = QTableWidget(0, 5)
        self.columns.setObjectName("import_columns")
        self.columns.setHorizontalHeaderLabels(["Column", "Type", "Distinct", "Missing", "Role"])
        self.preview = QTableWidget(0, 0)
        self.preview.setObjectName("import_preview")
        # compact rows (the role boxes fit a line of text): ten of them and several preview rows
        # fit a 1366 x 768 screen
        self.row_height = self.columns.fontMetrics().height() + 10
        header = self.columns.horizontalHeader().sizeHint().height()   # (the preview has no labels yet)
        for table, rows in ((self.columns, MIN_COLUMN_ROWS), (self.preview, MIN_PREVIEW_ROWS)):
            table.verticalHeader().setMinimumSectionSize(self.row_height)
            table.verticalHeader().setDefaultSectionSize(self.row_height)
            table.setMinimumHeight(self.row_height * rows + header + table.horizontalScrollBar().sizeHint().height()
                                   + 2 * table.frameWidth() + 4)
        self.columns.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.columns.horizontalHeader().setStretchLastSection(True)
        self.missing_note = QLabel("")
        self.missing_note.setWordWrap(True)
        self.missing_note.setObjectName("import_missing_note")
        self.distance_box = QCheckBox("This file is a distance matrix")
        self.distance_box.setObjectName("import_distance_matrix")
        self.distance_box.setToolTip(
            "Read the numeric columns as a square n × n matrix of distances between n items (a header row and a "
            "first column of names are optional) and check it: square, finite, non-negative, zero diagonal, "
            "symmetric. Only the methods that take distances (metric = precomputed) can then fit it.")
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Open | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        self._lay_out()
        self.proposed: dict[str, str] = {}
        self.role_boxes: dict[str, QComboBox] = {}
        saved = remembered(self.path)
        self._saved_roles = dict(saved.get("roles") or {})
        self.distance_box.setChecked(bool(saved.get(DISTANCE_OPTION)) if distance_matrix is None else distance_matrix)
        self.form.set_values({k: v for k, v in saved.items() if k in self.form.editors})
        self._follow_chain_for_missing("missing" in saved)
        if saved.get("sheet") in self.sheets:
            self.sheet_box.setCurrentText(saved["sheet"])
        self.form.changed.connect(self._form_changed)
        self.sheet_box.currentIndexChanged.connect(lambda _i: self.refresh())
        self.refresh()

    def _lay_out(self) -> None:
        """Options and notes on the left (scrolling when the dialog is short), the columns list
        above the preview on the right, both splits draggable; buttons below."""
        left = QWidget()
        left_lay = QVBoxLayout(left)
        left_lay.setContentsMargins(0, 0, 6, 0)
        if self.sheets:
            top = QFormLayout()
            top.addRow("Sheet:", self.sheet_box)
            left_lay.addLayout(top)
        for widget in (self.form, self.missing_note, self.distance_box, self.status):
            left_lay.addWidget(widget)
        left_lay.addStretch(1)
        scroll = QScrollArea()
        scroll.setObjectName("import_options")
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        scroll.setWidget(left)
        # the columns list and the preview share the height through a splitter the user can drag
        self.splitter = QSplitter(Qt.Orientation.Vertical)
        self.splitter.setObjectName("import_splitter")
        self.splitter.setChildrenCollapsible(False)
        for title, table in ((QLabel("<b>Columns</b> (set a role: feature, target, meta or skipped)"), self.columns),
                             (QLabel(f"<b>The first {PREVIEW_ROWS} rows</b>"), self.preview)):
            pane = QWidget()
            pane_lay = QVBoxLayout(pane)
            pane_lay.setContentsMargins(0, 0, 0, 0)
            pane_lay.setSpacing(2)
            pane_lay.addWidget(title)
            pane_lay.addWidget(table, 1)
            self.splitter.addWidget(pane)
        self.splitter.setStretchFactor(0, 3)
        self.splitter.setStretchFactor(1, 2)
        self.sides = QSplitter(Qt.Orientation.Horizontal)
        self.sides.setObjectName("import_sides")
        self.sides.setChildrenCollapsible(False)
        self.sides.addWidget(scroll)
        self.sides.addWidget(self.splitter)
        self.sides.setStretchFactor(0, 0)
        self.sides.setStretchFactor(1, 1)
        scroll.setMinimumWidth(300)
        lay = QVBoxLayout(self)
        lay.addWidget(self.sides, 1)
        lay.addWidget(self.buttons)
        screen = (self.screen() or QGuiApplication.primaryScreen()).availableGeometry()
        width, height = min(DEFAULT_SIZE[0], screen.width() - 40), min(DEFAULT_SIZE[1], screen.height() - 60)
        self.resize(max(width, 640), max(height, 480))
        self.sides.setSizes([340, max(width, 640) - 340])

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
                self.status.setText(html.escape(f"Cannot read {self.path.name} with these options: "
                                                f"{error_message(exc)}", quote=False))
                ok = False
        self.buttons.button(QDialogButtonBox.StandardButton.Open).setEnabled(ok)
        if table is None:
            return
        keep = {name: box.currentText() for name, box in self.role_boxes.items()
                if box.currentText() != self.proposed.get(name)}
        keep = {**self._saved_roles, **keep}
        self._saved_roles = {}
        # one target: the column the "Label column" field names, when it names one
        self._label = self._label_in_form(table.names)
        if self._label is not None:
            keep = {n: r for n, r in keep.items() if r != TARGET or n == self._label}
        self.proposed = dict(table.roles)
        self.role_boxes = {}
        self._columns = {c.name: c for c in table.columns}
        infos = table.infos()
        self._building = True
        self.columns.setRowCount(len(infos))
        for r, info in enumerate(infos):
            for c, text in enumerate((info.name, info.type, f"{info.n_distinct:,}", f"{info.n_missing:,}")):
                item = QTableWidgetItem(text)
                item.setToolTip(table.column(info.name).note or text)
                self.columns.setItem(r, c, item)
            self.columns.setCellWidget(r, 4, self._role_box(info, keep))
        self._building = False
        targets = [n for n, box in self.role_boxes.items() if box.currentText() == TARGET]
        if targets and self._label not in targets:
            self._set_label(targets[0])
        frame = table.to_frame()
        self.preview.setColumnCount(len(frame.columns))
        self.preview.setRowCount(len(frame))
        self.preview.setHorizontalHeaderLabels([str(c) for c in frame.columns])
        for r in range(len(frame)):
            for c in range(len(frame.columns)):
                v = frame.iat[r, c]
                self.preview.setItem(r, c, QTableWidgetItem("" if v is None or v != v else str(v)))
        self.preview.resizeColumnsToContents()
        self._notes = list(table.report)
        self._proposal = ""
        self._show_status()
        self._preview_rows = len(frame)
        self._chosen_roles = keep
        self._count_whole_columns()

    def _role_box(self, info, keep: dict) -> QComboBox:
        box = QComboBox()
        box.addItems(list(ROLES))
        if info.type == TEXT:   # free text cannot be fitted: the role box says so
            item = box.model().item(ROLES.index(FEATURE))
            item.setEnabled(False)
            item.setToolTip("Free text cannot be a feature (too many distinct values to be categorical).")
        wanted = keep.get(info.name)
        box.setCurrentText(wanted if wanted in ROLES and not (wanted == FEATURE and info.type == TEXT) else info.role)
        box.setObjectName(f"role_{info.name}")
        box.currentTextChanged.connect(lambda role, name=info.name: self._role_changed(name, role))
        self.role_boxes[info.name] = box
        return box

    # -- one target, named by the "Label column" field ------------------------------------
    def _label_in_form(self, names: list[str]) -> str | None:
        """The column the "Label column" field names (by name or index), None when none."""
        editor = self.form.editors.get("label_column")
        try:
            value = None if editor is None else editor.value()
        except Exception:  # noqa: BLE001 - a half-typed value names no column
            return None
        if isinstance(value, int) and not isinstance(value, bool):
            return names[value] if 0 <= value < len(names) and str(value) not in names else str(value)
        return value if value in names else None

    def _set_label(self, name: str | None) -> None:
        """Show ``name`` in the "Label column" field without reading the file again."""
        self._label = name
        editor = self.form.editors.get("label_column")
        if editor is None:
            return
        self.form.blockSignals(True)
        try:
            editor.set_value(name)
        finally:
            self.form.blockSignals(False)

    def _form_changed(self) -> None:
        label = self._label_in_form(list(self.role_boxes))
        if label != self._label:
            self._target_chosen = True    # the user named the label (or none): nothing is proposed
            if label is None:             # ... none: the target's role box follows
                self._building = True
                for name, box in self.role_boxes.items():
                    if box.currentText() == TARGET:
                        box.setCurrentText(self.proposed.get(name) if self.proposed.get(name) != TARGET else META)
                self._building = False
        self.refresh()

    def _role_changed(self, name: str, role: str) -> None:
        if self._building:
            return
        was_label = self._label == name
        if role == TARGET:
            self._set_label(name)
            for other, box in self.role_boxes.items():   # one target: the former one gets its own role back
                if other != name and box.currentText() == TARGET:
                    box.setCurrentText(self.proposed.get(other) if self.proposed.get(other) != TARGET else META)
        elif was_label:
            self._set_label(None)
        if not self._proposing and (role == TARGET or was_label):   # the user chose the target (or none)
            self._target_chosen = True
            self._proposal = ""
        self._show_status()

    def _show_status(self) -> None:
        """The reader's notes, less those on columns given another role (with what that role does)."""
        asked = {n: box.currentText() for n, box in self.role_boxes.items() if box.currentText() != self.proposed.get(n)}
        notes = [n.rstrip(".") for n in self._notes if not any(is_role_note(n, name) for name in asked)]
        for name, role in asked.items():
            note = None if role != FEATURE or name not in self._columns else \
                feature_note(self._columns[name], self.whole_counts.get(name, {}).get("missing"))
            if note:
                notes.append(note.rstrip("."))
        if self._proposal:
            notes.append(self._proposal)
        self.status.setText(f"{len(self.role_boxes)} columns" + "".join(f"<br>• {html.escape(n, quote=False)}"
                                                                  for n in notes))

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
            counts, notes = future.result()
        except Exception as exc:  # noqa: BLE001 - the preview counts stay, and the status says why
            self.status.setText(self.status.text() + "<br>" + html.escape(
                f"(whole-column counts unavailable: {error_message(exc)})", quote=False))
            return
        self.whole_counts = counts
        self._notes = notes     # the reader's notes over every row, not the preview's
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
        self._show_status()

    def _propose_target(self, counts) -> None:
        boxes = self.role_boxes
        if self._target_chosen or any(box.currentText() == TARGET for box in boxes.values()):
            return
        name = propose_target({k: v for k, v in counts.items() if k in boxes
                               and k not in getattr(self, "_chosen_roles", {})})
        if name is None:
            return
        self._proposing = True
        try:
            boxes[name].setCurrentText(TARGET)
        finally:
            self._proposing = False
        # the reader's note on that column (kept as a meta column) no longer holds: the proposal replaces it
        self._proposal = (f"{name!r} ({counts[name]['distinct']} classes in the whole column) is proposed as the "
                          "target (no column was one): change its role if it is not the label")

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
