"""The declared schemas of the JSON documents inside model and project files, and their checker.

A schema is a dict ``field -> Field``; :func:`check` walks a document against it and raises
:class:`SchemaError` naming the path of the first bad field (``runs[2].id``) and what was expected,
before anything is built from the document. Fields not declared are ignored (forward
compatibility); declared ones must have their declared type. The per-member rules of fitted
models (shapes, dtypes, allowed names) live with the algorithms
(:mod:`manifold_studio.algorithms.state_schema`).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

__all__ = ["Field", "SchemaError", "check", "parse_json", "MODEL_HEADER", "PROJECT", "REPORT_ITEM", "COMPARISON",
           "CHAIN", "short"]

#: the deepest nesting a document may have (a JSON nested 100,000 deep is refused by name)
MAX_DEPTH = 64
#: the longest value a message quotes
QUOTE = 40


class SchemaError(ValueError):
    """A document that breaks its schema; the message names the field."""


@dataclass(frozen=True)
class Field:
    """``types``: one or more of ``"str"``, ``"int"``, ``"number"``, ``"bool"``, ``"null"``,
    ``"list"``, ``"dict"``, ``"json"`` (any JSON value); ``required``: must be present; ``items``:
    the schema of each list item (a dict schema) or an item type (a :class:`Field`); ``fields``:
    the schema of a dict value; ``min``: the least value of an int; ``shape``: a list of exactly
    these items, one :class:`Field` per position (a pair ``[step id, {params}]``)."""

    types: tuple[str, ...]
    required: bool = False
    items: Any = None
    fields: dict | None = None
    min: int | None = None
    shape: tuple | None = None


def short(value: Any) -> str:
    """A bounded repr of a value for messages."""
    text = repr(value)
    return text if len(text) <= QUOTE else text[:QUOTE - 3] + "..."


def _type_name(value) -> str:
    return {dict: "an object", list: "a list", str: "text", bool: "true/false", type(None): "null",
            int: "a whole number", float: "a number"}.get(type(value), type(value).__name__)


def _matches(value, kind: str) -> bool:
    if kind == "json":
        return True
    if kind == "str":
        return isinstance(value, str)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "null":
        return value is None
    if kind == "list":
        return isinstance(value, list)
    if kind == "dict":
        return isinstance(value, dict)
    raise ValueError(kind)  # pragma: no cover - a schema typo


_EXPECTED = {"str": "text", "int": "a whole number", "number": "a number", "bool": "true or false",
             "null": "null", "list": "a list", "dict": "an object", "json": "a JSON value"}


def check(document: Any, schema: dict, path: str = "") -> None:
    """Raise :class:`SchemaError` at the first field of ``document`` that breaks ``schema``."""
    if not isinstance(document, dict):
        raise SchemaError(f"{path or 'the document'} must be an object, not {_type_name(document)}.")
    for name, field in schema.items():
        where = f"{path}.{name}" if path else name
        if name not in document:
            if field.required:
                raise SchemaError(f"field '{where}' is missing.")
            continue
        _check_value(document[name], field, where)


def _check_value(value, field: Field, where: str) -> None:
    if not any(_matches(value, t) for t in field.types):
        expected = " or ".join(_EXPECTED[t] for t in field.types)
        raise SchemaError(f"field '{where}' must be {expected}, not {_type_name(value)} {short(value)}.")
    if field.min is not None and _matches(value, "int") and value < field.min:
        raise SchemaError(f"field '{where}' must be at least {field.min}, not {short(value)}.")
    if isinstance(value, float) and not math.isfinite(value) and "number" in field.types and "json" not in field.types:
        raise SchemaError(f"field '{where}' must be a finite number, not {short(value)}.")
    if isinstance(value, dict) and field.fields is not None:
        check(value, field.fields, where)
    if isinstance(value, list) and field.shape is not None:
        if len(value) != len(field.shape):
            raise SchemaError(f"field '{where}' must be a list of {len(field.shape)} items, not of "
                              f"{len(value)}: {short(value)}.")
        for i, (item, item_field) in enumerate(zip(value, field.shape)):
            _check_value(item, item_field, f"{where}[{i}]")
    if isinstance(value, list) and field.items is not None:
        for i, item in enumerate(value):
            if isinstance(field.items, Field):
                _check_value(item, field.items, f"{where}[{i}]")
            else:
                check(item, field.items, f"{where}[{i}]")


def parse_json(text: str, what: str) -> Any:
    """``json.loads`` with bounded nesting: too deep a document raises :class:`SchemaError`
    (Python's parser would raise RecursionError)."""
    depth = best = 0
    in_string = escaped = False
    for ch in text:  # nesting depth outside strings, without recursion
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            if depth > best:
                best = depth
                if best > MAX_DEPTH:
                    raise SchemaError(f"the {what} is nested more than {MAX_DEPTH} levels deep.")
        elif ch in "]}":
            depth -= 1
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as exc:
        where = f" at character {exc.pos:,}" if isinstance(exc, json.JSONDecodeError) else ""
        raise SchemaError(f"the {what} is not valid JSON (it breaks off or is malformed{where}).") from None


_STR = Field(("str",))
_STR_LIST = Field(("list",), items=Field(("str",)))
_SCALAR = Field(("str", "number", "bool", "null"))
_VALUE = Field(("str", "number", "bool", "null", "list"), items=Field(("str", "number", "bool", "null", "list")))

#: the JSON header of a model (``__manifold_studio_model__``), and a run's ``model`` in a project
MODEL_STATE = {
    "algorithm": Field(("str",), required=True),
    "algorithm_name": Field(("str",)),
    "kind": Field(("str",)),
    "params": Field(("dict",)),
    "scalars": Field(("dict",)),
    "arrays": _STR_LIST,
}
MODEL_HEADER = {
    "format": Field(("str",), required=True),
    "format_version": Field(("int",), required=True),
    **MODEL_STATE,
    "library_version": Field(("str",)),
    "training_data": Field(("dict", "null"), fields={
        "source": _STR, "name": _STR, "n_samples": Field(("int",), min=0),
        "n_features": Field(("int",), min=1), "feature_names": _STR_LIST, "label_name": Field(("str", "null")),
    }),
    "extra": Field(("dict",)),
}

_ARRAY_REF = Field(("str", "null"))
#: a preparation chain: ``[[step id, {params}], ...]``
CHAIN = Field(("list",), items=Field(("list",), shape=(_STR, Field(("dict", "null")))))
#: what a run's ``meta`` may hold that readers use: its chain and its dendrogram cut
_RUN_META = {
    "chain": CHAIN,
    "cut": Field(("dict",), fields={"note": _STR, "height": Field(("number",)), "n_clusters": Field(("int",), min=1)}),
    "evaluation": Field(("dict",)),
}
_EXTENSION = {
    "name": Field(("str",), required=True), "dataset_name": Field(("str", "null")),
    "time_s": Field(("number",)), "created": Field(("number",)),
    "values": Field(("str",), required=True), "rows": _ARRAY_REF,
}
_RUN = {
    "id": Field(("int",), required=True, min=0),
    "algorithm_id": Field(("str",), required=True),
    "algorithm_name": _STR,
    "kind": Field(("str",), required=True),
    "params": Field(("dict",), required=True),
    "dataset_name": Field(("str", "null"), required=True),
    "status": Field(("str",), required=True),
    "error": _STR, "error_detail": _STR,
    "source_run": Field(("int", "null")),
    "summary": Field(("dict",)), "timings": Field(("dict",)), "meta": Field(("dict",), fields=_RUN_META),
    "embedding": _ARRAY_REF, "labels": _ARRAY_REF, "rows": _ARRAY_REF,
    "cut_labels": _ARRAY_REF,  # the dendrogram cut the user chose (issue 21)
    "model": Field(("dict", "null"), fields=MODEL_STATE),
    "model_error": _STR,
    "extensions": Field(("list",), items=_EXTENSION),
}
_COLUMN = {
    "name": Field(("str",), required=True), "type": Field(("str",), required=True),
    "role": Field(("str",), required=True), "note": _STR,
    "values": Field(("str",), required=True), "categories": _ARRAY_REF, "missing": _ARRAY_REF,
}
#: a data set's typed table (:mod:`manifold_studio.files.project_tables`)
_TABLE = {
    "name": _STR, "source": _STR, "id_column": Field(("str", "null")), "current_target": Field(("str", "null")),
    "report": _STR_LIST, "row_ids": Field(("str",), required=True),
    "columns": Field(("list",), required=True, items=_COLUMN),
}
_DATASET = {
    "name": Field(("str",), required=True),
    "source": _STR,
    "label_name": Field(("str", "null")),
    "feature_names": Field(("list", "null"), items=_STR),
    "report": _STR_LIST,
    "X": Field(("str",), required=True),
    # a sparse X: "X" is the prefix of its CSR members (X/data, X/indices, X/indptr)
    "X_sparse_shape": Field(("list", "null"), items=Field(("int",), min=1)),
    "labels": _ARRAY_REF, "images": _ARRAY_REF,
    "load_options": Field(("dict",)),
    # format 2: row ids, what is done with missing values, the file read, the typed table
    "row_ids": _ARRAY_REF, "missing": _STR,
    "source_file": Field(("dict", "null"), fields={
        "path": Field(("str",), required=True), "size": Field(("int",), min=0), "mtime_ns": Field(("int",)),
        "sha256": _STR}),
    "table": Field(("dict", "null"), fields=_TABLE),
    "table_rows": _ARRAY_REF, "table_scope": _ARRAY_REF,
    # X is a square distance matrix (Dataset.distance_matrix); absent: false
    "distance_matrix": Field(("bool",)),
    # false: the table annotates X, which is not made of its columns (AnnData's obs); absent: true
    "table_features": Field(("bool",)),
}
_HISTORY = {
    "time": Field(("number",), required=True), "level": Field(("str",), required=True),
    "message": Field(("str",), required=True), "run_id": Field(("int", "null")),
    "dataset": Field(("str", "null")),
}
#: one report item (the reader checks each: a damaged one is left out with a note)
REPORT_ITEM = {
    "kind": Field(("str",), required=True), "title": Field(("str",), required=True), "caption": _STR,
    "facts": Field(("list",), items=Field(("list",), shape=(_STR, _STR))), "image": _ARRAY_REF,
    "created": Field(("number",)),
}
#: a saved Test & Score (``analyses["test_score"]["document"]``, type "comparison")
COMPARISON = {
    "type": _STR, "dataset": Field(("str", "null")), "scheme": Field(("dict",)),
    "learners": Field(("list",), items={
        "name": Field(("str",), required=True), "algorithm": Field(("str", "null")),
        "params": Field(("dict",)), "chain": CHAIN, "score_kind": Field(("str", "null"))}),
}
#: the JSON document of a project (``__manifold_studio_project__``)
PROJECT = {
    "format": Field(("str",), required=True),
    "format_version": Field(("int",), required=True),
    "library_version": _STR,
    "datasets": Field(("list",), required=True, items=_DATASET),
    "current_dataset": Field(("str", "null")),
    "runs": Field(("list",), required=True, items=_RUN),
    "current_run": Field(("int", "null")),
    "history": Field(("list",), items=_HISTORY),
    "view_settings": Field(("dict",)),
    "report": Field(("list",)),  # each item: REPORT_ITEM, checked one by one by the reader
    # analysis results (evaluations, Test & Score): key -> {"document": {...}, "arrays": {name: member}}
    "analyses": Field(("dict",)),
    # the current preparation chain: [[step id, {parameters}], ...] (project.project_state)
    "chain": Field(("list",)),
    # the views' settings {view: {key: value}} and the selection {data set: member of its rows}
    "views": Field(("dict",)),
    "selection": Field(("dict",)),
    "saved_selections": Field(("dict",)),  # {data set: {selection name: member of its rows}}
}

#: a parameter value or a fitted scalar: JSON scalars and (nested) lists of them
PARAM_VALUE = _VALUE
