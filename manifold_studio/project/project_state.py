"""The analysis state a project keeps beyond its data sets and runs: the current preparation
chain (field ``chain``: ``[[step id, {parameters}], ...]``), the views' settings (``views``) and
the selection (``selection``). Written and read by
:mod:`manifold_studio.project.project_file`."""
from __future__ import annotations

import numpy as np

from manifold_studio.errors import DataError, ManifoldStudioError
from manifold_studio.files.model_file import _jsonable
from manifold_studio.session.model import Session


def chain_document(session: Session) -> dict:
    """The session's current preparation chain as the project's ``chain`` field."""
    return {"chain": [[step, _jsonable(params)] for step, params in session.chain]}


def read_chain(session: Session, meta: dict, problems: list, file_name: str) -> None:
    """Restore the current preparation chain (``meta["chain"]``). A malformed field is reported
    and left out; a step that is not installed is kept (the chain is not lost) and reported."""
    raw = meta.get("chain") or []
    if not isinstance(raw, list) or not all(isinstance(s, (list, tuple)) and len(s) == 2 and isinstance(s[0], str)
                                            and isinstance(s[1], dict) for s in raw):
        problems.append(f"{file_name}: field 'chain' is not a list of [step id, {{parameters}}]: the "
                        "preparation chain was not restored.")
        return
    session.restore_chain(raw)
    missing = session.missing_steps()
    if missing:
        problems.append(f"{file_name}: the preparation chain names step(s) {', '.join(repr(m) for m in missing)}, "
                        f"which are not installed (installed: {', '.join(sorted(session.host.preprocessors)) or 'none'}); "
                        "the chain is kept, but a run needs those steps: install their plugin or remove them "
                        "in the Preparation dock.")


# -- what the analyst looks at: the selection and the views' settings (session.view_state) ----------
def view_state_document(session: Session, arrays: dict) -> dict:
    """The project's ``views`` field (``{view: {key: value}}``) and ``selection`` field (data set
    name -> the member holding its selected rows, ``selection/<i>``), arrays put in ``arrays``."""
    selection, saved = {}, {}
    for i, (name, rows) in enumerate(session.selections().items()):
        arrays[f"selection/{i}"] = np.asarray(rows, dtype=np.int64)
        selection[name] = f"selection/{i}"
    for i, (name, kept) in enumerate(session.saved_selections().items()):
        saved[name] = {}
        for j, (label, rows) in enumerate(kept.items()):
            arrays[f"selection/saved/{i}/{j}"] = np.asarray(rows, dtype=np.int64)
            saved[name][label] = f"selection/saved/{i}/{j}"
    return {"views": _jsonable(session.view_settings()), "selection": selection, "saved_selections": saved}


def _rows(session, name, key, array, where: str, problems: list, file_name: str):
    """The rows of data set ``name`` stored under member ``key``, or None (said in ``problems``)."""
    ds = session.datasets.get(name)
    try:
        rows = np.asarray(array(key, where))
        if ds is None or rows.ndim != 1 or rows.dtype.kind not in "iu" \
                or (rows.size and (rows.min() < 0 or rows.max() >= ds.n_samples)):
            raise DataError(f"it is not a list of rows of data set '{name}'")
    except ManifoldStudioError as exc:
        problems.append(f"{file_name}: {where} is damaged and was left out: {exc}")
        return None
    return rows


def read_view_state(session: Session, meta: dict, array, problems: list, file_name: str) -> None:
    """Restore the views' settings and the selection of a detached ``session`` whose data sets
    are read; ``array(key, field)`` reads a member. A project written before the views' settings
    were session state keeps its map colour (``view_settings["map_colour"]``). A damaged entry is
    reported and left out."""
    views = meta.get("views")
    if views is None:
        old = (meta.get("view_settings") or {}).get("map_colour")
        views = {"map": {"colour": old}} if isinstance(old, str) and old else {}
    if not isinstance(views, dict) or not all(isinstance(v, dict) for v in views.values()):
        problems.append(f"{file_name}: field 'views' is not {{view: {{setting: value}}}}: the views' settings "
                        "were not restored.")
        views = {}
    session.restore_view_settings(views, announce=False)
    selected, saved = {}, {}
    for name, key in (meta.get("selection") or {}).items():
        rows = _rows(session, name, key, array, f"the selection of '{name}'", problems, file_name)
        if rows is not None:
            selected[name] = rows
    for name, kept in (meta.get("saved_selections") or {}).items():
        for label, key in (kept.items() if isinstance(kept, dict) else ()):
            rows = _rows(session, name, key, array, f"selection {label} of '{name}'", problems, file_name)
            if rows is not None:
                saved.setdefault(name, {})[label] = rows
    session.restore_selections(selected, saved)
