"""A settings form generated from parameter constraints (:mod:`manifold_studio.algorithms.params`).

Each :class:`~manifold_studio.algorithms.params.Param` gets an editor chosen by its type:

=====================================  ============================================
Int                                    QSpinBox bounded by [low, high]
Float with closed finite bounds        QDoubleSpinBox
Float (log hint, open bounds, …)       line edit validated by ``Param.parse``
Bool                                   check box
Choice                                 combo box
IntTuple, AnyOf, allow_none, others    line edit validated by ``Param.parse``
=====================================  ============================================

The help text and the allowed values are the tooltip; a value the constraint refuses is shown
in red with the constraint's own message under the field, and :meth:`ParamForm.values` raises
until it is fixed, so a run is never started with an invalid value. A check of the values against
the data (:meth:`ParamForm.set_data_check`, e.g. "perplexity must be below n = 150") is shown
in red under the form and counted in :meth:`ParamForm.errors`, so Run stays off until it passes. Loader options use the
same form. A new kind of constraint needs nothing here (it gets a validated line edit); a
better widget for it can be added with :func:`register_editor`.
"""
from __future__ import annotations

import math
from typing import Any, Callable

from PySide6.QtCore import Signal
from PySide6.QtGui import QValidator
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDoubleSpinBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QSpinBox,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.params import (
    AnyOf,
    Bool,
    Choice,
    Float,
    Int,
    IntTuple,
    Param,
    validate_params,
)
from manifold_studio.errors import InvalidParameterError, ManifoldStudioError, error_message

INT_LIMIT = 2_147_483_647


def tooltip_for(param: Param) -> str:
    parts = [f"<b>{param.display_name}</b> (<code>{param.name}</code>)"]
    if param.help:
        parts.append(param.help)
    parts.append(f"Allowed: {param.describe()}.")
    parts.append(f"Default: {param.format(param.default)}.")
    return "<p>" + "</p><p>".join(parts) + "</p>"


class ParamEditor(QWidget):
    """Base editor: one parameter, one widget; ``value()`` returns the validated value."""

    changed = Signal()

    def __init__(self, param: Param, parent=None):
        super().__init__(parent)
        self.param = param
        self.layout_ = QVBoxLayout(self)
        self.layout_.setContentsMargins(0, 0, 0, 0)
        self.layout_.setSpacing(1)

    def raw_value(self) -> Any:  # pragma: no cover - abstract
        raise NotImplementedError

    def set_value(self, value: Any) -> None:  # pragma: no cover - abstract
        raise NotImplementedError

    def value(self) -> Any:
        """The validated value, or raise InvalidParameterError naming the parameter."""
        return self.param.validate(self.raw_value())

    def error(self) -> str:
        try:
            self.value()
        except InvalidParameterError as exc:
            return str(exc)
        return ""

    @property
    def input_widget(self) -> QWidget:
        return self.layout_.itemAt(0).widget()


class _ParseValidator(QValidator):
    """Accepts exactly the texts ``Param.parse`` accepts; anything else stays editable
    (Intermediate) but is not acceptable input."""

    def __init__(self, param: Param, parent=None):
        super().__init__(parent)
        self.param = param

    def validate(self, text, pos):
        try:
            self.param.parse(text)
        except (InvalidParameterError, TypeError, ValueError):
            return QValidator.State.Intermediate
        return QValidator.State.Acceptable


class TextEditor(ParamEditor):
    """Line edit validated by ``Param.parse`` (works for every constraint)."""

    def __init__(self, param: Param, parent=None):
        super().__init__(param, parent)
        self.edit = QLineEdit()
        self.edit.setValidator(_ParseValidator(param, self.edit))
        self.edit.setPlaceholderText(param.describe())
        self.edit.setText(param.format(param.default))
        self.edit.textChanged.connect(self.changed)
        self.layout_.addWidget(self.edit)

    def raw_value(self):
        try:
            return self.param.parse(self.edit.text())
        except InvalidParameterError:
            raise
        except (TypeError, ValueError):  # pragma: no cover - parse wraps these
            raise InvalidParameterError(f"Invalid value {self.edit.text()!r} for parameter "
                                        f"'{self.param.name}': allowed {self.param.describe()}.")

    def value(self):
        return self.raw_value()

    def set_value(self, value):
        self.edit.setText(value if isinstance(value, str) else self.param.format(value))


