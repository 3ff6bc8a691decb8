"""File ▸ Open project / Save project: the whole session and the window layout in one file;
File ▸ Export as Python script… and File ▸ Apply this analysis to another file… (issue 21).

Reading and writing run on worker threads (a project with large data sets takes a moment);
the session is only changed in the main thread, after the file has been read and checked
completely, so a bad file changes nothing.
"""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QByteArray
from PySide6.QtGui import QAction, QKeySequence
from PySide6.QtWidgets import QFileDialog

from manifold_studio.reproduce.replay import replay
from manifold_studio.reproduce.script_export import write_script
from manifold_studio.errors import error_message
from manifold_studio.project.project_file import (
    SUFFIX,
    apply_project,
    read_project,
    save_project,
)

FILTER = f"Manifold Studio project (*{SUFFIX})"


class ProjectActions:
    """Owns the project path and the two menu actions of a main window."""

    def __init__(self, window):
        self.window = window
        self.path: Path | None = None
        #: ``callback(path, "opened" | "saved")`` after a project was opened or saved (recent
        #: projects, the undo history)
        self.path_listeners: list = []
        self.open_action = QAction("Open &project…", window, shortcut=QKeySequence("Ctrl+Shift+O"))
        self.open_action.triggered.connect(lambda: self.open_project())
        self.save_action = QAction("&Save project", window, shortcut=QKeySequence.StandardKey.Save)
        self.save_action.triggered.connect(lambda: self.save_project(self.path))
        self.save_as_action = QAction("Save project &as…", window, shortcut=QKeySequence.StandardKey.SaveAs)
        self.save_as_action.triggered.connect(lambda: self.save_project(None))
        menu = window.menus["file"]
        first = menu.actions()[0] if menu.actions() else None
        for action in (self.open_action, self.save_action, self.save_as_action):
            menu.insertAction(first, action)
        menu.insertSeparator(first)
        self.script_action = QAction("Export as Python &script…", window)
        self.script_action.triggered.connect(lambda: self.export_script())
        self.replay_action = QAction("&Apply this analysis to another file…", window)
        self.replay_action.triggered.connect(lambda: self.apply_to_file())
        for action in (self.script_action, self.replay_action):
            menu.insertAction(first, action)
        menu.insertSeparator(first)
        self.last_outputs: list = []

    # -- the window's own settings (the views' settings are session state, saved from it) ------
    def view_settings(self) -> dict:
        w = self.window
        return {"algorithm": w.algorithm_panel.algorithm_id,
                "window_state": bytes(w.saveState().toHex()).decode("ascii"),
                "window_geometry": bytes(w.saveGeometry().toHex()).decode("ascii")}

    def apply_view_settings(self, settings: dict) -> None:
        w = self.window
        if isinstance(settings.get("algorithm"), str) and settings["algorithm"]:
            w.algorithm_panel.select_algorithm(settings["algorithm"])
        for key, restore in (("window_geometry", w.restoreGeometry), ("window_state", w.restoreState)):
            text = settings.get(key)
            if isinstance(text, str) and text:
                restore(QByteArray.fromHex(text.encode("ascii")))

    # -- analysis results kept with the project -----------------------------------------------
    def _analysis_owners(self) -> list:
        """The tools whose results are saved in the project (``project_analyses()`` /
        ``restore_analyses(dict)``): the classification panel (every run's evaluation) and
        Test & Score and Compare clusterings (the comparisons), the map instruments (their settings)."""
        w = self.window
        return [o for o in (w.classification_panel, w.test_score, w.compare_clusterings, w.map_instruments)
                if o is not None]

    def analyses(self) -> dict:
        out = {}
        for owner in self._analysis_owners():
            out.update(owner.project_analyses())
        return out

    def restore_analyses(self, analyses: dict) -> None:
        for owner in self._analysis_owners():
            try:
                owner.restore_analyses(analyses)
            except Exception as exc:  # noqa: BLE001 - the project is open; this result is not
                self.window.report_error(f"A saved analysis could not be restored: {exc}")

    def _tell(self, path: Path, what: str) -> None:
        for callback in list(self.path_listeners):
            try:
                callback(path, what)
            except Exception as exc:  # noqa: BLE001 - a listener must not spoil the open/save
                self.window.report_error(f"After the project was {what}: {exc}")

    # -- actions ----------------------------------------------------------------------------
    def save_project(self, path=None):
        """Save to ``path`` (asks where when None and the project has no file yet)."""
        w = self.window
        if path is None:
            if not w.dialogs:
                return None
            start = str(self.path or Path.cwd() / f"project{SUFFIX}")
            chosen, _ = QFileDialog.getSaveFileName(w, "Save the project", start, FILTER)
            if not chosen:
                return None
            path = chosen if chosen.endswith(SUFFIX) else chosen + SUFFIX
        path = Path(path)
        if w.busy:
            w.report_error("Wait for the running job to finish (or cancel it) before saving the project.")
            return None
        settings = self.view_settings()
        analyses = self.analyses()
        form_values = w.algorithm_panel.remembered_values()

        def task(progress=None):
            progress.checkpoint(0.0, f"Saving {path.name}")
            save_project(w.session, path, settings, analyses, form_values)
            progress.checkpoint(1.0, f"Saved {path.name}")
            return path

        def done(saved):
            self.path = Path(saved)
            w.setWindowTitle(f"Manifold Studio — {self.path.name}")
            w.session.log(f"Saved project {self.path}")
            w.show_status(f"Saved project {self.path.name}")
            self._tell(self.path, "saved")

        return w.start_job(task, title=f"Save project {path.name}", on_success=done)

    def open_project(self, path=None):
        w = self.window
        if path is None:
            if not w.dialogs:
                return None
            chosen, _ = QFileDialog.getOpenFileName(w, "Open a project", str(self.path or ""), FILTER)
            if not chosen:
                return None
            path = chosen
        path = Path(path)
        if w.busy:
            w.report_error("Wait for the running job to finish (or cancel it) before opening a project.")
            return None

        def task(progress=None):
            progress.checkpoint(0.0, f"Reading {path.name}")
            contents = read_project(path, w.host)
            progress.checkpoint(1.0, f"Read {path.name}")
            return contents

        def done(contents):
            try:
                settings = apply_project(w.session, contents)
            except Exception as exc:  # noqa: BLE001 - reported, the session keeps its contents
                w.report_error(f"Could not open {path.name}: {exc}")
                return
            self.path = path
            w.setWindowTitle(f"Manifold Studio — {path.name}")
            for note in w.algorithm_panel.restore_values(contents.form_values):
                w.session.log(f"Opening {path.name}: {note}", "warning")
            self.apply_view_settings(settings)
            self.restore_analyses(contents.analyses)
            damaged = len(contents.problems)
            w.show_status(f"Opened project {path.name}" + (f": {damaged} problem(s), see the log (damaged runs are "
                                                           "marked failed)" if damaged else ""))
            self._tell(path, "opened")

        return w.start_job(task, title=f"Open project {path.name}", on_success=done)


    # -- reproduce and reuse ------------------------------------------------------------------
    def _ask_save(self, title: str, name: str, filt: str):
        if not self.window.dialogs:
            return None
        start = str((self.path.parent if self.path else Path.cwd()) / name)
        chosen, _ = QFileDialog.getSaveFileName(self.window, title, start, filt)
        return chosen or None

    def export_script(self, path=None):
        """Write a Python script reproducing the session (Qt-free writer); returns the path or None."""
        w = self.window
        path = path or self._ask_save("Export as Python script", "analysis.py", "Python script (*.py)")
        if not path:
            return None
        try:
            out = write_script(w.session, path, self.analyses())  # with the Test & Score comparison
        except Exception as exc:  # noqa: BLE001 - nothing has run, a folder not writable: said, nothing lost
            w.report_error(f"Could not export the script: {error_message(exc)}")
            return None
        w.show_status(f"Wrote {out.name}: run it with python {out.name} [OUTPUT_FOLDER].")
        return out

    def apply_to_file(self, data_path=None, out_dir=None):
        """Apply every saved model of the session to another file with the same columns and write
        each run's output to ``out_dir`` (a job); returns the Job, or None when refused."""
        w = self.window
        if data_path is None:
            if not w.dialogs:
                return None
            data_path, _ = QFileDialog.getOpenFileName(w, "Apply this analysis to another file", "",
                                                       "Data files (*.csv *.tsv *.txt *.xlsx *.parquet *.npy *.npz);;"
                                                       "All files (*)")
            if not data_path:
                return None
        if out_dir is None:
            if not w.dialogs:
                return None
            out_dir = QFileDialog.getExistingDirectory(w, "Write the outputs to the folder", str(Path(data_path).parent))
            if not out_dir:
                return None
        if w.busy:
            w.report_error("Wait for the running job to finish (or cancel it) before applying the analysis.")
            return None
        session = w.session

        def done(result):
            self.last_outputs = list(result.outputs)
            for note in result.notes:
                session.log(note, "warning")
            session.log(f"Applied the analysis to {Path(data_path).name}: wrote "
                        + ", ".join(p.name for _, p in result.outputs) + f" to {out_dir}")
            w.show_status(f"Applied {len(result.outputs)} run(s) to {Path(data_path).name}; outputs in {out_dir}.")

        return w.start_job(replay, session, data_path, out_dir, title=f"Apply the analysis to {Path(data_path).name}",
                           on_success=done, on_failure=lambda msg, detail: w.report_error(
                               f"Could not apply the analysis to {Path(data_path).name}: {msg}", detail))


def install_project_actions(window) -> ProjectActions:
    window.project = ProjectActions(window)
    return window.project
