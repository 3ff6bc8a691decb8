"""Clusters on the map: the labels currently shown for a clustering run and its centres.

One :class:`ClusterOverlay` per main window (``ClusterOverlay.for_window(window)``) holds

- the *displayed* labels of each clustering run: the run's own ``labels`` or, after the user
  cut its dendrogram at another height, the labels of that cut (no refit). Views that depend
  on the partition (silhouette, contingency table) read :meth:`labels_for` and listen to
  :attr:`labelsChanged`;
- the cluster centres drawn over the map (star markers in the cluster colours):

  * the clustering was fitted on this map ("cluster this map", or a method with its own
    embedding such as spectral clustering): its centres are already map coordinates;
  * it was fitted on the raw data and is drawn on an embedding run's map: the centres are
    projected with that run's ``extend`` (on a worker thread) when the map run was itself fitted
    on the raw data of the same points; otherwise, or when the user asks for it, each centre is
    the mean map position of its cluster's points.
"""
from __future__ import annotations

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QComboBox

from manifold_studio.analysis.cluster_tasks import (
    MEAN,
    PROJECTED,
    CentresResult,
    estimator_centres,
    map_centres,
)
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.gui.session_undo import install_session_undo
from manifold_studio.gui.worker import LatestJob
from manifold_studio.session.lifecycle import run_model
from manifold_studio.analysis.map_coords import as_map_xy

AUTO, HIDDEN = "auto", "hidden"
CENTRE_SYMBOL = "star"
CENTRE_SIZE = 22


