"""The base of the feature views (distribution, scatter plot, scatter-plot matrix, correlations,
PCA loadings, feature ranking): views of the *current data set*'s columns rather than of a run.

A :class:`FeatureView` follows the session's current data set (the Data panel's), offers every
numeric column of :func:`~manifold_studio.tables.dataset_columns.dataset_columns` (features, a
numeric label column, the result columns of finished runs), the prepared columns of the run shown
when it went through a preparation chain (``#2 prepared proline``, from ``session.prepared_data``;
the caption says so) and the meta columns of the table the
data set was read from (:func:`meta_columns`), and splits by the data set's labels. It draws lazily: while its dock is hidden (a tab behind another) it only marks
itself stale and draws when shown; :meth:`redraw` draws at once (tests, export). Its statistics
(:mod:`manifold_studio.analysis.feature_stats`) are computed by :meth:`compute`: at once for a
small data set, on a worker thread above :data:`SYNC_CELLS` values (only the latest result is
drawn).
"""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QLabel, QVBoxLayout

from manifold_studio.errors import ManifoldStudioError
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import make_coloring
from manifold_studio.gui.views.selection_overlay import RECT, SelectionOverlay
from manifold_studio.gui.worker import LatestJob
from manifold_studio.tables.dataset_columns import (
    FEATURE,
    LABEL,
    META,
    RESULT,
    Column,
    _spread,
    dataset_columns,
    table_columns,
)


#: above this many values (rows × features) the statistics are computed on a worker thread
SYNC_CELLS = 300_000
#: the name of a prepared column of run #N: "#2 prepared proline"
PREPARED_PREFIX = "#%d prepared "
#: a run fitted on some rows offers its prepared columns (spread over every row) up to this size
MAX_SPREAD_CELLS = 20_000_000


def meta_columns(ds) -> list[Column]:
    """The meta columns of the table ``ds`` was read from (kept, never fitted), over its rows
    (:func:`~manifold_studio.tables.dataset_columns.table_columns`, which ``dataset_columns``
    lists too, without the other target columns)."""
    metas = set(ds.table.meta_names) if getattr(ds, "table", None) is not None else set()
    return [c for c in table_columns(ds) if c.name in metas]


def _call(fn, args, kwargs, progress=None):
    """A job running ``fn(*args, **kwargs)`` (the statistics take no progress)."""
    return fn(*args, **kwargs)


def column_combo(object_name: str, tooltip: str) -> QComboBox:
    combo = QComboBox()
    combo.setObjectName(object_name)
    combo.setToolTip(tooltip)
    combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
    return combo


def refill(combo: QComboBox, names: list[str], default: int = 0) -> None:
    """Put ``names`` in ``combo``, keeping the chosen one when it is still there."""
    current = combo.currentText()
    combo.blockSignals(True)
    combo.clear()
    combo.addItems(names)
    idx = names.index(current) if current in names else min(default, len(names) - 1)
    combo.setCurrentIndex(idx)
    combo.blockSignals(False)


