"""The report (Qt-free): items collected from the views, in order, with their captions.

::

    from manifold_studio.analysis.report import Report, data_item, run_item
    report = session.report                       # every session has one; saved in the project
    report.add(data_item(ds, caption="The wine data"))
    report.add(run_item(run, image=png_bytes))    # the figure as it was when added
    report.move(1, 0); report.remove(0)

A data item records its data set: name, source, shape, the columns of each role and the
preparation steps. A run item records its method, parameters, data, time and measures (the
run's summary and evaluation). Any item may hold a figure as PNG bytes. The HTML export is
:mod:`manifold_studio.analysis.report_html`; the project file stores the items as JSON and the
figures as byte arrays (:meth:`Report.to_document` / :meth:`Report.from_document`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from manifold_studio.errors import ManifoldStudioError

__all__ = ["ReportItem", "Report", "ReportError", "data_item", "run_item", "view_item", "PNG_SIGNATURE"]

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
DATA, RUN, VIEW = "data", "run", "view"


class ReportError(ManifoldStudioError):
    """A report that cannot be exported (nothing in it, a folder that cannot be written)."""


@dataclass
class ReportItem:
    """One entry: a title, the analyst's caption, label/value facts and an optional PNG figure."""

    kind: str                      #: DATA, RUN or VIEW
    title: str
    caption: str = ""
    facts: list = field(default_factory=list)   #: [(label, text), ...] in display order
    image: bytes | None = None     #: PNG bytes of the figure when it was added
    created: float = field(default_factory=time.time)

    def __post_init__(self):
        if self.image is not None:
            self.image = bytes(self.image)
            if not self.image.startswith(PNG_SIGNATURE):
                raise ReportError(f"The figure of report item '{self.title}' is not a PNG image.")
        self.facts = [(str(k), str(v)) for k, v in self.facts]


class Report:
    """An ordered list of :class:`ReportItem` with add / remove / move."""

    def __init__(self, items=None):
        self.items: list[ReportItem] = list(items or [])

    def __len__(self) -> int:
        return len(self.items)

    @property
    def is_empty(self) -> bool:
        return not self.items

    def add(self, item: ReportItem) -> ReportItem:
        self.items.append(item)
        return item

    def remove(self, index: int) -> ReportItem:
        return self.items.pop(self._index(index))

    def move(self, index: int, to: int) -> None:
        item = self.items.pop(self._index(index))
        self.items.insert(max(0, min(int(to), len(self.items))), item)

    def clear(self) -> None:
        self.items.clear()

    def _index(self, index: int) -> int:
        if not -len(self.items) <= int(index) < len(self.items):
            raise IndexError(f"The report has {len(self.items)} item(s); there is no item {index}.")
        return int(index)

    # -- the project file -----------------------------------------------------------------
    def to_document(self, prefix: str = "report") -> tuple[list[dict], dict[str, np.ndarray]]:
        """(JSON-ready items, arrays): each figure is a uint8 array under ``<prefix>/<i>/png``."""
        items, arrays = [], {}
        for i, it in enumerate(self.items):
            key = None
            if it.image is not None:
                key = f"{prefix}/{i}/png"
                arrays[key] = np.frombuffer(it.image, dtype=np.uint8)
            items.append({"kind": it.kind, "title": it.title, "caption": it.caption,
                          "facts": [list(f) for f in it.facts], "image": key, "created": it.created})
        return items, arrays

    @classmethod
    def from_document(cls, items: list[dict], array) -> "Report":
        """The report of ``to_document``'s items; ``array(key)`` reads a stored array. The first
        item that cannot be rebuilt raises ReportError (a reader that drops it instead calls
        :meth:`item_from_document` item by item)."""
        return cls([cls.item_from_document(d, array) for d in items])

    @staticmethod
    def item_from_document(d: dict, array) -> ReportItem:
        """One item of ``to_document``; ReportError when it cannot be rebuilt: facts that are not
        (label, text) pairs, a figure that is not a PNG image or not stored."""
        title = d.get("title", "") if isinstance(d, dict) else ""
        if not isinstance(d, dict) or not isinstance(d.get("kind"), str) or not isinstance(title, str):
            raise ReportError("a report item must have a kind and a title as text.")
        facts = d.get("facts") or []
        if not isinstance(facts, list) or not all(isinstance(f, (list, tuple)) and len(f) == 2 for f in facts):
            raise ReportError(f"the facts of report item {title[:40]!r} must be (label, text) pairs.")
        png = None
        if d.get("image"):
            try:
                data = np.asarray(array(d["image"]))
            except ManifoldStudioError as exc:
                raise ReportError(f"the figure of report item {title[:40]!r} cannot be read: {exc}") from None
            if data.dtype != np.uint8 or data.ndim != 1:
                raise ReportError(f"The figure of report item {title[:40]!r} is damaged.")
            png = data.tobytes()
        created = d.get("created", time.time())
        return ReportItem(d["kind"], title, str(d.get("caption") or ""), [tuple(f) for f in facts], png,
                          created if isinstance(created, (int, float)) else time.time())