class ClusterOverlay(QObject):
    #: the displayed labels of a run changed (the Run)
    labelsChanged = Signal(object)
    #: new centres were drawn (CentresResult or None)
    centresChanged = Signal(object)

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.centres: CentresResult | None = None
        self.centres_run = None
        self._keep_range = None  # (run, view range) to restore when the run is shown again after a cut
        self.latest = LatestJob()
        self._item = None
        view = window.map_view
        self.mode_combo = QComboBox()
        self.mode_combo.setObjectName("centres_mode")
        self.mode_combo.addItem("centres: auto", AUTO)
        self.mode_combo.addItem("centres: mean of map points", MEAN)
        self.mode_combo.addItem("centres: hidden", HIDDEN)
        self.mode_combo.setToolTip(
            "Cluster centres drawn as stars on the map. auto: the centres of a clustering fitted on this "
            "map, or the data-space centres projected with the map run's out-of-sample extension; "
            "mean: the mean map position of each cluster's points.")
        self.mode_combo.currentIndexChanged.connect(lambda _i: self.refresh())
        self.map_combo = QComboBox()
        self.map_combo.setObjectName("cluster_map_choice")
        self.map_combo.setToolTip("Which map a clustering run is drawn on: any embedding run of the same "
                                  "points (default: the map it clustered, else the latest one).")
        self.map_combo.activated.connect(lambda _i: self.draw_on_map(self.map_combo.currentData()))
        self.map_combo.hide()
        if view is not None:
            view.add_toolbar_widget(self.map_combo)
            view.add_toolbar_widget(self.mode_combo)
            view.runShown.connect(lambda _run: self.refresh())
            view.redrawn.connect(self._recolour)
        window.bridge.event.connect(self._on_session_event)
        install_session_undo(window)  # a cut is undoable

    @classmethod
    def for_window(cls, window) -> "ClusterOverlay":
        overlay = window.cluster_overlay
        if overlay is None:
            overlay = cls(window)
            window.cluster_overlay = overlay
        return overlay

    # -- labels ---------------------------------------------------------------------------------
    def labels_for(self, run) -> np.ndarray | None:
        """The labels shown for ``run`` (a dendrogram cut, or the run's own)."""
        return None if run is None else run.shown_labels

    def labels_note(self, run) -> str:
        return run.meta.get("cut", {}).get("note", "") if run is not None and run.cut_labels is not None else ""

    def set_labels(self, run, labels, note: str = "", **cut) -> bool:
        """Show ``labels`` for ``run`` instead of its own (None: back to the run's labels): a
        session command (``session.set_cut``, undoable) making them the run's ``cut_labels``
        (shown, exported, saved, reported); ``note`` and ``cut`` (height, n_clusters) go to
        ``run.meta["cut"]``. Refused with a message (nothing changed) when the run's data set
        was removed; returns whether the cut was made."""
        try:
            self.window.session.set_cut(run.id, labels, note, **cut)
        except ManifoldStudioError as exc:
            self.window.report_error(f"Could not cut run #{run.id}: {exc}")
            return False
        return True

    def _on_session_event(self, event) -> None:
        if event.kind == "cut_changed" and event.run is not None:
            self._cut_changed(event.run)

    def _cut_changed(self, run) -> None:
        """A run's cut changed (here, by Edit ▸ Undo, by a script): the map shows it, its title
        names the cut's n_clusters, and the views of the partition follow (labelsChanged)."""
        view = self.window.map_view
        if view is not None and view.run is run:  # the title, the colours and the centres of the cut
            self._keep_range = (run, view.plot_item.getViewBox().viewRange())  # the same points: keep the zoom
            if run.id != self.window.session.current_run_id:  # (the current run is shown again by the window)
                view.show_run(run, self.window.session.datasets.get(run.dataset_name))
        self.labelsChanged.emit(run)

    # -- which map ------------------------------------------------------------------------------
    def map_choices(self, run) -> list:
        """Finished embedding runs of the same points as ``run`` (maps it can be drawn on)."""
        if run is None or run.kind != "clustering":
            return []
        return [r for r in self.window.session.runs.values()
                if r.succeeded and r.embedding is not None and r is not run
                and r.dataset_name == run.dataset_name and np.array_equal(r.point_index, run.point_index)]

    def draw_on_map(self, map_run_id) -> None:
        """Draw the clustering run shown on the map on another map (None: the default one)."""
        view = self.window.map_view
        run = view.run if view is not None else None
        if run is None:
            return
        if map_run_id is None or map_run_id == -1:
            run.meta.pop("map_run", None)
        else:
            run.meta["map_run"] = int(map_run_id)
        self.window.show_run(run)

    def _update_map_combo(self, run) -> None:
        choices = self.map_choices(run)
        self.map_combo.blockSignals(True)
        self.map_combo.clear()
        if len(choices) > 1 or (choices and run.embedding is None and run.meta.get("map_run") is not None):
            self.map_combo.addItem("map: default", -1)
            for r in choices:
                self.map_combo.addItem(f"map: #{r.id} {r.algorithm_id}", r.id)
            idx = self.map_combo.findData(run.meta.get("map_run", -1))
            self.map_combo.setCurrentIndex(max(idx, 0))
            self.map_combo.setVisible(run.embedding is None)
        else:
            self.map_combo.hide()
        self.map_combo.blockSignals(False)

    # -- centres --------------------------------------------------------------------------------
    @property
    def mode(self) -> str:
        return self.mode_combo.currentData()

    @property
    def busy(self) -> bool:
        """Centres are being projected on a worker thread."""
        return self.latest.busy

    def set_mode(self, mode: str) -> None:
        self.mode_combo.setCurrentIndex(self.mode_combo.findData(mode))

    def refresh(self) -> None:
        """Recompute the centres of the run shown on the map (cheap ones at once, projections on
        a worker thread)."""
        view = self.window.map_view
        run = view.run if view is not None else None
        self.latest.drop()
        keep, self._keep_range = self._keep_range, None
        if keep is not None and keep[0] is run:  # shown again after a cut: the zoom stays
            view.plot_item.setRange(xRange=keep[1][0], yRange=keep[1][1], padding=0.0)
        if run is not None and run.succeeded:
            self._update_map_combo(run)
        else:
            self.map_combo.hide()
        if run is None or not run.succeeded or run.kind != "clustering" or self.mode == HIDDEN \
                or not len(view.xy):
            self._show(None, None)
            return
        labels = self.labels_for(run)
        if labels is None or len(labels) != len(view.xy):
            self._show(None, None)
            return
        if run.labels is not None and labels is not run.labels and run.cut_labels is not None:
            if view._run_labels is None or len(view._run_labels) != len(labels) \
                    or not np.array_equal(view._run_labels, labels):
                view.set_run_labels(labels)
        map_run = view.map_run_for(run)
        centres = estimator_centres(run.estimator)
        own = run.cut_labels is None  # the run's own partition: its fitted centres apply
        fitted_on_map = map_run is not None and (map_run is run or run.source_run == map_run.id)
        if self.mode == AUTO and own and fitted_on_map and centres is not None \
                and centres.shape[1] == np.asarray(map_run.embedding).reshape(len(labels), -1).shape[1]:
            present = np.isin(np.arange(centres.shape[0]), labels)
            self._show(run, CentresResult(np.flatnonzero(present), as_map_xy(centres[present]), "fitted",
                                          f"centres of the clustering of run #{map_run.id}'s map"))
            return
        kwargs = self._projection(run, map_run, own, centres)
        if kwargs is None:
            self._show(run, map_centres(labels, view.xy, mode=MEAN))
            return
        self.latest.start(
            self.window, map_centres, labels, view.xy, title="Projecting cluster centres",
            on_success=lambda res, run=run: self._show(run, res),
            on_failure=lambda msg, detail, run=run: self._show(run, map_centres(labels, view.xy, mode=MEAN)),
            **kwargs)

    def _projection(self, run, map_run, own: bool, centres) -> dict | None:
        """How to project ``run``'s centres onto ``map_run``'s map (``map_centres`` arguments), or
        None (then each centre is the mean map position of its points). Only in the space both
        were fitted in: the data set's columns, or the same prepared columns (a map run with the
        same chain: its final step's extend, on the run's prepared data)."""
        if not (self.mode == AUTO and map_run is not None and map_run is not run and run.source_run is None
                and map_run.source_run is None and map_run.estimator is not None
                and np.array_equal(map_run.point_index, run.point_index)):
            return None
        chain = run.meta.get("chain")
        if chain != map_run.meta.get("chain"):  # fitted on other columns: no common space
            return None
        model = getattr(map_run.estimator, "final", None) if chain else map_run.estimator
        if getattr(model, "extend", None) is None:
            return None
        extend = run_model(map_run, model).extend   # a third-party model projects in a worker process
        if chain:
            try:
                X = self.window.session.prepared_data(run.id).X
            except ManifoldStudioError:
                return None
        else:
            dataset = self.window.session.datasets.get(run.dataset_name)
            if dataset is None:
                return None
            X = dataset.X[run.point_index]
        kwargs = dict(mode=PROJECTED, extend=extend, map_name=f"run #{map_run.id}'s map")
        if own and centres is not None and centres.shape[1] == X.shape[1]:
            kwargs["centres"] = centres
        else:
            kwargs["raw_X"] = X
        return kwargs

    def _show(self, run, result: CentresResult | None) -> None:
        view = self.window.map_view
        if self._item is not None and view is not None:
            view.plot.removeItem(self._item)
            view.legend.removeItem(self._item)
        self._item = None
        self.centres, self.centres_run = result, run
        if result is not None and view is not None and len(result.xy):
            item = pg.ScatterPlotItem(x=result.xy[:, 0], y=result.xy[:, 1], symbol=CENTRE_SYMBOL,
                                      size=CENTRE_SIZE, pen=pg.mkPen(0, 0, 0, 255, width=1.8),
                                      name="cluster centres")
            item.setZValue(50)
            item.setToolTip(result.note)
            view.plot.addItem(item, ignoreBounds=True)  # a decoration: never widens the map's extent
            self._item = item
            self._recolour()
        self.centresChanged.emit(result)

    def _recolour(self) -> None:
        """Fill each star with its cluster's colour (white when the map shows other labels)."""
        view = self.window.map_view
        item, res = self._item, self.centres
        if item is None or res is None or view is None:
            return
        brushes = [pg.mkBrush(255, 255, 255, 230)] * len(res.labels)
        c = view.coloring
        if c is not None and c.mode == "categorical" and view.color_combo.currentData() == "run" \
                and view.color_labels is not None:
            uniq = np.unique(view.color_labels)
            pos = np.searchsorted(uniq, res.labels)
            ok = (pos < len(uniq))
            brushes = [pg.mkBrush(c.rgba(int(p))) if good and uniq[p] == lab else pg.mkBrush(255, 255, 255)
                       for p, good, lab in zip(pos, ok, res.labels)]
        item.setBrush(brushes)
        if not any(getattr(sample, "item", None) is item for sample, _ in view.legend.items):
            view.legend.addItem(item, "cluster centres")
            view.legend.setVisible(True)
