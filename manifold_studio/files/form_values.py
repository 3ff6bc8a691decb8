"""The project's ``form_values`` field: the values the window's settings forms hold for each
method (remembered per method, as Orange's context settings), ``{algorithm id: {parameter: value}}``.
Written and read by :mod:`manifold_studio.project.project_file`; the window checks each value
against its method's constraints when it shows it."""
from __future__ import annotations

from manifold_studio.files.model_file import _jsonable, short_text


def form_values_field(values: dict | None) -> dict:
    """The project's ``form_values`` field: the settings the window's forms hold for each method
    (remembered per method, as Orange's context settings), ``{algorithm id: {parameter: value}}``."""
    return {str(algo): _jsonable(dict(params)) for algo, params in (values or {}).items() if isinstance(params, dict)}


def read_form_values(saved, problems: list) -> dict:
    """``form_values`` as saved (the values are checked against each method's constraints when
    the window shows them); a part that is not ``{id: {name: value}}`` is dropped, said in ``problems``."""
    if saved is None:
        return {}
    if not isinstance(saved, dict):
        problems.append("The saved settings of the methods (form_values) are not a table; they were dropped.")
        return {}
    out = {}
    for algo, params in saved.items():
        if isinstance(params, dict) and all(isinstance(k, str) for k in params):
            out[str(algo)] = dict(params)
        else:
            problems.append(f"The saved settings of '{short_text(str(algo))}' are not a table of values; dropped.")
    return out
