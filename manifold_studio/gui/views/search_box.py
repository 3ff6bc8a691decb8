"""The map's search box (issue 31): one text searched over every column of the shown data set
(:func:`~manifold_studio.analysis.search_expression.search`: text contains, regular expression
or a numeric expression such as ``alcohol > 13 and hue < 1``), on a worker thread. Matches on
the map are marked (one-colour points on top, :mod:`.mark_layer`), their count is shown, and *Select* makes them
the selection."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QObject, QTimer, Signal
from PySide6.QtWidgets import QComboBox, QLabel, QLineEdit, QPushButton

from manifold_studio.analysis.search_expression import (
    AUTO, CONTAINS, EXPRESSION, REGEX, Match, named_sparse_features, search,
)
from manifold_studio.gui.flow_layout import group
from manifold_studio.gui.views.column_cache import ColumnCache
from manifold_studio.gui.views.mark_layer import MarkLayer, MarkPlan, MarkView, plan_marks
from manifold_studio.gui.worker import LatestJob
from manifold_studio.tables.search import factorize

MATCH_COLOR = (255, 120, 0)
DEBOUNCE_MS = 250
Z_MATCHES = 20


class FactorCache:
    """The factorisation of each text column, kept while the column's values are the same array."""

    def __init__(self):
        self._items: dict = {}

    def __call__(self, col):
        hit = self._items.get(col.name)
        if hit is None or hit[0] is not col.values:
            hit = (col.values, factorize(col.values))
            self._items[col.name] = hit
        return hit[1]


@dataclass(frozen=True, eq=False)
class SearchResult:
    """A search done on a worker thread: the Match, how many matches the map draws, and their
    marks on the map as it was when the search started (the main thread only shows them)."""

    match: Match
    on_map: int
    marks: MarkPlan


def search_task(text, session, name, cache: ColumnCache, mode, factors, view: MarkView,
                progress=None) -> SearchResult:
    """The search on a worker thread (the columns are gathered there too: a million rows of
    result columns take a while), with the count on the map and the marks."""
    ds = session.datasets[name]
    cols = cache.get(session, name)
    cols = cols + named_sparse_features(text, ds, cols)   # a gene past the first columns of a sparse set
    match = search(text, cols, ds.n_samples, mode, factors_of=factors)
    rows = view.rows
    on_map = int(np.count_nonzero(match.mask[rows])) if len(rows) and rows.max() < match.mask.size else 0
    return SearchResult(match, on_map, plan_marks(match.mask, view))


class SearchBox(QObject):
    #: a search finished: the Match (None when cleared or failed)
    searched = Signal(object)

    def __init__(self, window, view):
        super().__init__(view)
        self.window, self.view = window, view
        self.match: Match | None = None
        self.columns = ColumnCache()
        self.factors = FactorCache()
        self.latest = LatestJob()
        self.marks = MarkLayer(view, MATCH_COLOR, Z_MATCHES)
        self.edit = QLineEdit()
        self.edit.setObjectName("map_search")
        self.edit.setPlaceholderText("search: text, /regex/ or alcohol > 13 and hue < 1")
        self.edit.setClearButtonEnabled(True)
        self.edit.setMinimumWidth(220)
        self.mode = QComboBox()
        for text, data in (("auto", AUTO), ("contains", CONTAINS), ("regex", REGEX), ("expression", EXPRESSION)):
            self.mode.addItem(text, data)
        self.mode.setToolTip("auto: a condition on the columns when the text is one, text otherwise.")
        self.count = QLabel("")
        self.select_button = QPushButton("Select")
        self.select_button.setToolTip("Make the matching rows the selection.")
        self.select_button.setEnabled(False)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DEBOUNCE_MS)
        self.timer.timeout.connect(self.run)
        self.edit.textChanged.connect(lambda _t: self.timer.start())
        self.edit.returnPressed.connect(self.run)
        self.mode.currentIndexChanged.connect(self.run)
        self.select_button.clicked.connect(self.select)
        view.runShown.connect(lambda _run: self.run())

    def widget(self):
        return group(self.edit, self.mode, self.count, self.select_button)

    def _dataset_name(self):
        ds = self.view.dataset
        return ds.name if ds is not None else None

    def run(self, *_):
        self.timer.stop()
        text = self.edit.text().strip()
        name = self._dataset_name()
        if not text or name is None:
            self.latest.drop()
            self._show(None, "")
            return
        session = self.window.session if self.window is not None else None
        self.latest.start(self.window, search_task, text, session, name, self.columns, self.mode.currentData(),
                          self.factors, self.marks.view_now(),
                          title="Search", on_success=self._done, on_failure=self._failed)

    def _failed(self, message, _detail):
        self._show(None, message)

    def _done(self, result: SearchResult):
        match = result.match
        self._show(match, f"{match.count:,} match{'es' if match.count != 1 else ''} ({result.on_map:,} on the map)",
                   result.marks)

    def _show(self, match, text: str, marks: MarkPlan | None = None):
        self.match = match
        self.count.setText(text)
        self.count.setStyleSheet("" if match is not None or not text else "color: #b00020")
        self.count.setToolTip(match.description if match is not None else text)
        self.select_button.setEnabled(match is not None and match.count > 0)
        if marks is None or not self.marks.show_plan(marks):  # the map changed meanwhile: again
            self.draw()
        self.searched.emit(match)

    def draw(self):
        """Mark the matches among the drawn points."""
        self.marks.draw_mask(self.match.mask if self.match is not None else None)

    def select(self):
        name = self._dataset_name()
        if self.match is not None and name is not None:
            self.window.selection.select(name, np.flatnonzero(self.match.mask))
