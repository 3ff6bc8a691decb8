"""The main window: docks for data, algorithm and logs; registered result views; the controller.

Structure (for engineers adding features):

- ``window.host``     the PluginHost (injectable: ``MainWindow(host=...)``)
- ``window.session``  the Qt-free :class:`~manifold_studio.session.model.Session` (the model)
- ``window.bridge``   session events as Qt signals (:mod:`.session_bridge`)
- ``window.jobs``     the :class:`~.worker.JobRunner`; use :meth:`start_job` to run any Qt-free
                      callable with progress/cancel, shown in the progress bar
- ``window.selection`` the :class:`~.selection_model.SelectionModel`: selected rows per data set
- ``window.views``    result views by id, created from :func:`.window_tools.all_views`; each gets
                      ``show_run(run, dataset)`` whenever the current run changes
- ``window.add_dock`` put any tool widget in a dock; ``window.menus``: menus by name ("file", ...)
- every other part (``window.preparation_panel``, ``window.export``, ``window.report_actions``, ...)
  is declared in :meth:`MainWindow._declare_parts`, the one list of what the window is made of,
  and filled in by the installers of :data:`.window_tools.TOOLS`; code reads ``window.part``
  directly (no ``getattr`` probes)

Runs, extensions and previews follow one lifecycle (:mod:`manifold_studio.session.lifecycle`):
the session creates the spec, the window runs it on a worker thread and relays progress, partial
results (to each view's public ``show_partial``) and Cancel. Everything heavy goes through a job;
slots only read results and update widgets.
"""
from __future__ import annotations

import functools
import html
from pathlib import Path

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import (
    QDialog,
    QDockWidget,
    QLabel,
    QMainWindow,
    QMessageBox,
    QVBoxLayout,
    QWidget,
)

from manifold_studio import load_data
from manifold_studio.errors import DataError, error_message, with_note
from manifold_studio.gui.algorithm_panel import AlgorithmPanel
from manifold_studio.gui.data_panel import DataPanel
from manifold_studio.gui.error_handling import show_error_dialog
from manifold_studio.gui.fit_scroll import scrollable
from manifold_studio.gui.import_dialog import DISTANCE_OPTION, options_dialog
from manifold_studio.gui.fit_partials import prepare_for_algorithm
from manifold_studio.gui.message_log import MessageLog
from manifold_studio.gui.plugin_manager_dialog import open_plugin_manager
from manifold_studio.gui.run_actions import RunActions
from manifold_studio.gui.run_controls import RunControls
from manifold_studio.gui.run_log import RunLog
from manifold_studio.gui.selection_model import SelectionModel
from manifold_studio.gui.session_bridge import SessionBridge
from manifold_studio.gui.window_layout import WindowLayout
from manifold_studio.gui.window_tools import all_views, install_tools
from manifold_studio.gui.worker import Job, JobRunner
from manifold_studio.plugins.host import get_host
from manifold_studio.session.model import Session
from manifold_studio.session.records import run_end_text

AREAS = {"left": Qt.DockWidgetArea.LeftDockWidgetArea, "right": Qt.DockWidgetArea.RightDockWidgetArea,
         "bottom": Qt.DockWidgetArea.BottomDockWidgetArea, "top": Qt.DockWidgetArea.TopDockWidgetArea}


