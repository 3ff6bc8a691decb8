"""Reconstruction view: originals beside their reconstructions with M components, the error
against M, and the components drawn as images (eigen-images, NMF parts) — seed 002's figure.

For every run whose method can decode (``inverse_transform``: PCA, probabilistic PCA, NMF,
autoencoders). The refits for each M run on a worker thread
(:func:`manifold_studio.analysis.reconstruction.reconstruction_series`) with progress and Cancel.
"""
from __future__ import annotations

import functools

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QFormLayout,
    QHBoxLayout,
    QPushButton,
    QSpinBox,
    QTabWidget,
    QVBoxLayout,
)

from manifold_studio.analysis.reconstruction import (
    image_shape,
    reconstruction_series,
    supports_reconstruction,
)
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.widgets import button_row, column, heading_label, message_label
from manifold_studio.session.isolated_extend import WorkerModel
from manifold_studio.session.isolated_fit import fit_estimator_in_subprocess
from manifold_studio.session.lifecycle import run_extends_in_worker

_MAX_COMPONENTS_SHOWN = 16
_LABEL_STYLE = {"color": "#333", "size": "8pt"}


def as_picture(row: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A data row as a 2-D grey picture (colour rows by their luminance)."""
    img = np.asarray(row, dtype=float).reshape(shape)
    return img @ np.array([0.299, 0.587, 0.114]) if img.ndim == 3 else img


def reconstruction_task(estimator, X, *, max_points, progress=None, isolated: bool = False):
    """The refits and reconstructions; ``isolated``: each refit in a worker process
    (:func:`~manifold_studio.session.isolated_fit.fit_estimator_in_subprocess`), each
    reconstruction in another (:class:`~manifold_studio.session.isolated_extend.WorkerModel`)."""
    fit = decode = None
    if isolated:
        def fit(est, rows, p):
            outcome = fit_estimator_in_subprocess(est, rows, None, p)
            return outcome.estimator, outcome.embedding

        def decode(est, codes):
            return WorkerModel(est).inverse_transform(codes)
    return reconstruction_series(estimator, X, max_points=max_points, progress=progress, fit=fit, decode=decode)


class ReconstructionView(ResultView):
    view_id = "reconstruction"
    title = "Reconstruction"
    area = "bottom"
    order = 75

    #: a series was computed and drawn
    seriesReady = Signal(object)
    #: the refits failed (e.g. a worker process died): the message shown
    seriesFailed = Signal(str)

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.series = None
        self._cache: dict[int, object] = {}
        self.heading = heading_label("Fit a method that reconstructs (PCA, NMF, …) first.")
        self.note_label = message_label()
        self.points_spin = QSpinBox()
        self.points_spin.setRange(50, 1_000_000)
        self.points_spin.setValue(5000)
        self.points_spin.setGroupSeparatorShown(True)
        self.points_spin.setToolTip("Random rows used for the refits (one fit per number of components).")
        self.compute_button = QPushButton("Compute")
        self.compute_button.setToolTip("Refit the method with M = 1, 3, 10, 20, 50, 200 components (those the "
                                       "data allow) and reconstruct the data with each.")
        self.compute_button.clicked.connect(lambda: self.compute())
        self.cancel_button = QPushButton("Cancel")
        self.cancel_button.clicked.connect(self.cancel)
        form = QFormLayout()
        form.addRow("Points used:", self.points_spin)
        settings = column(form, button_row(self.compute_button, self.cancel_button), None)
        settings.setMaximumWidth(220)

        self.grid = pg.GraphicsLayoutWidget()
        self.grid.setBackground("w")
        self.components_grid = pg.GraphicsLayoutWidget()
        self.components_grid.setBackground("w")
        self.error_plot = pg.PlotWidget(background="w")
        item = self.error_plot.getPlotItem()
        item.setLabel("bottom", "number of components M")
        item.setLabel("left", "variance left unexplained (%)")
        item.getAxis("left").enableAutoSIPrefix(False)
        item.showGrid(x=True, y=True, alpha=0.25)
        item.setLogMode(x=True, y=False)
        item.hideButtons()
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.tabs.addTab(self.grid, "Originals and reconstructions")
        self.tabs.addTab(self.error_plot, "Error against M")
        self.tabs.addTab(self.components_grid, "Components")
        body = QHBoxLayout()
        body.addWidget(settings)
        body.addWidget(self.tabs, 1)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 2, 4, 2)
        lay.addWidget(self.heading)
        lay.addWidget(self.note_label)
        lay.addLayout(body, 1)
        self._update_enabled()

    # -- ResultView -----------------------------------------------------------------------
    def applies_to(self, run) -> bool:
        return (run is not None and run.succeeded and run.estimator is not None
                and supports_reconstruction(run.estimator))

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        if run is None or not self.applies_to(run):
            self.heading.setText("Fit a method that reconstructs its data (PCA, probabilistic PCA, NMF, "
                                 "an autoencoder) first.")
        else:
            self.heading.setText(f"What M components keep: {run.title()} "
                                 f"({run.algorithm_name or run.algorithm_id}) refitted for each M.")
        self.draw(self._cache.get(run.id) if run is not None else None)
        self._update_enabled()

    def report_blocker(self) -> str:
        if self.run is None or self.series is None:
            return f"{self.title} draws nothing yet: press Compute first."
        return ""

    def _update_enabled(self) -> None:
        ok = self.run is not None and self.applies_to(self.run)
        self.compute_button.setEnabled(ok and not self.busy)
        self.cancel_button.setEnabled(self.busy)

    # -- compute --------------------------------------------------------------------------
    def compute(self):
        """Start the refits for the current run on a worker thread. Returns the Job."""
        run, window = self.run, self.window
        if run is None or not self.applies_to(run) or self.busy:
            return None
        try:
            X, _y = window.session.training_data(run)
        except Exception as exc:  # noqa: BLE001 - say why, start nothing
            window.report_error(f"Cannot compute the reconstructions: {exc}")
            return None
        # a third-party method refits and reconstructs in worker processes, never in the window's
        task = functools.partial(reconstruction_task, run.estimator, X, max_points=self.points_spin.value(),
                                 isolated=run_extends_in_worker(run))
        rid = run.id
        self.note_label.setText("Computing… (one fit of the method per number of components)")
        return self.start_own_job(task, title=f"Reconstructions of run #{rid}",
                                  on_success=lambda series, rid=rid: self._done(rid, series),
                                  on_failure=lambda msg, detail, rid=rid: self._failed(rid, msg, detail),
                                  on_cancel=lambda rid=rid: self._ended_without(rid, "cancelled"))

    def _done(self, run_id: int, series) -> None:
        self._cache[run_id] = series
        run = self.window.session.runs.get(run_id)
        if run is not None:
            best = ", ".join(f"M={m}: {e:.1%}" for m, e in zip(series.counts, series.errors))
            self.window.session.log(f"Reconstruction of {run.title()}, variance left unexplained: {best}",
                                    run_id=run_id)
        if self.run is not None and self.run.id == run_id:
            self.draw(series)
        self.seriesReady.emit(series)

    def _failed(self, run_id: int, message: str, detail: str) -> None:
        text = f"The reconstructions of run #{run_id} failed: {message}"
        self.window.report_error(text, detail)
        self._ended_without(run_id, "failed")
        self.seriesFailed.emit(text)

    def _ended_without(self, run_id: int, what: str) -> None:
        self.window.show_status(f"Reconstructions of run #{run_id} {what}.")
        if self.run is not None and self.run.id == run_id:
            self.draw(self._cache.get(run_id))

    # -- drawing --------------------------------------------------------------------------
    def draw(self, series) -> None:
        self.series = series
        self.grid.clear()
        self.components_grid.clear()
        self.error_plot.getPlotItem().clear()
        if series is None:
            ok = self.run is not None and self.applies_to(self.run)
            self.note_label.setText("<i>Press Compute: the method is refitted with M = 1, 3, 10, 20, 50 and 200 "
                                    "components (as many as the data allow).</i>" if ok else "")
            return
        d = series.originals.shape[1]
        shape = image_shape(self.dataset.images if self.dataset is not None else None, d)
        self._draw_error_curve(series)
        notes = list(series.notes)
        if shape is None:
            notes.append("The rows are not images: see the error curve.")
            self.tabs.setCurrentWidget(self.error_plot)
        else:
            self._draw_pictures(series, shape)
            self._draw_components(series, shape)
        self.note_label.setText(" ".join(notes))

    def _draw_error_curve(self, series) -> None:
        item = self.error_plot.getPlotItem()
        m = np.asarray(series.counts, dtype=float)
        e = 100.0 * np.asarray(series.errors, dtype=float)
        item.plot(m, e, pen=pg.mkPen(52, 101, 164, width=2), symbol="o", symbolSize=7,
                  symbolBrush=pg.mkBrush(52, 101, 164), symbolPen=None)
        for x, y in zip(m, e):
            text = pg.TextItem(f"{y:.1f}%", color=(60, 60, 60), anchor=(0.5, 1.3))
            text.setPos(np.log10(x), y)
            item.addItem(text)
        item.setYRange(0, max(1e-9, float(e.max())) * 1.15, padding=0)
        item.getAxis("bottom").setTicks([[(float(np.log10(x)), str(int(x))) for x in m]])

    def _picture(self, layout, row: int, col: int, img: np.ndarray, levels) -> None:
        vb = layout.addViewBox(row=row, col=col, lockAspect=True, enableMouse=False)
        vb.setMenuEnabled(False)
        vb.addItem(pg.ImageItem(img, axisOrder="row-major", levels=levels))
        vb.invertY(True)
        vb.autoRange(padding=0.02)

    def _draw_pictures(self, series, shape) -> None:
        originals = [as_picture(r, shape) for r in series.originals]
        levels = (float(min(o.min() for o in originals)), float(max(o.max() for o in originals)))
        if levels[1] <= levels[0]:
            levels = (levels[0], levels[0] + 1.0)
        self.grid.addLabel("original", row=0, col=0, **_LABEL_STYLE)
        for j, img in enumerate(originals):
            self._picture(self.grid, 0, j + 1, img, levels)
        for i, (m, rec, err) in enumerate(zip(series.counts, series.reconstructions, series.errors)):
            self.grid.addLabel(f"M = {m}<br>{err:.0%} lost", row=i + 1, col=0, **_LABEL_STYLE)
            for j, r in enumerate(rec):
                self._picture(self.grid, i + 1, j + 1, as_picture(r, shape), levels)

    def _draw_components(self, series, shape) -> None:
        comps = series.components
        if comps is None:
            self.components_grid.addLabel("This model has no components to draw.", **_LABEL_STYLE)
            return
        comps = comps[:_MAX_COMPONENTS_SHOWN]
        self.components_grid.addLabel(f"The model's first {len(comps)} components as images (blue negative, "
                                      "white zero, red positive).", row=0, col=0, colspan=8, **_LABEL_STYLE)
        cmap = pg.colormap.get("CET-D1")  # diverging: negative blue, zero white, positive red
        cols = min(8, len(comps))
        for k, c in enumerate(comps):
            img = as_picture(c, shape)
            bound = float(np.abs(img).max()) or 1.0
            vb = self.components_grid.addViewBox(row=2 * (k // cols) + 1, col=k % cols, lockAspect=True,
                                                 enableMouse=False)
            item = pg.ImageItem(img, axisOrder="row-major", levels=(-bound, bound))
            item.setColorMap(cmap)
            vb.addItem(item)
            vb.invertY(True)
            vb.autoRange(padding=0.02)
            self.components_grid.addLabel(f"component {k + 1}", row=2 * (k // cols) + 2, col=k % cols,
                                          **_LABEL_STYLE)