def _roles(ds) -> list[tuple[str, str]]:
    if getattr(ds, "table", None) is None:
        return [("Features", ", ".join(ds.feature_names or []) or f"{ds.n_features} columns")]
    by_role: dict[str, list[str]] = {}
    for col in ds.columns:
        by_role.setdefault(col.role, []).append(col.name)
    return [(f"Role: {role}", ", ".join(names)) for role, names in by_role.items()]


def data_item(ds, caption: str = "", image: bytes | None = None, preparation=None) -> ReportItem:
    """An item recording data set ``ds``: shape, roles and preparation (``[(step, params)]``)."""
    facts = [("Data set", ds.name), ("Source", ds.source or "(not from a file)"),
             ("Shape", f"{ds.n_samples:,} rows × {ds.n_features} feature columns"),
             ("Labels", ds.label_name or ("yes" if ds.has_labels else "none"))]
    facts += _roles(ds)
    facts.append(("Preparation", _steps_text(preparation)))
    return ReportItem(DATA, f"Data: {ds.name}", caption, facts, image)


def _steps_text(steps) -> str:
    """``standardize() → select_columns(exclude=['year'])``, or 'none'."""
    out = [f"{s}({', '.join(f'{k}={v!r}' for k, v in (p or {}).items())})" for s, p in (steps or [])]
    return " → ".join(out) if out else "none"


def _number(v) -> str:
    if isinstance(v, float):
        return f"{v:.6g}"
    return str(v)


def run_item(run, caption: str = "", image: bytes | None = None, view: str = "") -> ReportItem:
    """An item recording run ``run``: method, parameters, data, time and measures."""
    facts = [("Method", f"{run.algorithm_name or run.algorithm_id} ({run.kind})"),
             ("Parameters", run.params_text() or "defaults"),
             ("Data", run.dataset_name + (f", on the map of run #{run.source_run}" if run.source_run is not None
                                          else "") + (f", {len(run.rows):,} rows" if run.rows is not None else "")),
             ("Status", run.status + (f": {run.error}" if run.error else ""))]
    chain = run.meta.get("chain") if isinstance(run.meta, dict) else None
    if chain:  # the preparation steps fitted with the run ([step_id, params] pairs)
        facts.insert(2, ("Preparation", _steps_text(chain)))
    if "fit_s" in run.timings:
        facts.append(("Fit time", f"{run.timings['fit_s']:.3f} s"))
    for key, value in (run.summary or {}).items():
        if isinstance(value, (int, float, str, bool)) and key != "fit_time_s":
            facts.append((str(key), _number(value)))
    evaluation = run.meta.get("evaluation") if isinstance(run.meta, dict) else None
    if isinstance(evaluation, dict) and evaluation.get("summary"):
        facts.append(("Evaluation", str(evaluation["summary"])))
    title = f"Run #{run.id}: {run.algorithm_name or run.algorithm_id}" + (f" — {view}" if view else "")
    return ReportItem(RUN, title, caption, facts, image)


def view_item(title: str, caption: str = "", image: bytes | None = None, facts=()) -> ReportItem:
    """An item of a view that shows neither one run nor one data set."""
    return ReportItem(VIEW, title, caption, list(facts), image)
