"""The report in the window (issue 21, item 4): *Add to report* for every view, and
File ▸ Report… (the items in order, reorder / remove / edit the caption, Save as HTML…,
Save as PDF…).

*Add to report* is a button on every view, as Orange has one on every widget: in the map's toolbar
and in the title bar of every view's dock (:class:`ViewTitleBar`, one mechanism for all of them,
:meth:`ReportActions.install_buttons`). It is also in File ▸ Report ▸ (one entry per open view,
listed when the menu opens, plus "the view with the focus" on Ctrl+Shift+R and "the current
data set") and in the map's right-click menu. A feature view (a view of the data set's columns)
adds a data item of its data set (with the Preparation dock's steps); any other view a run item
of the current run. The report renders from state: the view is drawn from what it shows (a
feature view behind another tab draws first, :meth:`ResultView.ensure_drawn`) and rendered off
screen at :data:`FIGURE_SIZE` by :func:`manifold_studio.gui.export.render_view` (the code File ▸
Export uses), whether its tab is visible or not. A view with nothing to show cannot be added: its
button is greyed and its tooltip says why (``report_blocker()``); one that still renders one colour
all over is refused with the same kind of message. Items are added without a caption; captions
are edited in File ▸ Report… (the caption field under the list), not in a box on every add. The model is Qt-free
(:mod:`manifold_studio.analysis.report`, kept in ``session.report`` and saved in the project);
adding, removing, moving an item and editing its caption are session commands
(:mod:`manifold_studio.session.view_state`), so Edit ▸ Undo records them and the dialog follows;
the HTML file is written by a job; the PDF is the same HTML laid out by QTextDocument and
printed to a QPdfWriter (main thread: Qt's text layout needs it).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from PySide6.QtCore import QBuffer, QByteArray, QIODevice, QSize, QTimer, QUrl
from PySide6.QtGui import QAction, QFont, QImage, QKeySequence, QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QMenu,
    QPushButton,
    QStyle,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.analysis.report import Report, data_item, run_item
from manifold_studio.analysis.report_html import report_html, save_report_html
from manifold_studio.errors import error_message
from manifold_studio.fileio.atomic import atomic_write
from manifold_studio.fileio.export_paths import check_output_path
from manifold_studio.gui.export import PANEL_DOCKS, image_bytes, render_view, view_title
from manifold_studio.gui.views.feature_base import FeatureView

FIGURE_SIZE = (1000, 700)
#: the PDF's resolution (the layout unit) and its body text size in points
PDF_DPI, PDF_TEXT_PT = 150, 10
#: docks that hold controls, not a view: no *Add to report* button
NOT_VIEWS = (*PANEL_DOCKS, "preparation")
BUTTON_TEXT = "Add to report"
BUTTON_TIP = ("Add this view, as it is now, to the report (File ▸ Report; its caption is edited there). "
              "Ctrl+Shift+R adds the view with the keyboard focus.")


def report_button(actions: "ReportActions", key: str) -> QToolButton:
    """The *Add to report* button of view ``key`` (the same for every view)."""
    button = QToolButton()
    button.setText(BUTTON_TEXT)
    button.setObjectName("add_to_report")
    button.setAutoRaise(True)
    button.setToolTip(BUTTON_TIP)
    button.clicked.connect(lambda _=False: actions.add_view(key))
    return button


def _blank(image: QImage) -> bool:
    """Whether ``image`` is one colour all over (an empty plot)."""
    rgb = image.convertToFormat(QImage.Format.Format_RGB32)
    h, line = rgb.height(), rgb.bytesPerLine()
    rows = np.frombuffer(rgb.constBits(), dtype=np.uint8, count=line * h).reshape(h, line)
    pixels = rows[:, :4 * rgb.width()].view(np.uint32)
    return bool(pixels.size) and bool(np.all(pixels == pixels[0, 0]))


class ViewTitleBar(QWidget):
    """A view dock's title bar: its title, *Add to report*, float and close. Mouse presses on
    it are left to the dock (drag to move, double-click to float), as Qt's own title bar does."""

    def __init__(self, dock: QDockWidget, button: QToolButton):
        super().__init__(dock)
        self.dock, self.report_button = dock, button
        self.title = QLabel(dock.windowTitle())
        dock.windowTitleChanged.connect(self.title.setText)
        lay = QHBoxLayout(self)
        lay.setContentsMargins(6, 0, 2, 0)  # as low as Qt's own title bar: the views keep their height
        lay.setSpacing(2)
        lay.addWidget(self.title, 1)
        height = self.fontMetrics().height() + 2
        button.setFixedHeight(height)
        lay.addWidget(button)
        style = self.style()
        for icon, tip, slot in ((QStyle.StandardPixmap.SP_TitleBarNormalButton, "Float / dock",
                                 lambda: dock.setFloating(not dock.isFloating())),
                                (QStyle.StandardPixmap.SP_TitleBarCloseButton, "Close", dock.close)):
            b = QToolButton()
            b.setIcon(style.standardIcon(icon))
            b.setIconSize(QSize(height - 6, height - 6))
            b.setFixedSize(height, height)
            b.setToolTip(tip)
            b.setAutoRaise(True)
            b.clicked.connect(lambda _=False, slot=slot: slot())
            lay.addWidget(b)


