"""What a load report says about a column whose role was asked for (``--role``, ``roles=``, the
import dialog's role column), Qt-free.

The reader's notes say where inference put a column ("left out of the features, kept as a
categorical meta column"). Once a role is asked for, those notes no longer hold: :func:`restate`
drops them and says what the asked role does, e.g. that a text column with few classes is fitted as
the codes of its categories (and that the ``one_hot`` preparation step fits one indicator column per
category instead).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.tables.model import CATEGORICAL, DATETIME, FEATURE, Column, Table, quote

#: words of a reader's note that say where inference put a column (its role)
_ROLE_WORDS = ("kept as", "left out of the features", "not fitted", "is a feature as asked")
#: categories named in a note, at most
_SHOWN = 5


def is_role_note(note: str, name: str) -> bool:
    """Whether ``note`` is a reader's note on where inference put column ``name``."""
    return note.startswith(f"column {quote(name)} ") and any(w in note for w in _ROLE_WORDS)


def feature_note(column: Column, missing: int | None = None) -> str | None:
    """How a non-numeric ``column`` asked to be a feature is fitted (None for a numeric one);
    ``missing``: its count of missing values when ``column`` holds only some rows of the file."""
    name = quote(column.name)
    if column.type == CATEGORICAL and column.numeric_categories:
        cats = column.categories
        return (f"column {name} is a feature as asked: fitted as its values ({cats.min():g} to "
                f"{cats.max():g}).") if len(cats) else None
    if column.type == CATEGORICAL:
        cats = [str(c) for c in column.categories]
        pairs = ", ".join(f"{c}={i}" for i, c in enumerate(cats[:_SHOWN])) + (", …" if len(cats) > _SHOWN else "")
        gaps = int(np.count_nonzero(column.values < 0)) if missing is None else int(missing)
        return (f"column {name} is a feature as asked: its {len(cats)} categories are fitted as the codes "
                f"0 to {len(cats) - 1} ({pairs})"
                + (f"; its {gaps} row(s) without a value are handled as any missing feature value (the "
                   "missing-values option, or an impute step)" if gaps else "")
                + "; with the one_hot preparation step, one indicator column per category is fitted instead.")
    if column.type == DATETIME:
        return f"column {name} is a feature as asked: fitted as seconds since 1970-01-01."
    return None


def restate(table: Table, before: dict[str, str]) -> list[str]:
    """After roles were set on ``table`` (in place): for every column whose role differs from
    ``before`` ({name: role}), drop the report's notes on where inference put it and add what its
    new role does. Returns the names restated."""
    changed = [name for name, role in table.roles.items() if name in before and before[name] != role]
    for name in changed:
        column = table.column(name)
        table.report = [r for r in table.report if not is_role_note(r, name)]
        note = feature_note(column) if column.role == FEATURE else None
        if note:
            table.report.append(note)
    return changed