class _SpinEditor(ParamEditor):
    """A spin box (``self.spin``) whose values are ``number`` (int or float)."""

    number: Callable[[Any], Any]  #: int or float, set by the subclass

    def _add_spin(self, spin) -> None:
        """Show ``spin`` (already set up), starting at the parameter's default."""
        self.spin = spin
        spin.setValue(self.number(self.param.default))
        spin.valueChanged.connect(self.changed)
        self.layout_.addWidget(spin)

    def raw_value(self):
        return self.number(self.spin.value())

    def set_value(self, value):
        self.spin.setValue(self.number(value))


class IntEditor(_SpinEditor):
    number = int

    def __init__(self, param: Int, parent=None):
        super().__init__(param, parent)
        spin = QSpinBox()
        low = -INT_LIMIT if param.low is None else max(int(param.low), -INT_LIMIT)
        high = INT_LIMIT if param.high is None else min(int(param.high), INT_LIMIT)
        spin.setRange(low, high)
        spin.setKeyboardTracking(True)
        self._add_spin(spin)


class FloatSpinEditor(_SpinEditor):
    number = float

    def __init__(self, param: Float, parent=None):
        super().__init__(param, parent)
        spin = QDoubleSpinBox()
        default = float(param.default)
        decimals = 2
        text = repr(default)
        if "." in text and "e" not in text:
            decimals = max(2, min(8, len(text.split(".")[1])))
        spin.setDecimals(max(decimals, 3))
        spin.setRange(float(param.low), float(param.high))
        span = float(param.high) - float(param.low)
        spin.setSingleStep(10 ** math.floor(math.log10(span / 20)) if span > 0 else 0.1)
        self._add_spin(spin)


class BoolEditor(ParamEditor):
    def __init__(self, param: Bool, parent=None):
        super().__init__(param, parent)
        self.check = QCheckBox()
        self.check.setChecked(bool(param.default))
        self.check.toggled.connect(self.changed)
        self.layout_.addWidget(self.check)

    def raw_value(self):
        return self.check.isChecked()

    def set_value(self, value):
        self.check.setChecked(bool(value))


class ChoiceEditor(ParamEditor):
    def __init__(self, param: Choice, parent=None):
        super().__init__(param, parent)
        self.combo = QComboBox()
        if param.allow_none:
            self.combo.addItem("none", None)
        for c in param.choices:
            self.combo.addItem(str(c), c)
        self.set_value(param.default)
        self.combo.currentIndexChanged.connect(self.changed)
        self.layout_.addWidget(self.combo)

    def raw_value(self):
        return self.combo.currentData()

    def set_value(self, value):
        for i in range(self.combo.count()):
            if self.combo.itemData(i) == value:
                self.combo.setCurrentIndex(i)
                return
        raise InvalidParameterError(f"Invalid value {value!r} for parameter '{self.param.name}': "
                                    f"allowed {self.param.describe()}.")


def _float_spin_ok(p: Float) -> bool:
    return (p.low is not None and p.high is not None and not p.low_open and not p.high_open
            and not p.log and math.isfinite(p.low) and math.isfinite(p.high) and p.high - p.low <= 1e6)


# (predicate, factory), first match wins; the fallback is TextEditor
_EDITORS: list[tuple[Callable[[Param], bool], Callable[[Param], ParamEditor]]] = [
    (lambda p: p.allow_none and not isinstance(p, Choice), TextEditor),
    (lambda p: isinstance(p, Int), IntEditor),
    (lambda p: isinstance(p, Float) and _float_spin_ok(p), FloatSpinEditor),
    (lambda p: isinstance(p, Bool), BoolEditor),
    (lambda p: isinstance(p, Choice), ChoiceEditor),
    (lambda p: isinstance(p, (Float, IntTuple, AnyOf)), TextEditor),
]


def register_editor(predicate: Callable[[Param], bool], factory: Callable[[Param], ParamEditor]) -> None:
    """Use ``factory(param)`` for constraints matching ``predicate`` (checked before the built-ins)."""
    _EDITORS.insert(0, (predicate, factory))


def editor_for(param: Param) -> ParamEditor:
    for predicate, factory in _EDITORS:
        if predicate(param):
            return factory(param)
    return TextEditor(param)


