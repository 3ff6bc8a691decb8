"""Saving the fitted model of a run and applying a saved model to a file, from the Out of sample
panel: a mixin of :class:`~manifold_studio.gui.extend_panel.ExtendPanel` (it uses the panel's
window, session, ``_start``/``_say``/``_fail`` and its job)."""
from __future__ import annotations

import functools
from pathlib import Path

import numpy as np
from PySide6.QtWidgets import (
    QFileDialog,
)

from manifold_studio.extend.tasks import apply_model_to_file
from manifold_studio.files.model_file import save_model
from manifold_studio.session.records import FitOutcome


class ModelFileActions:
    """Save / apply a model file (mixed into the Out of sample panel)."""

    def choose_save_path(self):
        run = self._fitted_run()
        if run is None:
            return
        path, _ = QFileDialog.getSaveFileName(self, "Save the fitted model", f"{run.algorithm_id}_run{run.id}.npz",
                                              "Manifold Studio model (*.npz)")
        if path:
            self.save_model(path)

    def save_model(self, path):
        """Save the current run's fitted model (on a worker thread). Returns the Job."""

        run = self._fitted_run()
        if run is None:
            self._fail("There is no fitted model to save.")
            return None
        path = Path(path)
        if path.suffix != ".npz":
            path = path.with_name(path.name + ".npz")
        ds = self.session.datasets.get(run.dataset_name)

        def task(progress=None):
            progress.checkpoint(0.0, f"Saving {path.name}")
            return save_model(run.estimator, path, data=ds, extra={"run": run.id, "params": run.params})

        return self.window.start_job(
            task, title=f"Saving model of run #{run.id}",
            on_success=lambda p: (self._say(f"Saved the model of run #{run.id} to {p}."),
                                  self.window.show_status(f"Saved model to {p}")),
            on_failure=lambda msg, detail: self._fail(f"Could not save the model: {msg}", detail))

    def choose_model_and_file(self):
        model, _ = QFileDialog.getOpenFileName(self, "Choose a saved model", "", "Manifold Studio model (*.npz)")
        if not model:
            return
        path, _ = QFileDialog.getOpenFileName(self, "Choose the data file to place with it", "", "All files (*)")
        if path:
            self.apply_model(model, path)

    def apply_model(self, model_path, data_path, options: dict | None = None, ask: bool | None = None):
        """Load a saved model and a data file on a worker thread and place the file's points
        with the model; the result becomes a new run on the file (the model is not refitted)."""
        data_path = Path(data_path)
        ok, options = self._options_for(data_path, options, ask, f"Cannot read {data_path.name}")
        if not ok:
            return None
        task = functools.partial(apply_model_to_file, str(model_path), str(data_path), self.window.host, options)
        return self.window.start_job(
            task, title=f"Applying {Path(model_path).name} to {data_path.name}",
            on_success=lambda res, mp=str(model_path): self._model_applied(mp, res),
            on_failure=lambda msg, detail: self._fail(
                f"Could not apply {Path(model_path).name} to {data_path.name}: {msg}. Nothing was changed.", detail))

    def _model_applied(self, model_path: str, result) -> None:
        est, meta, res = result
        name = self.session.add_dataset(res.dataset)
        values = np.asarray(res.values)
        run = self.session.create_run(est.id, est.get_params(), name)
        self.session.start_run(run.id)
        embedding = values if est.kind == "embedding" else None
        labels = None if est.kind == "embedding" else values
        summary = {"applied_model": Path(model_path).name, "extend_time_s": round(res.time_s, 3)}
        outcome = FitOutcome(est, embedding, labels, summary, 0.0,
                             meta={"applied_model": str(model_path),
                                   "training_data": (meta.get("training_data") or {}).get("name", "")})
        run = self.session.complete_run(run.id, outcome)
        acc = ""
        if res.correct is not None and res.correct[1]:
            acc = f"; accuracy {res.correct[0] / res.correct[1]:.4f} ({res.correct[0]:,} of {res.correct[1]:,} correct)"
            self.session.log(f"Accuracy of the saved model {Path(model_path).name} on {name}{acc[1:].split(';')[0]}",
                             run_id=run.id)
        self._say(f"Placed {values.shape[0]:,} points of {name} with the saved model "
                  f"{Path(model_path).name} (run #{run.id}){acc}.")
        self.window.runFinished.emit(run)
