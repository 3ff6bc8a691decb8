"""Small widget factories shared by the panels and views, so that the same kind of label or
field is built (and looks) the same everywhere."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLayout, QSpinBox, QVBoxLayout, QWidget

#: style of a message that reports an error
ERROR_STYLE = "color: #b00020;"


def heading_label(text: str = "") -> QLabel:
    """The bold, word-wrapped line on top of a panel or view that says what it shows."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setStyleSheet("font-weight: bold;")
    return label


def message_label(text: str = "") -> QLabel:
    """A word-wrapped label for results and errors, whose text the user can select and copy."""
    label = QLabel(text)
    label.setWordWrap(True)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    return label


def say(label: QLabel, text: str, error: bool = False) -> None:
    """Show ``text`` in ``label``, in red when it reports an error."""
    label.setStyleSheet(ERROR_STYLE if error else "")
    label.setText(text)


def seed_spin_box(tooltip: str) -> QSpinBox:
    """A random seed field: 0 to 2³¹ − 1, starting at 0."""
    spin = QSpinBox()
    spin.setRange(0, 2**31 - 1)
    spin.setToolTip(tooltip)
    return spin


def button_row(*buttons) -> QHBoxLayout:
    """The buttons side by side (Run / Compute and Cancel)."""
    row = QHBoxLayout()
    for b in buttons:
        row.addWidget(b)
    return row


def column(*parts, margin: int = 0) -> QWidget:
    """A widget stacking ``parts`` top to bottom: a widget, a layout, a ``(widget, stretch)``
    pair, or None for a stretch (a settings column: chooser, form, buttons, notes)."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(margin, margin, margin, margin)
    for part in parts:
        if part is None:
            lay.addStretch(1)
        elif isinstance(part, QLayout):
            lay.addLayout(part)
        elif isinstance(part, tuple):
            lay.addWidget(*part)
        else:
            lay.addWidget(part)
    return box