class ReportActions:
    """File ▸ Report: the menu, *Add to report*, and the report dialog."""

    def __init__(self, window):
        self.window = window
        self.dialog: ReportDialog | None = None
        self.job = None
        self.menu = QMenu("&Report", window)
        self.show_action = QAction("&Report…", window)
        self.show_action.triggered.connect(lambda: self.show_dialog())
        self.add_focus_action = QAction("Add the view with the focus to the report", window,
                                        shortcut=QKeySequence("Ctrl+Shift+R"))
        self.add_focus_action.triggered.connect(lambda: self.add_view(None))
        self.add_data_action = QAction("Add the current data set to the report", window)
        self.add_data_action.triggered.connect(lambda: self.add_dataset())
        self.menu.aboutToShow.connect(self._fill_menu)
        self._fill_menu()
        file_menu = window.menus["file"]
        quit_action = next((a for a in file_menu.actions() if a.text().replace("&", "") == "Quit"), None)
        file_menu.insertMenu(quit_action, self.menu)
        self.map_menu_action = None
        map_view = window.map_view
        if map_view is not None and hasattr(map_view, "plot_item"):
            self.map_menu_action = map_view.plot_item.getViewBox().menu.addAction("Add to report")
            self.map_menu_action.triggered.connect(lambda: self.add_view("map"))
        #: view key -> its *Add to report* button
        self.buttons: dict[str, QToolButton] = {}
        self.install_buttons()
        # the buttons follow the state: greyed, with the reason, while a view has nothing to show
        self._refresh_timer = QTimer(window)
        self._refresh_timer.setSingleShot(True)
        self._refresh_timer.timeout.connect(self.refresh_buttons)
        for signal in (window.bridge.currentRunChanged, window.bridge.runChanged, window.jobs.jobEnded):
            signal.connect(lambda *_: self._refresh_timer.start(0))
        window.bridge.datasetsChanged.connect(lambda: self._refresh_timer.start(0))
        # the dialog follows the session's report (adds, Edit ▸ Undo, a project opened)
        window.bridge.event.connect(lambda ev: ev.kind == "report_changed" and self._report_changed())
        self.refresh_buttons()

    def install_buttons(self) -> None:
        """Give the map's toolbar and every view dock's title bar an *Add to report* button
        (docks added since the last call get theirs; a dock is never given two)."""
        w = self.window
        map_view = w.map_view
        if map_view is not None and "map" not in self.buttons and hasattr(map_view, "add_toolbar_widget"):
            self.buttons["map"] = report_button(self, "map")
            map_view.add_toolbar_widget(self.buttons["map"], primary=True)
        for key, dock in w.docks.items():
            if key in NOT_VIEWS or key in self.buttons or dock.widget() is map_view:
                continue
            self.buttons[key] = report_button(self, key)
            dock.setTitleBarWidget(ViewTitleBar(dock, self.buttons[key]))

    @property
    def report(self) -> Report:
        return self.window.session.report

    def _found(self, key: str):
        """(title, widget) of open view ``key``, or None."""
        return next(((t, wd) for k, t, wd in self.window.export.views() if k == key), None)

    def blocker(self, key: str) -> str:
        """Why view ``key`` cannot be added to the report now ("" when it can)."""
        found = self._found(key)
        if found is None:
            return f"There is no open view '{key}' to add to the report."
        check = getattr(found[1], "report_blocker", None)  # views and tools that can be empty say so
        return check() if callable(check) else ""

    def refresh_buttons(self) -> None:
        """Grey each *Add to report* button whose view has nothing to show; its tooltip says why."""
        for key, button in self.buttons.items():
            reason = self.blocker(key) if self._found(key) is not None else ""
            button.setEnabled(not reason)
            button.setToolTip(reason or BUTTON_TIP)
        if self.map_menu_action is not None and "map" in self.buttons:
            self.map_menu_action.setEnabled(self.buttons["map"].isEnabled())

    def _fill_menu(self) -> None:
        """One *Add to report* entry per open view (views open and close)."""
        self.menu.clear()
        self.menu.addAction(self.show_action)
        self.menu.addSeparator()
        self.menu.addAction(self.add_focus_action)
        self.menu.addAction(self.add_data_action)
        for key, title, _widget in self.window.export.views():
            act = self.menu.addAction(f"Add to report: {title}")
            act.triggered.connect(lambda _=False, key=key: self.add_view(key))

    # -- adding -------------------------------------------------------------------------------
    def add_view(self, key: str | None, caption: str = ""):
        """Add view ``key`` (None: the one with the focus) as its state draws it, at
        :data:`FIGURE_SIZE`, visible or not; returns the item, or None (said why)."""
        w = self.window
        key = key or w.export.current_view()
        found = self._found(key)
        reason = self.blocker(key)
        if found is None or reason:
            w.report_error(reason, log=False)
            return None
        title, widget = found
        try:
            ensure = getattr(widget, "ensure_drawn", None)  # a lazy view draws its state first
            if callable(ensure):
                ensure()
            reason = self.blocker(key)  # e.g. its statistics went to a worker thread
            if reason:
                w.report_error(reason, log=False)
                return None
            picture = render_view(widget, ".png", *FIGURE_SIZE, view_title(widget))
            if _blank(picture):
                w.report_error(f"The view '{title}' draws nothing yet (compute or choose what it shows "
                               "first): nothing was added to the report.")
                return None
            png = image_bytes(picture)
            run = w.session.current_run
            own = getattr(widget, "report_item", None)  # a view of several runs says what it shows
            shown = w.session.datasets.get(getattr(widget, "dataset_name", None) or "")
            if callable(own):
                item = own(caption, png)
            elif isinstance(widget, FeatureView) and shown is not None:  # a view of the data set's columns
                item = data_item(shown, caption, png, self._preparation())
                item.title = f"{title}: {item.title}"
            elif run is not None:
                item = run_item(run, caption, png, view=title)
            elif w.session.current_dataset is not None:
                item = data_item(w.session.current_dataset, caption, png, self._preparation())
                item.title = f"{title}: {item.title}"
            else:
                w.report_error("Nothing to report yet: load data or run an algorithm first.")
                return None
        except Exception as exc:  # noqa: BLE001 - said; the report is unchanged
            w.report_error(f"Could not add the view to the report: {error_message(exc)}")
            return None
        return self._added(item)

    def add_dataset(self, caption: str = ""):
        ds = self.window.session.current_dataset
        if ds is None:
            self.window.report_error("No data set is loaded: load a file or a sample first.")
            return None
        return self._added(data_item(ds, caption, preparation=self._preparation()))

    def _preparation(self) -> list:
        """The session's current preparation chain (what the next run will fit), or none."""
        return self.window.session.chain

    def _added(self, item):
        self.window.session.add_report_item(item)  # a command: Edit ▸ Undo takes it out again
        self.window.show_status(f"Added to the report ({len(self.report)} item(s)): {item.title}. "
                                "Edit its caption in File ▸ Report….")
        return item

    def _report_changed(self) -> None:
        if self.dialog is not None:
            self.dialog.follow()

    # -- the dialog and the files -------------------------------------------------------------
    def show_dialog(self) -> "ReportDialog":
        if self.dialog is None:
            self.dialog = ReportDialog(self)
        self.dialog.refresh()
        if self.window.dialogs:
            self.dialog.show()
            self.dialog.raise_()
        return self.dialog

    def _title(self) -> str:
        project = self.window.project
        path = project.path if project is not None else None
        return f"Manifold Studio report — {path.stem}" if path else "Manifold Studio report"

    def save_html(self, path):
        """Write the report as one self-contained HTML file (a job); returns the Job or None."""
        w = self.window
        if self.report.is_empty:
            w.report_error("The report is empty: nothing was added. Use 'Add to report' on a view first.")
            return None
        snapshot = Report(list(self.report.items))

        def task(progress=None):
            return save_report_html(snapshot, path, self._title())

        self.job = w.start_job(task, title="Saving the report as HTML",
                               on_success=lambda p: w.show_status(f"Saved the report to {p}."),
                               on_failure=lambda msg, detail: w.report_error(f"Could not save the report: {msg}"))
        return self.job

    def save_pdf(self, path) -> Path | None:
        """Print the report to a PDF file through Qt (main thread); returns the path or None."""
        w = self.window
        try:
            check_output_path(path, (".pdf",), "the report")
            doc = QTextDocument()
            for i, item in enumerate(self.report.items):
                if item.image is not None:
                    doc.addResource(QTextDocument.ResourceType.ImageResource, QUrl(f"report-image-{i}.png"),
                                    QImage.fromData(item.image, "PNG"))
            data = QByteArray()
            buf = QBuffer(data)
            buf.open(QIODevice.OpenModeFlag.WriteOnly)
            writer = QPdfWriter(buf)
            writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
            writer.setResolution(PDF_DPI)
            font = QFont(doc.defaultFont())  # the layout is in printer pixels: size the text for paper
            font.setPixelSize(round(PDF_TEXT_PT / 72 * PDF_DPI))
            doc.setDefaultFont(font)
            doc.setPageSize(writer.pageLayout().paintRectPixels(writer.resolution()).size().toSizeF())
            doc.setHtml(report_html(self.report, self._title(), image_src=lambda i, _png: f"report-image-{i}.png",
                                    page_per_item=True))
            doc.print_(writer)
            del writer  # finishes the PDF
            buf.close()
            path = Path(path)
            atomic_write(path, lambda fh: fh.write(bytes(data)))
        except Exception as exc:  # noqa: BLE001 - said; the report is kept
            w.report_error(f"Could not save the report as PDF: {error_message(exc)} The report is kept.")
            return None
        w.show_status(f"Saved the report to {path}.")
        return path


