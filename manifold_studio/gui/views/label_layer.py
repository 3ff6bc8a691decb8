"""Automatic labels on the map (issue 31): one label per group of points at the group's centre,
never overlapping, finer labels replacing coarser ones as the user zooms in
(:mod:`~manifold_studio.analysis.map_labels`).

Groups: the current colouring's classes (a clustering, the labels, a categorical column) or a
density grouping of the map itself; finer groups are the denser regions (half the mass) inside
them. Text: the majority data label of the group, or its most distinguishing features. Groups
and texts are computed on a worker thread; placing them at a new zoom is cheap and runs on the
GUI thread.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QCheckBox, QComboBox

from manifold_studio.analysis import map_labels as ml
from manifold_studio.analysis.map_density import kde_grid
from manifold_studio.gui.flow_layout import group
from manifold_studio.gui.worker import LatestJob

GROUPS_COLOURS, GROUPS_DENSITY = "colours", "density"
TEXT_MAJORITY, TEXT_FEATURES = "majority", "features"
#: the text choice "majority category of column <name>" is TEXT_COLUMN + name
TEXT_COLUMN = "majority:"
FINE_MASS, COARSE_MASS = 0.5, 0.85
Z_LABELS = 30


def label_candidates(xy, colour_codes, majority_values, feature_columns, groups: str, text: str,
                     progress=None, sparse=None) -> list[ml.LabelCandidate]:
    """Coarse and finer label candidates of a map (worker thread); ``sparse``: (a sparse data
    set's rows of the drawn points, its feature names), the features of "text: features"."""
    grid = kde_grid(xy)
    if groups == GROUPS_COLOURS and colour_codes is not None:
        coarse = np.asarray(colour_codes, dtype=np.intp)
    else:
        coarse = ml.density_groups(xy, mass=COARSE_MASS, grid=grid)
    fine = ml.density_groups(xy, mass=FINE_MASS, grid=grid)

    def texts(codes, gs):
        if text == TEXT_FEATURES and (feature_columns or sparse is not None):
            return ml.feature_texts(codes, gs, feature_columns, sparse=sparse)
        if majority_values is not None:
            return ml.majority_texts(codes, gs, majority_values)
        return [f"group {g + 1}" for g in gs]

    c_groups = np.unique(coarse[coarse >= 0])
    out = ml.candidates(xy, coarse, texts(coarse, c_groups))
    f_groups = np.unique(fine[fine >= 0])
    if f_groups.size > 1:
        out += ml.candidates(xy, fine, texts(fine, f_groups), level=1,
                             parents=ml.parent_of(fine, coarse, f_groups))
    return out


def labels_task(ds, rows, xy, codes, color_labels, groups: str, text: str, progress=None):
    """:func:`label_candidates` with its inputs gathered on the worker thread: the majority
    values (the data labels of the drawn rows, else the colour's classes; a continuous colour,
    e.g. local density, has none: "group N") and the feature columns of the drawn rows."""
    majority = None
    if text.startswith(TEXT_COLUMN) and ds is not None and ds.table is not None:
        majority = np.asarray(ds.column_values(text[len(TEXT_COLUMN):]), dtype=object)[rows]
        text = TEXT_MAJORITY
    elif ds is not None and ds.labels is not None and len(rows) and rows.max() < ds.n_samples:
        majority = ds.labels[rows]
    elif color_labels is not None and codes is not None:   # classes, not a continuous colour's values
        majority = color_labels
    columns, sparse = [], None
    if text == TEXT_FEATURES and ds is not None and not ds.distance_matrix:
        names = ds.feature_names or [f"x{j + 1}" for j in range(ds.n_features)]
        if ds.is_sparse:   # every feature, column by column from the sparse rows (never densified)
            every = rows.size == ds.n_samples and np.array_equal(rows, np.arange(ds.n_samples))
            sparse = (ds.X if every else ds.X[rows], names)
        else:
            columns = [ml.NamedValues(names[j], ds.X[rows, j]) for j in range(ds.n_features)]
    return label_candidates(xy, codes, majority, columns, groups, text, progress=progress, sparse=sparse)


class LabelLayer(QObject):
    placed = Signal(list)

    def __init__(self, window, view):
        super().__init__(view)
        self.window, self.view = window, view
        self.candidates: list[ml.LabelCandidate] = []
        self.items: list[pg.TextItem] = []
        self.shown: list[int] = []
        self.latest = LatestJob()
        self.box = QCheckBox("Labels")
        self.box.setObjectName("label_layer")
        self.box.setToolTip("Label groups of points at their centres; labels never overlap and finer "
                            "ones appear as you zoom in.")
        self.groups_combo = QComboBox()
        self.groups_combo.addItem("groups: colours", GROUPS_COLOURS)
        self.groups_combo.addItem("groups: density", GROUPS_DENSITY)
        self.text_combo = QComboBox()
        self.text_combo.addItem("text: majority label", TEXT_MAJORITY)
        self.text_combo.addItem("text: features", TEXT_FEATURES)
        for w in (self.box, self.groups_combo, self.text_combo):
            (w.toggled if isinstance(w, QCheckBox) else w.currentIndexChanged).connect(self.refresh)
        view.runShown.connect(lambda _run: (self._column_choices(), self.refresh()))
        view.redrawn.connect(self._maybe_refresh)
        self._drawn_for = None
        view.plot_item.getViewBox().sigRangeChanged.connect(self.place)

    def widget(self):
        return group(self.box, self.groups_combo, self.text_combo)

    def _column_choices(self):
        """One text choice per categorical column of the shown data set: "majority of <column>"."""
        ds = self.view.dataset
        names = [] if ds is None or ds.table is None else [c.name for c in ds.columns if c.type == "categorical"]
        combo = self.text_combo
        if [combo.itemData(i) for i in range(2, combo.count())] == [TEXT_COLUMN + n for n in names]:
            return
        current = combo.currentData()
        combo.blockSignals(True)
        while combo.count() > 2:
            combo.removeItem(2)
        for n in names:
            combo.addItem(f"text: majority of {n}", TEXT_COLUMN + n)
        combo.setCurrentIndex(max(combo.findData(current), 0))
        combo.blockSignals(False)

    def _inputs(self):
        view = self.view
        c = view.coloring
        codes = c.codes if c is not None and c.mode != "continuous" else None
        return view.dataset, view.rows, view.xy, codes, view.color_labels

    def _key(self):
        return id(self.view.xy), id(self.view.coloring)

    def _maybe_refresh(self):
        """After a redraw: new groups only when the points or the colouring changed."""
        if self.box.isChecked() and self._key() != self._drawn_for:
            self.refresh()

    def refresh(self, *_):
        self._drawn_for = self._key()
        self.clear()
        n = len(self.view.xy)
        if not self.box.isChecked() or n < 3:
            self.latest.drop()
            if self.box.isChecked() and n:
                self._failed(f"labels need at least 3 points on the map; this map has {n}.", None)
            return
        self.latest.start(self.window, labels_task, *self._inputs(), self.groups_combo.currentData(),
                          self.text_combo.currentData(), title="Map labels", on_success=self._ready,
                          on_failure=self._failed)

    def _failed(self, message, _detail):
        status = self.window.show_status if self.window is not None else None
        if status is not None:
            status(f"Labels: {message}")

    def _ready(self, cands):
        self.candidates = cands
        self.place()

    def clear(self):
        for item in self.items:
            self.view.plot.removeItem(item)
        self.items, self.shown, self.candidates = [], [], []

    def place(self, *_):
        """Show the labels that fit at the current zoom (cheap: runs at every range change)."""
        if not self.candidates:
            return
        vb = self.view.plot_item.getViewBox()
        px, py = vb.viewPixelSize()
        if not (px > 0 and py > 0):
            return
        (x0, x1), (y0, y1) = vb.viewRange()
        self.shown = ml.place_labels(self.candidates, (1.0 / px, 1.0 / py), ((x0, x1), (y0, y1)))
        while len(self.items) < len(self.shown):
            item = pg.TextItem("", color=(20, 20, 20), fill=pg.mkBrush(255, 255, 255, 190), anchor=(0.5, 0.5))
            item.setZValue(Z_LABELS)
            self.view.plot.addItem(item, ignoreBounds=True)
            self.items.append(item)
        for item, i in zip(self.items, self.shown):
            c = self.candidates[i]
            if item.toPlainText() != c.text:
                item.setText(c.text)
            item.setPos(c.x, c.y)
            item.setVisible(True)
        for item in self.items[len(self.shown):]:
            item.setVisible(False)
        self.placed.emit(self.shown)
