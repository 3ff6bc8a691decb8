"""A checkable list of algorithms, each with its own generated settings form (:class:`ParamForm`)
shown below the list for the highlighted one, and "Add a copy" (another entry of the same
algorithm with its own settings). Test & Score and Compare clusterings use it."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QListWidget, QListWidgetItem, QPushButton, QStackedWidget, QVBoxLayout, QWidget

from manifold_studio.errors import InvalidParameterError, ManifoldStudioError, error_message
from manifold_studio.gui.param_form import ParamForm
from manifold_studio.gui.widgets import button_row, column, message_label, say


class MethodList(QWidget):
    """Entries are named: the algorithm id, or "id #2", "id #3" for copies."""

    def __init__(self, host, algorithm_ids, *, tooltip: str = "", copy_tooltip: str = "", fixed=None,
                 parent=None):
        """``fixed(algorithm_id) -> {parameter: why}``: parameters the tool sets itself, shown
        disabled with ``why`` as their tooltip (Compare clusterings sets the number of clusters)."""
        super().__init__(parent)
        self.host = host
        self.fixed = fixed
        self.list = QListWidget()
        self.list.setToolTip(tooltip)
        self.forms = QStackedWidget()
        self._form_of: dict[str, ParamForm | None] = {}   # entry name -> its settings (None: not made yet)
        self._algo_of: dict[str, str] = {}         # entry name -> algorithm id
        for algo_id in algorithm_ids:
            self._add(algo_id, algo_id, host.algorithm_class(algo_id).name or algo_id)
        self.list.currentRowChanged.connect(self._show_form)
        self.copy_button = QPushButton("Add a copy")
        self.copy_button.setToolTip(copy_tooltip)
        self.copy_button.clicked.connect(lambda: self.add_copy())
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(self.list, 1)
        lay.addWidget(self.copy_button)
        lay.addWidget(self.forms, 1)

    def _add(self, name: str, algo_id: str, text: str) -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setData(Qt.ItemDataRole.UserRole, name)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsUserCheckable)
        item.setCheckState(Qt.CheckState.Unchecked)
        self.list.addItem(item)
        # the settings form is made when the entry is first highlighted or read (a window
        # starts faster without a form per algorithm in a dock nobody opened yet)
        self._form_of[name], self._algo_of[name] = None, algo_id
        self.forms.addWidget(QWidget())
        return item

    def _make_form(self, name: str) -> ParamForm:
        """Entry ``name``'s settings form, made now in place of its placeholder in the stack."""
        algo_id = self._algo_of[name]
        form = ParamForm(self.host.algorithm_class(algo_id).params)
        for pname, why in (self.fixed(algo_id) if self.fixed is not None else {}).items():
            form.editor(pname).setEnabled(False)
            form.editor(pname).setToolTip(why)
        index = list(self._form_of).index(name)
        placeholder = self.forms.widget(index)
        current = self.forms.currentIndex()
        self.forms.insertWidget(index, form)
        self.forms.removeWidget(placeholder)
        placeholder.deleteLater()
        self.forms.setCurrentIndex(current)
        self._form_of[name] = form
        return form

    def _show_form(self, row: int) -> None:
        if 0 <= row < self.list.count():
            self.form(self.list.item(row).data(Qt.ItemDataRole.UserRole))
        self.forms.setCurrentIndex(row)

    def add_copy(self, name: str | None = None) -> str:
        """Add (ticked) another entry of entry ``name``'s algorithm (default: the highlighted one)
        starting from its settings; returns the new entry's name ("svm #2")."""
        if name is None:
            item = self.list.currentItem() or self.list.item(0)
            name = item.data(Qt.ItemDataRole.UserRole)
        algo = self._algo_of[name]
        n = 2
        while f"{algo} #{n}" in self._form_of:
            n += 1
        new = f"{algo} #{n}"
        self._add(new, algo, new)
        source, form = self.form(name), self.form(new)
        for pname, editor in source.editors.items():
            if not editor.error():
                form.editor(pname).set_value(editor.value())
        self.check(new)
        return new

    def form(self, name: str) -> ParamForm:
        """The settings of entry ``name`` (an algorithm id, or a copy's name)."""
        form = self._form_of[name]
        return form if form is not None else self._make_form(name)

    def algorithm(self, name: str) -> str:
        return self._algo_of[name]

    def check(self, name: str, checked: bool = True) -> None:
        for i in range(self.list.count()):
            item = self.list.item(i)
            if item.data(Qt.ItemDataRole.UserRole) == name:
                item.setCheckState(Qt.CheckState.Checked if checked else Qt.CheckState.Unchecked)
                self.list.setCurrentRow(i)
                return
        raise KeyError(name)

    def checked(self) -> list[str]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())
                if self.list.item(i).checkState() == Qt.CheckState.Checked]

    def specs(self, names) -> list[tuple[str, dict]]:
        """``[(algorithm id, settings)]`` of entries ``names``, without the parameters the tool
        sets itself (``fixed``); a ManifoldStudioError names the invalid setting (prefixed with
        the entry's name)."""
        out = []
        for n in names:
            algo = self._algo_of[n]
            fixed = self.fixed(algo) if self.fixed is not None else {}
            try:
                out.append((algo, {k: v for k, v in self.form(n).values().items() if k not in fixed}))
            except ManifoldStudioError as exc:
                raise InvalidParameterError(f"{n}: {error_message(exc)}") from None
        return out


class ComparisonJob:
    """The job side of a comparison dock (Test & Score, Compare clusterings): its run and Cancel
    buttons, the worker job with progress and Cancel, the status line. The dock sets
    ``JOB_TITLE``, ``run_button``, ``cancel_button``, ``status``, ``window`` and ``job`` and
    defines ``_done(result)`` and ``_cancelled()``."""

    JOB_TITLE = ""

    def init_job(self, window, run_text: str, start_text: str) -> None:
        """The state and controls every comparison dock has: no comparison yet, the run and
        Cancel buttons, the status line."""
        self.window = window
        self.comparison = None
        self.dataset_name: str | None = None
        self.job = None
        self.run_button = QPushButton(run_text)
        self.run_button.clicked.connect(lambda: self.run())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel)
        self.status = message_label(start_text)

    def settings_column(self, chooser: QWidget, form, stretch: int = 1) -> QWidget:
        """The dock's left column: the method chooser, the settings form, then Run and Cancel."""
        return column((chooser, stretch), form, button_row(self.run_button, self.cancel_button), margin=2)

    @property
    def busy(self) -> bool:
        return self.job is not None and not self.job.finished

    def launch(self, func, *args, **kwargs):
        """Start ``func(*args, **kwargs, progress=...)`` on a worker thread; the buttons follow it."""
        self.run_button.setEnabled(False)
        self.cancel_button.setEnabled(True)
        self.job = self.window.start_job(func, *args, title=self.JOB_TITLE, on_success=self._done,
                                         on_failure=self._failed, on_cancel=self._cancelled, **kwargs)
        self.job.ended.connect(self._ended)
        return self.job

    def cancel(self) -> None:
        if self.busy:
            self.job.cancel()

    def _ended(self) -> None:
        self.run_button.setEnabled(True)
        self.cancel_button.setEnabled(False)

    def _failed(self, message: str, detail: str) -> None:
        say(self.status, f"{self.JOB_TITLE} failed: {message}", error=True)
        self.window.report_error(f"{self.JOB_TITLE} failed: {message}", detail)