class MainWindow(RunActions, QMainWindow):
    #: a fit ended (the Run, whatever its status)
    runFinished = Signal(object)
    #: a data set was added (its name)
    datasetLoaded = Signal(str)
    #: loading failed (the message)
    loadFailed = Signal(str)

    def __init__(self, host=None, session: Session | None = None, *, initial_sample: str | None = None,
                 initial_algorithm: str | None = "pca", dialogs: bool = True, parent=None):
        super().__init__(parent)
        if host is None:
            host = get_host()
        self.host = host
        self.session = session if session is not None else Session(host)
        self.session.isolate_third_party = True   # views never run third-party steps in this process
        self.bridge = SessionBridge(self.session, self)
        #: the selection (linked brushing): a Qt adapter over the session's selection commands
        self.selection = SelectionModel(self.session, self)
        self.jobs = JobRunner(self)
        self.dialogs = dialogs
        #: ask for loader options (label column, ...) when opening or dropping a file
        self.ask_loader_options = True
        self.fit_job: Job | None = None
        self._foreground: list[Job] = []
        self._startup_algorithm: str | None = None
        self._shut_down = False
        self.error_dialogs: list = []
        self.plugin_failure_box: QMessageBox | None = None
        self.views: dict = {}
        self.docks: dict[str, QDockWidget] = {}
        self.menus: dict = {}
        self._laid_out = False
        self._declare_parts()
        #: where the docks go, opening on demand, View ▸ Reset layout (gui/window_layout.py)
        self.window_layout = WindowLayout(self)

        self.setWindowTitle("Manifold Studio")
        self.setAcceptDrops(True)
        self.setDockNestingEnabled(True)
        self.setCorner(Qt.Corner.BottomLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.TopLeftCorner, Qt.DockWidgetArea.LeftDockWidgetArea)
        self.setCorner(Qt.Corner.BottomRightCorner, Qt.DockWidgetArea.RightDockWidgetArea)

        self._build_panels()
        self._build_views()
        self._build_menus()
        install_tools(self)  # every tool of the window, in order (gui/window_tools.py)
        self.bridge.currentRunChanged.connect(self.show_run)
        self.bridge.datasetsChanged.connect(self.run_controls.update_run_enabled)
        # "in a separate process" may depend on the data's size (methods that hold the GIL)
        self.bridge.datasetsChanged.connect(lambda: self.run_controls.show_algorithm(self.algorithm_panel.algorithm_id))
        self.bridge.runChanged.connect(self._on_run_changed)
        self.algorithm_panel.algorithmChanged.connect(lambda _id: self.run_controls.update_run_enabled())
        self.algorithm_panel.algorithmChanged.connect(self.run_controls.show_algorithm)
        self.algorithm_panel.algorithmChanged.connect(lambda aid: prepare_for_algorithm(self, aid))
        self.run_controls.show_algorithm(self.algorithm_panel.algorithm_id)
        self.algorithm_panel.form.validityChanged.connect(lambda _ok: self.run_controls.update_run_enabled())
        self.run_controls.update_run_enabled()
        self.statusBar().showMessage("Ready. Load data, pick an algorithm, press Run.")

        self._report_plugin_failures()
        if initial_algorithm and initial_algorithm in self.host.algorithms:
            self.algorithm_panel.select_algorithm(initial_algorithm)
        if initial_sample:
            self.data_panel.select_sample(initial_sample)
            if initial_sample in self.host.samples:
                self._startup_algorithm = initial_algorithm if initial_algorithm in self.host.algorithms else None
                self.load_source(f"sample:{initial_sample}")
            else:
                self.session.log(f"Sample data set '{initial_sample}' is not available "
                                 f"(no sample plugin provides it).", "warning")

    # -- construction -------------------------------------------------------------------------
    def _declare_parts(self) -> None:
        """Every part of the window, declared here and nowhere else. The core (panels, views,
        menus) is built by ``_build_*``; the tools of :data:`.window_tools.TOOLS` fill in the rest,
        in that order, each setting the attributes listed under its installer. Code reads a part
        as ``window.part`` (None only while the window is being built), never by probing."""
        # _build_panels, _build_menus
        self.data_panel = self.algorithm_panel = self.run_controls = self.run_log = self.message_log = None
        self.run_action = None
        # install_preparation, install_clustering_tools, install_distance_matrices
        self.preparation_panel = self.distance_matrices = None
        self.cluster_overlay = self.input_selector = self.cluster_map_action = None
        self.choose_k_tool = self.choose_k_action = None
        # install_classification, install_image_points, install_selection, install_selection_actions
        self.classification_panel = self.classify_map_action = self.image_points = None
        self.map_selection = self.selection_actions = None
        # install_project_actions, install_autosave, install_missing_values, install_plugin_manager
        self.project = self.autosave = self.missing_values = None
        self.plugin_manager_dialog = self.plugin_manager_action = None
        # install_scatter3d, install_export, install_data_table, install_recent_files
        self.scatter3d_action = self.export = self.data_table = self.recent = None
        # install_test_score, install_compare_clusterings
        self.test_score = self.test_score_action = None
        self.compare_clusterings = self.compare_clusterings_action = None
        # install_undo (the stack is made on first use: a panel may push before the menu exists)
        self.undo_stack = self.undo_action = self.redo_action = None
        # install_report, install_help_pages
        self.report_actions = None
        self.shortcuts_dialog = self.methods_dialog = None
        self.shortcuts_action = self.methods_action = self.zoom_action = None
        # install_preferences (last: restores the saved layout once every dock exists)
        self.settings_store = self.preferences = self.preferences_action = self.preferences_dialog = None
        self._preferences_watcher = None
        self.layout_restored = False
        # the previews of a running fit (made on the first one)
        self.partial_router = None
        self.map_instruments = None
        self.view_settings = None             # gui.view_settings: the views' settings bound to the session
        self.h5ad_export = None               # gui.h5ad_export: File ▸ Export to AnnData
        self.session_undo = False             # gui.session_undo: session commands on the undo stack           # gui.map_instruments: search, density, explain, ...

    def _build_panels(self):
        self.data_panel = DataPanel(self)
        self.algorithm_panel = AlgorithmPanel(self)
        self.run_controls = RunControls(self)
        algo_box = QWidget()
        lay = QVBoxLayout(algo_box)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(0)
        lay.addWidget(self.algorithm_panel, 1)
        lay.addWidget(self.run_controls)
        self.run_log = RunLog(self)
        self.message_log = MessageLog(self)
        self.add_dock("data", "Data", scrollable(self.data_panel), "left")
        self.add_dock("algorithm", "Algorithm", algo_box, "left")
        self.add_dock("runs", "Runs", self.run_log, "bottom")
        self.add_dock("messages", "Messages", self.message_log, "bottom")
        self.docks["runs"].raise_()

    def _build_views(self):
        central = None
        for cls in all_views():
            view = cls(self)
            self.views[cls.view_id] = view
            if cls.area == "central" and central is None:
                central = view
                self.setCentralWidget(view)
            else:  # in a scroll area: a view's minimum size never makes the window taller than the screen
                self.add_dock(f"view:{cls.view_id}", cls.title, scrollable(view), cls.area if cls.area in AREAS else "right")
        if central is None:
            self.setCentralWidget(QLabel("No view registered."))
        if "view:spectrum" in self.docks:  # the right area opens on the spectrum, not the last tab added
            self.docks["view:spectrum"].raise_()

    def add_dock(self, key: str, title: str, widget: QWidget, area: str = "right",
                 tabify: bool = True) -> QDockWidget:
        """Put ``widget`` in a dock (tabified with the existing docks of ``area``); only the
        default docks are shown at first, the others open from the View menu."""
        dock = QDockWidget(title, self)
        dock.setObjectName(f"dock_{key}")
        dock.setWidget(widget)
        dock.setFeatures(QDockWidget.DockWidgetFeature.DockWidgetMovable
                         | QDockWidget.DockWidgetFeature.DockWidgetFloatable
                         | QDockWidget.DockWidgetFeature.DockWidgetClosable)
        qt_area = AREAS.get(area, AREAS["right"])
        same_area = [d for d in self.docks.values() if self.dockWidgetArea(d) == qt_area]
        self.addDockWidget(qt_area, dock)
        if tabify and same_area and area in ("bottom", "right"):
            self.tabifyDockWidget(same_area[-1], dock)
        self.docks[key] = dock
        self.window_layout.adopt(key, dock)
        if "view" in self.menus:
            self.menus["view"].addAction(dock.toggleViewAction())
        return dock

    def _build_menus(self):
        bar = self.menuBar()
        file_menu = self.menus["file"] = bar.addMenu("&File")
        act = QAction("&Open data file…", self, shortcut=QKeySequence.StandardKey.Open)
        act.triggered.connect(self.data_panel.choose_file)
        file_menu.addAction(act)
        samples = file_menu.addMenu("Load &sample data")
        for sid, sample in sorted(self.host.samples.items()):
            a = QAction(sample.name or sid, self)
            a.triggered.connect(lambda _=False, sid=sid: self.load_source(f"sample:{sid}"))
            samples.addAction(a)
        samples.setEnabled(bool(self.host.samples))
        file_menu.addSeparator()
        quit_act = QAction("&Quit", self, shortcut=QKeySequence.StandardKey.Quit)
        quit_act.triggered.connect(self.close)
        file_menu.addAction(quit_act)
        self.menus["edit"] = bar.addMenu("&Edit")

        run_menu = self.menus["run"] = bar.addMenu("&Run")
        self.run_action = QAction("&Run", self, shortcut=QKeySequence("Ctrl+R"))
        self.run_action.triggered.connect(lambda: self.run_algorithm())
        run_menu.addAction(self.run_action)
        cancel = QAction("&Cancel", self, shortcut=QKeySequence("Ctrl+."))
        cancel.triggered.connect(self.cancel_jobs)
        run_menu.addAction(cancel)

        self.menus["tools"] = bar.addMenu("&Tools")
        self.menus["tools"].menuAction().setVisible(False)  # shown when a tool adds an action
        view_menu = self.menus["view"] = bar.addMenu("&View")
        view_menu.addAction(self.window_layout.reset_action)
        view_menu.addSeparator()
        for dock in self.docks.values():
            view_menu.addAction(dock.toggleViewAction())

        help_menu = self.menus["help"] = bar.addMenu("&Help")
        plugins = QAction("&Plugins…", self)
        plugins.triggered.connect(self.show_plugins)
        help_menu.addAction(plugins)

    def add_tool_action(self, action: QAction) -> None:
        """Add an action to the Tools menu (and make the menu visible)."""
        self.menus["tools"].addAction(action)
        self.menus["tools"].menuAction().setVisible(True)

    # -- errors and status ----------------------------------------------------------------------
    def report_error(self, message: str, detail: str = "", *, dialog: bool = False, log: bool = True) -> None:
        """Show an error in the status bar (and the message log; optionally a dialog)."""
        self.statusBar().setStyleSheet("QStatusBar { color: #b00020; }")
        self.statusBar().showMessage(message, 20_000)
        if log:
            self.session.log(message, "error", detail=detail)
        if dialog and self.dialogs:
            box = show_error_dialog(self, "Manifold Studio", message, detail)
            self.error_dialogs.append(box)
            box.finished.connect(lambda _r, box=box: box in self.error_dialogs and self.error_dialogs.remove(box))

    def show_status(self, message: str, msecs: int = 10_000) -> None:
        self.statusBar().setStyleSheet("")
        self.statusBar().showMessage(message, msecs)

    def _report_plugin_failures(self) -> None:
        failures = list(self.host.failures)
        for f in failures:
            self.session.log(f"Plugin {'not loaded' if f.quarantined else 'failed to load'}: {f}", "error", detail=f.detail)
        if not failures:
            return
        self.statusBar().showMessage(f"{len(failures)} plugin(s) could not be loaded: see Messages.")
        if self.dialogs:
            QTimer.singleShot(200, self._show_plugin_failures)

    def _show_plugin_failures(self) -> None:
        if self._shut_down:
            return
        failures = self.host.failures
        box = QMessageBox(self)
        box.setIcon(QMessageBox.Icon.Warning)
        box.setWindowTitle("Some plugins could not be loaded")
        box.setText(f"{len(failures)} plugin(s) could not be loaded and were skipped; "
                    "everything else works.")
        box.setInformativeText("<br>".join(html.escape(str(f)) for f in failures))
        box.setDetailedText("\n\n".join(f.detail or str(f) for f in failures))
        box.setWindowModality(Qt.WindowModality.NonModal)
        box.show()
        self.plugin_failure_box = box

    def show_plugins(self) -> None:
        """Help ▸ Plugins…: the plugin manager window (the same as Tools ▸ Plugins…)."""

        open_plugin_manager(self)

    # -- jobs -------------------------------------------------------------------------------------
    def start_job(self, fn, *args, title: str = "", on_success=None, on_failure=None, on_cancel=None,
                  foreground: bool = True, **kwargs) -> Job:
        """Run ``fn(*args, progress=..., **kwargs)`` on a worker thread.

        ``on_success(result)``, ``on_failure(message, detail)`` (default: report the error) and
        ``on_cancel()`` are called in the main thread. A foreground job drives the progress bar
        and is stopped by the Cancel button.
        """
        job = self.jobs.start(fn, *args, title=title, **kwargs)
        if on_success is not None:
            job.succeeded.connect(on_success)
        if on_failure is not None:
            job.failed.connect(on_failure)
        else:
            job.failed.connect(lambda msg, detail, title=title: self.report_error(f"{title} failed: {msg}", detail))
        if on_cancel is not None:
            job.cancelled.connect(on_cancel)
        if foreground:
            self._foreground.append(job)
            job.progressed.connect(self.run_controls.show_progress)
            job.ended.connect(self._foreground_ended)
            self.run_controls.set_busy(True, title)
        return job

    def _foreground_ended(self) -> None:
        job = self.sender()
        if job in self._foreground:
            self._foreground.remove(job)
        if self._foreground:
            return
        self.run_controls.set_busy(False)
        run = self.session.runs.get(getattr(job, "run_id", None))
        if job.state == Job.DONE and run is not None and "duration_s" in run.timings:
            # a fit: the run's own duration, the one the status bar and the Runs table show
            self.run_controls.show_end("stopped" if run.meta.get("stopped_early") else "done", f"{job.title}: {run_end_text(run)}", 1.0)
        elif job.state == Job.DONE:
            self.run_controls.show_end("done", f"{job.title}: done in {job.elapsed:.2f} s", 1.0)
        elif job.state == Job.CANCELLED:
            self.run_controls.show_end("cancelled", f"{job.title}: cancelled after {job.elapsed:.2f} s")
        else:
            self.run_controls.show_end("failed", f"{job.title}: failed — {job.error}")

    @property
    def busy(self) -> bool:
        return bool(self._foreground)

    def cancel_jobs(self) -> None:
        """Cancel every foreground job (the fit within about a second)."""
        if not self._foreground:
            return
        for job in self._foreground:
            job.cancel()
        self.run_controls.message.setText("Cancelling…")
        self.show_status("Cancelling…")

    # -- data -----------------------------------------------------------------------------------
    def load_source(self, source: str, options: dict | None = None, loader=None) -> Job:
        """Load ``sample:NAME`` or a file on a worker thread; the result is added to the
        session, a failure is reported and changes nothing. ``loader``: the file's loader when
        the caller has resolved it already."""
        label = source.split(":", 1)[1] if source.startswith("sample:") else Path(source).name
        task = functools.partial(load_data, source, self.host, loader=loader, **(options or {}))
        return self.start_job(task, title=f"Loading {label}", on_success=self._loaded,
                              on_failure=lambda msg, detail, source=source: self._load_failed(source, msg, detail))

    def _loaded(self, dataset) -> None:
        name = self.session.add_dataset(dataset)
        self.show_status(f"Loaded {dataset.describe()}")
        self.datasetLoaded.emit(name)
        if self._startup_algorithm:
            algo, self._startup_algorithm = self._startup_algorithm, None
            QTimer.singleShot(0, lambda: self.run_algorithm(algo, {}) if not self._shut_down else None)

    def _load_failed(self, source: str, message: str, detail: str) -> None:
        self._startup_algorithm = None
        kept = "the loaded data is unchanged" if self.session.datasets else ""
        self.report_error(with_note(f"Could not load {source}: {message}", kept), detail, dialog=True)
        self.loadFailed.emit(message)

    def open_file(self, path, options: dict | None = None, ask: bool | None = None,
                  distance_matrix: bool = False) -> Job | None:
        """Open a data file with the loader registered for its extension; ``distance_matrix``: as
        a square matrix of distances (File ▸ Open distance matrix…). When the import dialog is
        shown, its "This file is a distance matrix" box decides."""
        path = Path(path)
        try:
            loader = self.host.loader_for(path)
        except DataError as exc:
            self.report_error(error_message(exc), dialog=True)
            self.loadFailed.emit(error_message(exc))
            return None
        ask = self.ask_loader_options if ask is None else ask
        if options is None and ask and loader.options:
            # the import dialog for CSV/TSV and Excel
            dlg = options_dialog(loader, path, self, distance_matrix=distance_matrix or None,  # None: as last time
                                 chain=self.preparation_panel.chain())
            if dlg.exec() != QDialog.DialogCode.Accepted:
                return None
            options = dlg.values()
            distance_matrix = options.pop(DISTANCE_OPTION, distance_matrix and not hasattr(dlg, "distance_box"))
        if distance_matrix:
            return self.distance_matrices.load(path, options, loader)
        return self.load_source(str(path), options, loader)

    def dragEnterEvent(self, event):
        if event.mimeData().hasUrls() and any(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event):
        self.dragEnterEvent(event)

    def dropEvent(self, event):
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        for p in paths:
            self.open_file(p)

    def _on_run_changed(self, run) -> None:
        if run is not None and run.id == self.session.current_run_id and run.succeeded:
            self.show_run(run)  # e.g. an extension was added to the shown run

    def show_run(self, run) -> None:
        """Show ``run`` in every registered view (the docks the user opened are hidden while
        their view does not apply)."""
        dataset = self.session.datasets.get(run.dataset_name) if run is not None else None
        for view_id, view in self.views.items():
            applies = view.applies_to(run)
            if run is not None:
                self.window_layout.show_if_wanted(f"view:{view_id}", applies)
            if applies:
                try:
                    view.show_run(run, dataset)
                except Exception as exc:  # noqa: BLE001 - a broken view must not break the others
                    self.report_error(f"The view '{view.title}' failed: {error_message(exc)}")

    @property
    def map_view(self):
        return self.views.get("map")

    # -- shutdown -------------------------------------------------------------------------------
    def shutdown(self) -> None:
        """Cancel every job and join every worker thread (idempotent)."""
        if self._shut_down:
            return
        self._shut_down = True
        self.autosave.stop()  # a clean exit: the recovery file goes
        self.jobs.shutdown()
        self.bridge.detach()
        for box in list(self.error_dialogs):
            box.close()
        if self.plugin_failure_box is not None:
            self.plugin_failure_box.close()

    def showEvent(self, event):
        super().showEvent(event)
        if not self._laid_out:
            self._laid_out = True
            self.window_layout.apply_proportions()
            QTimer.singleShot(0, self.window_layout.apply_proportions)  # once the docks are laid out

    def closeEvent(self, event):
        self.shutdown()
        super().closeEvent(event)