class FeatureView(ResultView):
    area = "right"
    #: only the data set's own features (not labels nor results): correlations, PCA, ranking
    features_only = False
    #: also offer a text label column (the distribution view counts its categories)
    text_labels = False

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.dataset_name: str | None = None
        self.columns: list = []
        self.prepared_note = ""  #: what the prepared columns are ("run #2's prepared data: standardize, 13 columns")
        self._stale = True
        self._dock_hooked = False
        self.latest = LatestJob()
        if window is not None:
            window.bridge.datasetsChanged.connect(self.refresh)
            window.bridge.runChanged.connect(self._run_changed)

    def lay_out(self, controls, body, selection=None) -> None:
        """The view's layout: its ``info`` line, a row of ``controls`` (widgets; a string is a
        label), the bar of the selection overlay that ``selection()`` makes when the window links
        selections, and ``body`` taking the rest."""
        top = QHBoxLayout()
        for w in controls:
            top.addWidget(QLabel(w) if isinstance(w, str) else w)
        top.addStretch(1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        lay.addWidget(self.info)
        lay.addLayout(top)
        self.selection_overlay = None
        if selection is not None and self.window is not None:
            self.selection_overlay = selection()
            lay.addWidget(self.selection_overlay.bar)
        lay.addWidget(body, 1)

    def rect_selection(self) -> SelectionOverlay:
        """A rectangle/lasso selection over ``self.plot``'s points (``self.points()``)."""
        overlay = SelectionOverlay(self.window, self.plot, self.points)
        overlay.set_mode(RECT)
        return overlay

    # -- what is shown --------------------------------------------------------------------------
    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.refresh()

    def _run_changed(self, run) -> None:
        if not self.features_only and run is not None and run.finished and run.dataset_name == self.dataset_name:
            self.refresh()  # its result columns appeared, changed or went

    @property
    def busy(self) -> bool:
        return self.latest.busy

    def compute(self, fn, *args, on_done, title: str, **kwargs) -> None:
        """``on_done(fn(*args, **kwargs), "")`` — now for a small data set, else when a worker
        thread has computed it; ``on_done(None, message)`` when it fails with a clear message."""
        self.latest.drop()
        ds = self.dataset
        if ds is None or ds.X.size <= SYNC_CELLS or self.window is None:
            try:
                result = fn(*args, **kwargs)
            except ManifoldStudioError as exc:
                on_done(None, str(exc))
            else:
                on_done(result, "")
            return
        info = getattr(self, "info", None)
        if info is not None:
            info.setText(f"{title}: computing on {ds.n_samples:,} rows…")
        self.latest.start(self.window, _call, fn, args, kwargs, title=title,
                          on_success=lambda result: on_done(result, ""),
                          on_failure=lambda message, _detail: on_done(None, message))

    @property
    def session(self):
        return self.window.session if self.window is not None else None

    def current_dataset(self):
        """The session's current data set (the Data panel's), else the shown run's (None:
        nothing loaded)."""
        session = self.session
        if session is None:
            return None
        if session.current_dataset is not None:
            return session.current_dataset
        return session.datasets.get(self.run.dataset_name) if self.run is not None else None

    def refresh(self) -> None:
        """Draw now if on screen, else when the view is shown next (its tab chosen)."""
        self._stale = True
        self._hook_dock()
        if self.on_screen():
            self.redraw()

    def on_screen(self) -> bool:
        """Visible and not behind another tab (a tabbed dock's hidden tabs stay "visible")."""
        return self.isVisible() and not self.visibleRegion().isEmpty()

    def _hook_dock(self) -> None:
        """Draw a stale view when its dock's tab is chosen (the dock exists after the view)."""
        if self._dock_hooked or self.window is None:
            return
        dock = self.window.docks.get(f"view:{self.view_id}")
        if dock is not None:
            dock.visibilityChanged.connect(self._dock_visibility)
            self._dock_hooked = True

    def _dock_visibility(self, visible: bool) -> None:
        if visible:
            QTimer.singleShot(0, self._draw_if_stale)

    def showEvent(self, event) -> None:  # noqa: N802 - Qt
        super().showEvent(event)
        self._hook_dock()
        QTimer.singleShot(0, self._draw_if_stale)  # once laid out: is it the chosen tab?

    def ensure_drawn(self) -> None:
        """Draw now if stale, on screen or not (*Add to report* of a tab behind another)."""
        if self._stale:
            self.redraw()

    def report_blocker(self) -> str:
        if self.current_dataset() is None:
            return f"{self.title} shows a data set's columns: load a data set first."
        if self.busy:
            return f"{self.title} is still computing: add it once it is drawn."
        return ""

    def _draw_if_stale(self) -> None:
        if self._stale and self.on_screen():
            self.redraw()

    def redraw(self) -> None:
        """Re-read the data set's columns and draw (see :meth:`draw`)."""
        self._stale = False
        ds = self.current_dataset()
        self.dataset = ds
        self.dataset_name = ds.name if ds is not None else None
        if ds is None:
            self.columns = []
        else:
            cols = [c for c in dataset_columns(self.session, ds.name)  # metas included
                    if c.numeric or (self.text_labels and c.kind in (LABEL, META))]
            cols += self.prepared_columns(ds)
            self.columns = [c for c in cols if c.kind == FEATURE] if self.features_only else cols
        self.columns_changed([c.name for c in self.columns])
        self.draw()

    def prepared_columns(self, ds) -> list[Column]:
        """The prepared columns of the run shown when it went through a preparation chain
        (``#2 prepared proline``: the run's prepared data, ``session.prepared_data``), for the
        views of columns (none for the features-only views, which draw the prepared matrix whole)."""
        self.prepared_note = ""
        run, session = self.run, self.session
        if self.features_only or run is None or session is None or not run.succeeded or run.source_run is not None \
                or run.dataset_name != ds.name or not run.meta.get("chain"):
            return []
        try:
            prepared = session.prepared_data(run.id)
        except ManifoldStudioError:
            return []
        if run.rows is None:  # every row: the columns are views of the prepared matrix (no copy)
            columns = [prepared.X[:, j] for j in range(prepared.X.shape[1])]
        elif ds.n_samples * prepared.X.shape[1] <= MAX_SPREAD_CELLS:  # a sample fit: NaN on the other rows
            columns = [_spread(ds.n_samples, run.rows, prepared.X[:, j]) for j in range(prepared.X.shape[1])]
        else:
            return []
        self.prepared_note = f"run #{run.id}'s prepared data: {prepared.caption}"
        return [Column(f"{PREPARED_PREFIX % run.id}{name}", values, RESULT, run.id)
                for name, values in zip(prepared.columns, columns)]

    def column_note(self, *names: str) -> str:
        """" (run #2's prepared data: standardize, 13 columns)" when one of ``names`` is a
        prepared column, else ""."""
        run = self.run
        prefix = PREPARED_PREFIX % run.id if run is not None else None
        shown = prefix is not None and self.prepared_note and any(n.startswith(prefix) for n in names)
        return f" ({self.prepared_note})" if shown else ""

    def columns_changed(self, names: list[str]) -> None:
        """Refill the view's column choosers (names of :attr:`columns`)."""

    def draw(self) -> None:
        raise NotImplementedError

    # -- helpers --------------------------------------------------------------------------------
    def column(self, name: str):
        return next((c for c in self.columns if c.name == name), None)

    def values(self, name: str) -> np.ndarray | None:
        """The numeric column ``name`` as floats (None: no such numeric column)."""
        col = self.column(name)
        return None if col is None or not col.numeric else np.asarray(col.values, dtype=float)

    @property
    def labels(self) -> np.ndarray | None:
        return None if self.dataset is None else self.dataset.labels

    def class_coloring(self):
        """The colouring of the data set's classes (one colour without labels)."""
        ds = self.dataset
        n = ds.n_samples if ds is not None else 0
        return make_coloring(self.labels, n, (ds.label_name or "class") if ds is not None else "",
                             kind="categorical" if self.labels is not None else None)

    def feature_matrix(self):
        """(X, names) of the data set's features."""
        ds = self.dataset
        names = ds.feature_names or [f"x{j + 1}" for j in range(ds.n_features)]
        return ds.X, list(names)

    def prepared_features(self):
        """(X, column names, data-set row of each row of X, caption) of what the view draws: the
        prepared data of the run shown (``session.prepared_data``: its data set through its
        preparation chain) when it is a run of this data set with a chain, else the data set's
        own features ("raw data, 13 columns")."""
        run, ds, session = self.run, self.dataset, self.session
        if run is not None and ds is not None and session is not None and run.succeeded \
                and run.source_run is None and run.dataset_name == ds.name and run.meta.get("chain"):
            try:
                prepared = session.prepared_data(run.id)
            except ManifoldStudioError:
                pass  # the run's chain cannot be recomputed: the raw features, said so
            else:
                rows = run.point_index if run.rows is not None else np.arange(prepared.X.shape[0])
                return prepared.X, list(prepared.columns), rows, f"run #{run.id}'s prepared data: {prepared.caption}"
        X, names = self.feature_matrix()
        return X, names, np.arange(X.shape[0]), f"raw data, {len(names)} columns"
