"""File ▸ Export ▸ the current run into an AnnData ``.h5ad`` file: a new file (a copy of the data's
``.h5ad`` with the result added, or a new AnnData file with the data as ``X``) or added to an
existing one atomically (:mod:`manifold_studio.files.anndata_out`); written in a job."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtGui import QAction
from PySide6.QtWidgets import QFileDialog

from manifold_studio.errors import DataError, error_message
from manifold_studio.files.anndata_out import add_to_h5ad, write_h5ad
from manifold_studio.session.ready_maps import is_ready_map

FILTER = "AnnData (*.h5ad)"


class H5adExport:
    """The two actions of File ▸ Export for .h5ad files."""

    def __init__(self, export):
        self.window, self.job = export.window, None
        self.new_action = QAction("Current run into a new &AnnData file (.h5ad)…", self.window)
        self.add_action = QAction("Add current run to an existing AnnData file…", self.window)
        self.new_action.triggered.connect(lambda _=False: self.choose(add=False))
        self.add_action.triggered.connect(lambda _=False: self.choose(add=True))
        export.menu.insertAction(export.menu.actions()[2], self.new_action)
        export.menu.insertAction(export.menu.actions()[3], self.add_action)

    def _run(self):
        run = self.window.session.current_run
        if run is None or not run.succeeded:
            raise DataError("No finished run is selected: run a method (or pick a run) first.")
        result = run.embedding if run.kind == "embedding" else run.shown_labels
        if result is None:
            raise DataError(f"Run {run.title()} has no result to write.")
        if run.rows is not None:
            raise DataError(f"Run {run.title()} was fitted on some rows only: extend it to the whole data set "
                            "first (Extend), then write that run.")
        return run, result

    def choose(self, add: bool) -> None:
        ds = self.window.session.current_dataset
        start = ds.source if ds is not None and str(ds.source).endswith(".h5ad") and add else \
            str(Path.home() / f"{ds.name if ds is not None else 'result'}.h5ad")
        if add:
            path, _ = QFileDialog.getOpenFileName(self.window, "Add the run to an AnnData file", start, FILTER)
        else:
            path, _ = QFileDialog.getSaveFileName(self.window, "Write the run into a new AnnData file", start, FILTER)
        if path:
            self.export(path if Path(path).suffix else path + ".h5ad", add=add)

    def export(self, path, add: bool = False):
        """Write (``add``: add) the current run's result into ``path`` in a job; returns the Job, or
        None when refused (the message is shown)."""
        window = self.window
        try:
            run, result = self._run()
            ds = window.session.dataset(run.dataset_name)
        except Exception as exc:  # noqa: BLE001 - say why, write nothing
            window.report_error(f"Export failed: {error_message(exc)}")
            return None
        write = add_to_h5ad if add else write_h5ad
        method = run.algorithm_id
        if is_ready_map(run):   # a map that came with the file keeps its name: obsm['X_umap'], not 'X_ready_map'
            key = str(run.meta.get("ready_map", method))
            method = key[2:] if key.startswith("X_") and len(key) > 2 else key

        def task(progress=None):
            return write(path, result, method, run.kind, ds)

        self.job = window.start_job(task, title=f"Writing run #{run.id} into {Path(path).name}",
                                    on_success=lambda what: window.show_status(f"{Path(path).name}: {what}"),
                                    on_failure=lambda msg, detail: window.report_error(f"Export failed: {msg}",
                                                                                       detail))
        return self.job


def install_h5ad_export(window) -> H5adExport:
    """Once, after :func:`manifold_studio.gui.export.install_export`."""
    if window.h5ad_export is not None:
        return window.h5ad_export
    window.h5ad_export = H5adExport(window.export)
    return window.h5ad_export