class ParamForm(QWidget):
    """A form for a tuple of constraints. ``values()`` returns validated values or raises."""

    changed = Signal()
    validityChanged = Signal(bool)

    def __init__(self, params=(), parent=None, empty_text: str = "This algorithm has no parameters."):
        super().__init__(parent)
        self.empty_text = empty_text
        self.params: tuple[Param, ...] = ()
        self.editors: dict[str, ParamEditor] = {}
        self.error_labels: dict[str, QLabel] = {}
        self._valid = True
        self._data_check: Callable[[dict], list[str]] | None = None
        outer = QVBoxLayout(self)
        outer.setContentsMargins(0, 0, 0, 0)
        fields = QWidget()
        outer.addWidget(fields)
        #: the data-dependent problems of the values (see set_data_check), in red under the fields
        self.data_label = QLabel("")
        self.data_label.setObjectName("param_data_problems")
        self.data_label.setWordWrap(True)
        self.data_label.setStyleSheet("color: #b00020;")
        self.data_label.hide()
        outer.addWidget(self.data_label)
        self._form = QFormLayout(fields)
        self._form.setContentsMargins(0, 0, 0, 0)
        self._form.setFieldGrowthPolicy(QFormLayout.FieldGrowthPolicy.AllNonFixedFieldsGrow)
        self.set_params(params)

    def set_params(self, params) -> None:
        while self._form.rowCount():
            self._form.removeRow(0)
        self.params = tuple(params)
        self.editors, self.error_labels = {}, {}
        if not self.params:
            self._form.addRow(QLabel(f"<i>{self.empty_text}</i>"))
        for p in self.params:
            editor = editor_for(p)
            tip = tooltip_for(p)
            editor.setToolTip(tip)
            editor.input_widget.setToolTip(tip)
            editor.input_widget.setObjectName(f"param_{p.name}")
            label = QLabel(p.display_name)
            label.setToolTip(tip)
            err = QLabel("")
            err.setWordWrap(True)
            err.setStyleSheet("color: #b00020;")
            err.hide()
            box = QWidget()
            lay = QVBoxLayout(box)
            lay.setContentsMargins(0, 0, 0, 0)
            lay.setSpacing(1)
            lay.addWidget(editor)
            lay.addWidget(err)
            self._form.addRow(label, box)
            editor.changed.connect(lambda name=p.name: self._on_changed(name))
            self.editors[p.name] = editor
            self.error_labels[p.name] = err
        self._valid = True
        self._refresh_validity()

    def _on_changed(self, name: str) -> None:
        self._show_error(name)
        self._refresh_validity()
        self.changed.emit()

    def _show_error(self, name: str) -> None:
        editor, label = self.editors[name], self.error_labels[name]
        msg = editor.error()
        label.setText(msg)
        label.setVisible(bool(msg))
        editor.input_widget.setStyleSheet("border: 1px solid #b00020;" if msg else "")

    def _refresh_validity(self) -> None:
        self._show_data_problems()
        valid = not self.errors()
        if valid != self._valid:
            self._valid = valid
            self.validityChanged.emit(valid)

    # -- public API -------------------------------------------------------------------------
    def set_row_spacing(self, pixels: int) -> None:
        """The vertical space between the fields (a compact form in a crowded dialog)."""
        self._form.setVerticalSpacing(pixels)

    def editor(self, name: str) -> ParamEditor:
        return self.editors[name]

    def errors(self) -> dict[str, str]:
        """Each field's error ({name: message}); when every field is valid, the data check's
        problems (keyed ``"data 1"``, ``"data 2"``...)."""
        out = {name: msg for name, ed in self.editors.items() if (msg := ed.error())}
        return out or {f"data {i}": msg for i, msg in enumerate(self.data_problems(), 1)}

    def set_data_check(self, check: Callable[[dict], list[str]] | None) -> None:
        """Check the (valid) values against the data: ``check(values) -> [problem, ...]``, e.g.
        ``lambda v: estimator_class(**v).check_params_vs_input(n, d)``; None: no check."""
        self._data_check = check
        self.refresh_data_check()

    def data_problems(self) -> list[str]:
        """The data check's problems of the current values (empty while a field is invalid:
        that error is said first)."""
        if self._data_check is None:
            return []
        try:
            values = self.values()
        except InvalidParameterError:
            return []
        try:
            return [str(m) for m in self._data_check(values)]
        except ManifoldStudioError as exc:   # a rule between parameters (e.g. min_dist > spread)
            return [error_message(exc)]

    def refresh_data_check(self) -> None:
        """Check again (the data changed) and update the message and the validity."""
        self._refresh_validity()

    def _show_data_problems(self) -> None:
        problems = self.data_problems()
        self.data_label.setText("\n".join(problems))
        self.data_label.setVisible(bool(problems))

    def is_valid(self) -> bool:
        return not self.errors()

    def values(self) -> dict[str, Any]:
        """Validated values of every field (raises InvalidParameterError on the first bad one)."""
        values = {name: ed.value() for name, ed in self.editors.items()}
        return validate_params(self.params, values)

    def set_values(self, values: dict) -> None:
        for name, value in values.items():
            if name in self.editors:
                self.editors[name].set_value(value)

    def reset(self) -> None:
        self.set_values({p.name: p.default for p in self.params})
