"""3-D: a rotating 3-D scatter of a run with three or more components (pyqtgraph.opengl), coloured
by the data labels, the data set's selection highlighted, with an auto-rotate toggle.

Where OpenGL is unavailable (no PyOpenGL, a display without OpenGL such as Qt's ``offscreen``
platform, a driver that cannot create a context) the view says so in plain words and shows the
three 2-D pairs of the chosen components instead (1–2, 1–3, 2–3), as small linked maps with the
selection. Detection never crashes: :func:`opengl_problem` imports pyqtgraph.opengl and creates
an OpenGL context on an offscreen surface; the 3-D widget itself is checked again after it is
shown (``isValid()``), and a failure there switches to the pairs too.

``install_scatter3d(window)`` adds View ▸ "3-D view of this run" (Ctrl+3): a 3-D request for
the current run, which for a run with fewer than three components says it needs three.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from PySide6.QtCore import QTimer
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QCheckBox,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QSpinBox,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from manifold_studio.algorithms.progress import as_progress
from manifold_studio.gui.lazy_slot import LazySlot
from manifold_studio.gui.views.base import ResultView
from manifold_studio.gui.views.palette import Coloring
from manifold_studio.gui.views.small_map import (
    SmallMap,
    attach_selection_overlay,
    dataset_coloring,
    drawn_sample,
    shared_mode_bar,
)
from manifold_studio.gui.widgets import heading_label, message_label, say
from manifold_studio.gui.worker import LatestJob

#: the pairs of components drawn without OpenGL (0-based positions among the three chosen)
PAIRS = ((0, 1), (0, 2), (1, 2))
#: the 3-D cloud is centred and scaled to about this half-width (camera distance follows)
GL_EXTENT = 10.0
ROTATE_MS = 40
#: preparing a run of more points than this runs as a background job
PREPARE_JOB_POINTS = 100_000
ROTATE_DEGREES = 0.6

_GL_PROBLEM: str | None = None
_GL_PROBED = False


def _import_gl():
    import pyqtgraph.opengl as gl  # noqa: PLC0415 - optional: needs PyOpenGL and a working driver

    return gl


def opengl_problem(refresh: bool = False) -> str:
    """Why a 3-D view cannot be drawn here, in plain words ("" when OpenGL works). Cached."""
    global _GL_PROBLEM, _GL_PROBED
    if _GL_PROBED and not refresh:
        return _GL_PROBLEM or ""
    _GL_PROBLEM = _probe_opengl()
    _GL_PROBED = True
    return _GL_PROBLEM


def _probe_opengl() -> str:
    try:
        _import_gl()
    except Exception as exc:  # noqa: BLE001 - ImportError, OpenGL.error.*, a broken driver library
        return (f"The 3-D view needs PyOpenGL and pyqtgraph.opengl, which could not be loaded "
                f"({type(exc).__name__}: {exc}). Install it with: pip install PyOpenGL")
    try:
        from PySide6.QtGui import QGuiApplication, QOffscreenSurface, QOpenGLContext

        platform = QGuiApplication.platformName()
        context = QOpenGLContext()
        if not context.create():
            return (f"OpenGL is not available on this display (Qt platform '{platform}'), so the 3-D view "
                    f"cannot be drawn.")
        surface = QOffscreenSurface()
        surface.setFormat(context.format())
        surface.create()
        ok = surface.isValid() and context.makeCurrent(surface)
        if ok:
            context.doneCurrent()
        surface.destroy()
        if not ok:
            return f"OpenGL could not be used on this display (Qt platform '{platform}'): no 3-D view."
    except Exception as exc:  # noqa: BLE001
        return f"OpenGL could not be checked ({type(exc).__name__}: {exc}): no 3-D view."
    return ""


def embedding_run_for(window, run):
    """The run whose embedding a 3-D view of ``run`` shows: ``run`` itself, or (clustering /
    classification) the map it is drawn on."""
    if run is None:
        return None
    if run.embedding is not None:
        return run
    map_view = window.map_view if window is not None else None
    return map_view.map_run_for(run) if map_view is not None else None


def n_components(run) -> int:
    if run is None or run.embedding is None:
        return 0
    emb = np.asarray(run.embedding)
    return int(emb.shape[1]) if emb.ndim == 2 else 1


@dataclass
class Prepared3D:
    """What the 3-D view draws for one run and choice of components (numpy only)."""

    xyz: np.ndarray            # (n, 3): the chosen components
    rows: np.ndarray           # (n,) data-set rows
    coloring: Coloring         # by the data set's labels
    pairs: list                # the three (n, 2) pairs of :data:`PAIRS`
    drawn: np.ndarray | None   # positions the pairs draw (None: all)
    gl_pos: np.ndarray         # (n, 3) float32, centred and scaled to :data:`GL_EXTENT`
    gl_colors: np.ndarray      # (n, 4) float32 RGBA


def prepare_3d(embedding, rows, components, dataset=None, progress=None) -> Prepared3D:
    """Everything the 3-D view draws, vectorised (a job for large runs)."""
    progress = as_progress(progress)
    progress.checkpoint(0.0, "Preparing the 3-D view")
    xyz = np.asarray(embedding, dtype=float)[:, list(components)]
    rows = np.asarray(rows, dtype=np.intp)
    coloring = dataset_coloring(dataset, rows)
    colors = np.empty((len(xyz), 4), dtype=np.float32)
    colors[:, :3] = coloring.colors[coloring.codes] / np.float32(255.0)
    colors[:, 3] = 0.9
    return Prepared3D(xyz, rows, coloring, [xyz[:, [a, b]] for a, b in PAIRS], drawn_sample(rows),
                      gl_positions(xyz), colors)


def gl_positions(xyz: np.ndarray) -> np.ndarray:
    """``xyz`` centred on its mean and scaled so that its largest half-width is
    :data:`GL_EXTENT` (float32; non-finite coordinates become 0)."""
    finite = np.isfinite(xyz).all(axis=1)
    if not finite.any():
        return np.zeros((len(xyz), 3), dtype=np.float32)
    centre = xyz[finite].mean(axis=0)
    half = float(np.abs(xyz[finite] - centre).max()) or 1.0
    return np.nan_to_num((xyz - centre) * (GL_EXTENT / half)).astype(np.float32)


class Scatter3DView(ResultView):
    view_id = "scatter3d"
    title = "3-D"
    area = "right"
    order = 65

    def __init__(self, window=None, parent=None):
        super().__init__(window, parent)
        self.map_run = None
        self.xyz = np.zeros((0, 3))
        self.rows = np.zeros(0, dtype=np.intp)
        self.components = (0, 1, 2)
        #: the reason the 3-D scatter is not drawn ("" while it is), shown in :attr:`info`
        self.problem = ""
        self.gl_widget = None
        self.gl_scatter = None
        self.gl_highlight = None
        self._pairs: list[SmallMap] | None = None   # the 2-D pairs, made when first shown or drawn
        self.prepared: Prepared3D | None = None
        self.latest = LatestJob()
        self._gl_pos = np.zeros((0, 3), dtype=np.float32)
        #: which drawn points the 3-D scatter highlights
        self.highlighted = np.zeros(0, dtype=bool)

        self.heading = heading_label("3-D: runs with three or more components.")
        self.info = message_label("")
        self.info.hide()
        self.axis_spins = []
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Components:"))
        for i in range(3):
            spin = QSpinBox()
            spin.setRange(1, 3)
            spin.setValue(i + 1)
            spin.setToolTip(f"Which component is the {'xyz'[i]} axis.")
            spin.valueChanged.connect(self._on_components_changed)
            self.axis_spins.append(spin)
            bar.addWidget(spin)
        self.rotate_check = QCheckBox("auto-rotate")
        self.rotate_check.setChecked(True)
        self.rotate_check.setToolTip("Turn the cloud slowly around the vertical axis.")
        self.rotate_check.toggled.connect(self._update_rotation)
        bar.addWidget(self.rotate_check)
        bar.addStretch(1)
        self.timer = QTimer(self)
        self.timer.setInterval(ROTATE_MS)
        self.timer.timeout.connect(self._rotate_step)

        self.stack = QStackedWidget()
        self.gl_page = QWidget()
        self.gl_layout = QVBoxLayout(self.gl_page)
        self.gl_layout.setContentsMargins(0, 0, 0, 0)
        self.pairs_page = QWidget()
        pairs_layout = QVBoxLayout(self.pairs_page)
        pairs_layout.setContentsMargins(0, 0, 0, 0)
        self.mode_bar = shared_mode_bar(window, lambda: self._dataset_name(), lambda: self.pairs)
        if self.mode_bar is not None:
            pairs_layout.addWidget(self.mode_bar)
        self._pairs_slot = LazySlot(self._make_pairs)
        pairs_layout.addWidget(self._pairs_slot, 1)
        self.stack.addWidget(self.gl_page)
        self.stack.addWidget(self.pairs_page)

        layout = QVBoxLayout(self)
        layout.setContentsMargins(2, 2, 2, 2)
        layout.addWidget(self.heading)
        layout.addWidget(self.info)
        layout.addLayout(bar)
        layout.addWidget(self.stack, 1)
        if window is not None:
            window.selection.changed.connect(self._on_selection_changed)

    # -- ResultView -------------------------------------------------------------------------
    def _make_pairs(self) -> QWidget:
        grid_host = QWidget()
        grid = QGridLayout(grid_host)
        grid.setContentsMargins(0, 0, 0, 0)
        grid.setSpacing(2)
        pairs = []
        for n, _pair in enumerate(PAIRS):
            m = SmallMap()
            pairs.append(m)
            grid.addWidget(m, n // 2, n % 2)
        self._pairs = pairs
        return grid_host

    @property
    def pairs(self) -> list[SmallMap]:
        """The 2-D maps of the component pairs (made on first use)."""
        self._pairs_slot.content()
        return self._pairs

    def applies_to(self, run) -> bool:
        return n_components(embedding_run_for(self.window, run)) >= 3

    def show_run(self, run, dataset) -> None:
        super().show_run(run, dataset)
        self.map_run = embedding_run_for(self.window, run)
        k = n_components(self.map_run)
        if run is None:
            self._show_nothing("3-D: runs with three or more components.")
            return
        if k < 3:
            what = f"has {k} component{'s' if k != 1 else ''}" if k else "has no embedding"
            self._show_nothing(f"{run.title()} {what}: a 3-D view needs 3 components. Run an embedding "
                               f"method with n_components = 3 (or more).", error=True)
            return
        for spin in self.axis_spins:
            spin.blockSignals(True)
            spin.setRange(1, k)
            spin.blockSignals(False)
        self.heading.setText(f"{self.map_run.title()} — {self.map_run.algorithm_name or self.map_run.algorithm_id}"
                             f" ({k} components)")
        self._draw()

    def request(self, run=None) -> bool:
        """A 3-D request (View ▸ 3-D view of this run): show the dock and ``run`` (default: the
        current run). Returns whether a 3-D scatter is drawn; otherwise a clear message says why
        (fewer than 3 components, or no OpenGL: then the 2-D pairs are shown)."""
        run = run if run is not None else self.window.session.current_run
        dock = self.window.docks.get(f"view:{self.view_id}") if self.window is not None else None
        if dock is not None:
            dock.show()
            dock.raise_()
        dataset = self.window.session.datasets.get(run.dataset_name) if run is not None else None
        self.show_run(run, dataset)
        if run is None:
            self.window.report_error("3-D view: no run to show yet — run an embedding method with 3 components.",
                                     log=False)
        elif self.problem:
            self.window.report_error(f"3-D view: {self.problem}", log=False)
        return self.gl_scatter is not None and not self.problem

    # -- public API -------------------------------------------------------------------------
    @property
    def uses_opengl(self) -> bool:
        return self.stack.currentWidget() is self.gl_page and self.gl_scatter is not None

    def set_components(self, a: int, b: int, c: int) -> None:
        """Show components a, b, c (1-based) on the x, y, z axes."""
        for spin, v in zip(self.axis_spins, (a, b, c)):
            spin.blockSignals(True)
            spin.setValue(v)
            spin.blockSignals(False)
        self._on_components_changed()

    # -- drawing ----------------------------------------------------------------------------
    def _dataset_name(self):
        return self.map_run.dataset_name if self.map_run is not None else None

    def _show_nothing(self, text: str, error: bool = False) -> None:
        self.latest.drop()
        self.prepared = None
        self.problem = text if error else ""
        self.heading.setText("3-D")
        say(self.info, text, error)
        self.info.show()
        self.xyz = np.zeros((0, 3))
        self.rows = np.zeros(0, dtype=np.intp)
        if self.gl_scatter is not None:
            self.gl_scatter.setData(pos=np.zeros((0, 3)))
            self.gl_highlight.setData(pos=np.zeros((0, 3)))
        for m in self._pairs or ():
            m.set_points(np.zeros((0, 2)), np.zeros(0, dtype=np.intp), dataset_coloring(None, []), None)
            m.set_title("")
        self.timer.stop()

    def _on_components_changed(self, *_):
        if self.map_run is not None and n_components(self.map_run) >= 3:
            self._draw()

    def _draw(self) -> None:
        run = self.map_run
        self.components = tuple(spin.value() - 1 for spin in self.axis_spins)
        dataset = self.window.session.datasets.get(run.dataset_name) if self.window is not None else self.dataset
        problem = opengl_problem()
        if not problem and not self._ensure_gl():
            problem = self.problem or "OpenGL is not available here: the 3-D widget could not be created."
        args = (run.embedding, run.point_index, self.components, dataset)
        if run.n_points <= PREPARE_JOB_POINTS or self.window is None:
            self.latest.drop()
            self._apply(prepare_3d(*args), problem)
            return
        say(self.info, f"Preparing the 3-D view of {run.n_points:,} points…")
        self.info.show()
        self.latest.start(self.window, prepare_3d, *args, title="3-D view",
                          on_success=lambda prepared: self._apply(prepared, problem),
                          on_failure=lambda msg, _detail: self.window.report_error(f"3-D view failed: {msg}"))

    def _apply(self, prepared: Prepared3D, problem: str) -> None:
        if self.map_run is None:
            return
        self.prepared = prepared
        self.xyz, self.rows, self.coloring = prepared.xyz, prepared.rows, prepared.coloring
        if problem:
            self._show_pairs(problem)
        else:
            self._show_gl()
        self._on_selection_changed(self.map_run.dataset_name)

    def _show_pairs(self, problem: str) -> None:
        self.problem = problem
        say(self.info, f"{problem} Showing the 2-D pairs of components instead.", True)
        self.info.show()
        self.stack.setCurrentWidget(self.pairs_page)
        self.rotate_check.setEnabled(False)
        self.timer.stop()
        labels = [f"component {c + 1}" for c in self.components]
        p = self.prepared
        for m, (a, b), xy in zip(self.pairs, PAIRS, p.pairs):
            if m.overlay is None:
                m.dataset_name = self.map_run.dataset_name
                attach_selection_overlay(self.window, m, self.mode_bar)
            m.set_points(xy, p.rows, p.coloring, self.map_run.dataset_name,
                         f"components {self.components[a] + 1} – {self.components[b] + 1}", (labels[a], labels[b]),
                         drawn=p.drawn)

    def _ensure_gl(self) -> bool:
        """Create the GL widget once; False (with :attr:`problem` set) when that fails."""
        if self.gl_widget is not None:
            return True
        try:
            gl = _import_gl()
            widget = gl.GLViewWidget()
            widget.setMinimumSize(200, 200)
            widget.setBackgroundColor("w")
            scatter = gl.GLScatterPlotItem(pos=np.zeros((0, 3)), size=5, pxMode=True)
            scatter.setGLOptions("translucent")
            highlight = gl.GLScatterPlotItem(pos=np.zeros((0, 3)), size=10, color=(0, 0, 0, 1), pxMode=True)
            highlight.setGLOptions("translucent")
            axes = gl.GLAxisItem()  # x red, y green, z blue: the orientation while it turns
            axes.setSize(GL_EXTENT, GL_EXTENT, GL_EXTENT)
            widget.addItem(axes)
            widget.addItem(scatter)
            widget.addItem(highlight)
        except Exception as exc:  # noqa: BLE001
            self.problem = f"The 3-D widget could not be created ({type(exc).__name__}: {exc})."
            return False
        self.gl_widget, self.gl_scatter, self.gl_highlight = widget, scatter, highlight
        self.gl_layout.addWidget(widget)
        return True

    def _show_gl(self) -> None:
        self.problem = ""
        self.info.hide()
        self.stack.setCurrentWidget(self.gl_page)
        self.rotate_check.setEnabled(True)
        p = self.prepared
        self._gl_pos = p.gl_pos
        self.gl_scatter.setData(pos=p.gl_pos, color=p.gl_colors, size=5 if len(p.gl_pos) <= 100_000 else 2)
        self.gl_widget.setCameraPosition(distance=2.6 * GL_EXTENT)
        self._update_rotation()
        QTimer.singleShot(0, self._check_gl_context)

    def _check_gl_context(self) -> None:
        """After the GL widget is shown: no valid context means no OpenGL after all."""
        if self.gl_widget is None or not self.gl_widget.isVisible() or self.map_run is None:
            return
        if not self.gl_widget.isValid():
            self.timer.stop()
            self._show_pairs("OpenGL could not create a drawing context for the 3-D widget on this display.")
            self._on_selection_changed(self.map_run.dataset_name)

    # -- selection and rotation -------------------------------------------------------------
    def _on_selection_changed(self, name: str) -> None:
        if self.window is None or name is None or self.map_run is None or name != self.map_run.dataset_name:
            return
        mask = self.window.selection.mask(name)
        for m in self._pairs or ():
            m.show_selection(mask)
        if self.gl_highlight is not None and self.stack.currentWidget() is self.gl_page:
            sel = mask[self.rows] if mask.size > int(self.rows.max(initial=-1)) else np.zeros(len(self.rows), bool)
            self.highlighted = sel
            self.gl_highlight.setData(pos=self._gl_pos[sel])

    def _update_rotation(self, *_):
        if self.rotate_check.isChecked() and self.uses_opengl and self.isVisible():
            self.timer.start()
        else:
            self.timer.stop()

    def _rotate_step(self) -> None:
        if self.gl_widget is not None:
            self.gl_widget.orbit(ROTATE_DEGREES, 0)

    def showEvent(self, event):
        super().showEvent(event)
        self._update_rotation()
        if self.uses_opengl:
            QTimer.singleShot(0, self._check_gl_context)

    def hideEvent(self, event):
        self.timer.stop()
        super().hideEvent(event)


def install_scatter3d(window) -> QAction:
    """View ▸ "3-D view of this run" (Ctrl+3): a 3-D request for the current run."""
    view = window.views.get(Scatter3DView.view_id)
    if view is None:  # the view module was imported after the window was built
        view = Scatter3DView(window)
        window.views[Scatter3DView.view_id] = view
        window.add_dock(f"view:{Scatter3DView.view_id}", Scatter3DView.title, view, Scatter3DView.area)
    action = QAction("3-D view of this run", window)
    action.setShortcut(QKeySequence("Ctrl+3"))
    action.setToolTip("Show the current run in a rotating 3-D scatter (needs 3 components and OpenGL).")
    action.triggered.connect(lambda: view.request())
    window.menus["view"].addAction(action)
    window.scatter3d_action = action
    return action
