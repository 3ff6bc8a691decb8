"""What the import dialog learns from the whole file (Qt-free; the dialog runs it on a background
thread): the distinct and missing counts of every column, the reader's notes over all rows, and the
column to propose as the target when none is set."""
from __future__ import annotations

from manifold_studio.tables.model import CATEGORICAL, NUMERIC, TEXT
from manifold_studio.tables.readers import read_table

#: a text or categorical column with 2 to this many classes may be proposed as the target
MAX_TARGET_CLASSES = 20
#: column names that usually hold the label (compared in lower case)
LABEL_NAMES = ("class", "label", "target", "y", "species", "diagnosis", "outcome", "category", "cultivar",
               "group", "type", "variety")
#: options that do not change what the columns hold (the roles, what to do with gaps, the row ids)
_NOT_COUNTED = ("roles", "missing", "id_column")


def whole_column_counts(path, **options) -> tuple[dict[str, dict], list[str]]:
    """``({column: {"distinct", "missing", "type", "note", "rows"}}, the reader's notes)`` over the
    whole file. Options as :func:`read_table` (the roles, missing and id column are not used)."""
    opts = {k: v for k, v in options.items() if k not in _NOT_COUNTED}
    table = read_table(path, **opts).table
    counts = {info.name: {"distinct": info.n_distinct, "missing": info.n_missing, "type": info.type,
                          "note": info.note, "rows": table.n_rows} for info in table.infos()}
    return counts, list(table.report)


def propose_target(counts: dict[str, dict]) -> str | None:
    """The column to propose as the target when none is set: among the columns with 2 to
    :data:`MAX_TARGET_CLASSES` classes, no missing value and no date part, a text or categorical one
    named like a label (:data:`LABEL_NAMES`), else a numeric one named like a label (wine's
    ``cultivar`` 1, 2, 3), else the text or categorical one with the fewest classes (the first on a
    tie); None when there is none."""
    fits = [name for name, c in counts.items() if 2 <= c["distinct"] <= MAX_TARGET_CLASSES
            and c["missing"] == 0 and "date part" not in (c.get("note") or "")]
    texts = [name for name in fits if counts[name]["type"] in (TEXT, CATEGORICAL)]
    named = [name for name in texts if name.strip().lower() in LABEL_NAMES] + \
            [name for name in fits if counts[name]["type"] == NUMERIC and name.strip().lower() in LABEL_NAMES]
    if named:
        return named[0]
    return min(texts, key=lambda name: counts[name]["distinct"]) if texts else None
