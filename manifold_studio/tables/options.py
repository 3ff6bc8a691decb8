"""Loader options shared by the table loaders (CSV/TSV, Excel, Parquet), as constraints.

Like algorithm parameters they validate values, parse them from the command line and describe
themselves for a generated form: :data:`LABEL_COLUMN`, :data:`ID_COLUMN`, :data:`ROLES_OPTION`
(``year=meta,island=target``) and :data:`MISSING`.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Choice, Param
from manifold_studio.errors import InvalidParameterError
from manifold_studio.tables.model import ROLES

_ALIASES = {",": "comma", "\t": "tab", "\\t": "tab", ";": "semicolon", "|": "pipe",
            " ": "whitespace", "space": "whitespace"}
_ROLE_ALIASES = {"skip": "skipped", "label": "target", "ignore": "skipped", "features": "feature"}

__all__ = ["ColumnRef", "DelimiterChoice", "RoleMap", "LABEL_COLUMN", "ID_COLUMN", "ROLES_OPTION", "MISSING",
           "TABLE_OPTIONS", "SheetRef", "SHEET"]


def _fail(name, value, allowed):
    raise InvalidParameterError(f"Invalid value {value!r} for parameter '{name}': allowed {allowed}.")


class ColumnRef(Param):
    """A column picked by name or by 0-based index (text that is an integer is an index
    unless a column carries that name); ``none`` for no column."""

    def _check(self, value):
        if isinstance(value, bool):
            _fail(self.name, value, self.describe())
        if isinstance(value, (int, np.integer)):
            return int(value)
        if isinstance(value, str) and value.strip():
            return value.strip()
        _fail(self.name, value, self.describe())

    def _parse(self, text):
        return text

    def _describe(self):
        return "a column name or a 0-based column index"


class SheetRef(ColumnRef):
    """An Excel sheet by name or 0-based index; ``none`` for the only sheet."""

    def _describe(self):
        return "a sheet name or a 0-based sheet index"


class DelimiterChoice(Choice):
    """A delimiter by name; the characters themselves (``,`` ``;`` ``|`` tab) are accepted too."""

    def _check(self, value):
        if isinstance(value, str):
            value = _ALIASES.get(value, value.lower())
        return super()._check(value)

    def parse(self, text):
        if isinstance(text, str) and text in ("\t", " "):  # Param.parse would strip them away
            return self.validate(text)
        return super().parse(text)

    def _parse(self, text):
        return text


class RoleMap(Param):
    """Column roles by name: a dict ``{column: role}`` or text ``year=meta,island=target``
    (roles: feature, target, meta, skipped; ``skip`` and ``label`` are accepted too)."""

    def _check(self, value):
        if isinstance(value, str):
            try:
                value = self._parse(value)
            except ValueError:
                _fail(self.name, value, self.describe())
        if not isinstance(value, dict):
            _fail(self.name, value, self.describe())
        out = {}
        for key, role in value.items():
            role = _ROLE_ALIASES.get(str(role).strip().lower(), str(role).strip().lower())
            if not isinstance(key, str) or not key.strip() or role not in ROLES:
                _fail(self.name, {key: role}, self.describe())
            out[key.strip()] = role
        return out

    def _parse(self, text):
        out = {}
        for part in (p for p in text.split(",") if p.strip()):
            if "=" not in part:
                raise ValueError(part)
            key, role = part.rsplit("=", 1)
            out[key.strip()] = role.strip()
        return out

    def format(self, value):
        return "none" if not value else ",".join(f"{k}={v}" for k, v in value.items())

    def _describe(self):
        return "column=role pairs separated by commas (roles: " + ", ".join(ROLES) + ")"


LABEL_COLUMN = ColumnRef("label_column", None,
                         "The column holding the labels (class names or values to color by), by name or "
                         "0-based index; none when the file has no label column.", allow_none=True,
                         label="Label column")
ID_COLUMN = ColumnRef("id_column", None,
                      "A column whose values identify the rows (unique; kept as meta); none to use the "
                      "line numbers of the file.", allow_none=True, label="Id column")
ROLES_OPTION = RoleMap("roles", None,
                       "Roles that override the proposed ones, e.g. year=meta,island=target "
                       "(feature: fitted; target: a label; meta: kept and shown, not fitted; skipped).",
                       allow_none=True, label="Column roles")
MISSING = Choice("missing", "drop",
                 "What to do with rows holding missing values (empty, NA, NaN, ?): 'drop' them and list "
                 "them in the report, 'keep' them as NaN (for an impute step, or probabilistic PCA with "
                 "method=em; other methods refuse NaN), or refuse the file with an 'error'.",
                 choices=("drop", "keep", "error"), label="Missing values")
SHEET = SheetRef("sheet", None, "The sheet to read; none when the workbook has only one (with several, "
                 "the message lists them).", allow_none=True, label="Sheet")
TABLE_OPTIONS = (LABEL_COLUMN, ID_COLUMN, ROLES_OPTION, MISSING)