class ReportDialog(QDialog):
    """The report's items in order: move up / down, remove, caption, save as HTML or PDF."""

    def __init__(self, actions: ReportActions):
        super().__init__(actions.window)
        self.actions = actions
        self.setWindowTitle("Report")
        self.resize(560, 420)
        self.list = QListWidget()
        #: the selected item's caption, edited here (saved as typed)
        self.caption_edit = QLineEdit()
        self.caption_edit.setObjectName("report_caption")
        self.caption_edit.setPlaceholderText("Caption of the selected item")
        self.caption_edit.textEdited.connect(self._caption_typed)
        lay = QVBoxLayout(self)
        lay.addWidget(self.list, 1)
        caption_row = QHBoxLayout()
        caption_row.addWidget(QLabel("Caption:"))
        caption_row.addWidget(self.caption_edit, 1)
        lay.addLayout(caption_row)
        row = QHBoxLayout()
        self.buttons = {}
        for key, text, slot in (("up", "Move up", lambda: self.move(-1)), ("down", "Move down", lambda: self.move(1)),
                                ("remove", "Remove", self.remove),
                                ("html", "Save as HTML…", lambda: self.save("html")),
                                ("pdf", "Save as PDF…", lambda: self.save("pdf"))):
            b = self.buttons[key] = QPushButton(text)
            b.clicked.connect(lambda _=False, slot=slot: slot())
            row.addWidget(b)
        lay.addLayout(row)
        self.list.currentRowChanged.connect(lambda _r: self._enable())

    @property
    def report(self) -> Report:
        return self.actions.report

    @staticmethod
    def _line(i: int, item) -> str:
        fig = " [figure]" if item.image is not None else ""
        return f"{i + 1}. {item.title}{fig}" + (f" — {item.caption}" if item.caption else "")

    def refresh(self, select: int | None = None) -> None:
        self.list.clear()
        for i, item in enumerate(self.report.items):
            self.list.addItem(self._line(i, item))
        if select is None and self.list.count():
            select = self.list.count() - 1  # the item added last: its caption is typed next
        if select is not None and 0 <= select < self.list.count():
            self.list.setCurrentRow(select)
        self._enable()

    def _enable(self) -> None:
        row, n = self.list.currentRow(), len(self.report)
        self.buttons["up"].setEnabled(row > 0)
        self.buttons["down"].setEnabled(0 <= row < n - 1)
        self.buttons["remove"].setEnabled(row >= 0)
        self.caption_edit.setEnabled(0 <= row < n)
        self.caption_edit.setText(self.report.items[row].caption if 0 <= row < n else "")
        for key in ("html", "pdf"):
            self.buttons[key].setEnabled(n > 0)

    def follow(self) -> None:
        """The session's report changed: show it, keeping the selected item when it is still there."""
        row = self.list.currentRow()
        item = self.report.items[row] if 0 <= row < len(self.report) and row < self.list.count() else None
        if self.list.count() == len(self.report) and item is not None:  # a caption: relabel in place
            for i, it in enumerate(self.report.items):
                self.list.item(i).setText(self._line(i, it))
            if self.caption_edit.text() != item.caption:
                self.caption_edit.setText(item.caption)
            return
        self.refresh()

    def move(self, step: int) -> None:
        row = self.list.currentRow()
        if row < 0 or not 0 <= row + step < len(self.report):
            return
        self.actions.window.session.move_report_item(row, row + step)
        self.refresh(row + step)

    def remove(self) -> None:
        row = self.list.currentRow()
        if row >= 0:
            self.actions.window.session.remove_report_item(row)
            self.refresh(min(row, len(self.report) - 1))

    def edit_caption(self, text: str) -> None:
        """Set the selected item's caption to ``text`` (what typing in the caption field does)."""
        row = self.list.currentRow()
        if row < 0:
            return
        self.caption_edit.setText(text)
        self._caption_typed(text)

    def _caption_typed(self, text: str) -> None:
        row = self.list.currentRow()
        if 0 <= row < len(self.report):  # a command; the keystrokes of one caption are one undo step
            self.actions.window.session.set_report_caption(row, text)

    def save(self, kind: str) -> None:
        filt = "HTML page (*.html)" if kind == "html" else "PDF document (*.pdf)"
        path, _ = QFileDialog.getSaveFileName(self, "Save the report", str(Path.cwd() / f"report.{kind}"), filt)
        if not path:
            return
        path = path if path.lower().endswith(f".{kind}") else f"{path}.{kind}"
        (self.actions.save_html if kind == "html" else self.actions.save_pdf)(path)


def install_report(window) -> ReportActions:
    """File ▸ Report and *Add to report* (needs File ▸ Export installed first: it lists the views;
    installed after the tools that add view docks, so that each gets its button)."""
    window.report_actions = ReportActions(window)
    return window.report_actions
