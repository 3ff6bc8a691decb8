"""The parts of a project a damaged entry of does not stop it opening (Qt-free): the report and
the saved analysis results. Each entry is checked against its schema, shapes included
(:data:`~manifold_studio.files.schemas.REPORT_ITEM`, :data:`~manifold_studio.files.schemas.COMPARISON`);
one that breaks it, or whose arrays are damaged, is left out and named in ``problems``."""
from __future__ import annotations

from manifold_studio.analysis.report import Report, ReportError
from manifold_studio.files.model_file import ModelFileError, short_text
from manifold_studio.files.schemas import COMPARISON, REPORT_ITEM, SchemaError, check

__all__ = ["read_report", "read_analyses"]


def read_report(items: list, array, problems: list) -> Report:
    """The report of a project's ``report`` entries; ``array(key, field)`` reads a stored array."""
    report = Report()
    for i, d in enumerate(items):
        try:
            check(d, REPORT_ITEM, f"report[{i}]")
            report.add(Report.item_from_document(d, lambda key: array(key, f"report[{i}].image")))
        except (SchemaError, ReportError) as exc:
            problems.append(f"Report item {i + 1} is damaged and was left out: {exc}")
    return report


def read_analyses(saved: dict, array, problems: list) -> dict:
    """The analysis records (key -> (document, arrays)) of a project's ``analyses``."""
    out = {}
    for key, entry in saved.items():
        try:
            document = dict(entry["document"])
            if document.get("type") == "comparison":
                check(document, COMPARISON, f"analyses.{key}.document")
            out[key] = (document, {n: array(k, f"analyses.{key}.arrays.{n}") for n, k in entry["arrays"].items()})
        except (ModelFileError, KeyError, TypeError, AttributeError, ValueError) as exc:
            problems.append(f"The saved analysis '{short_text(key)}' is damaged and was left out: {exc}")
    return out
