"""Runs started from the main window: why Run is blocked, starting a fit as a job, and the
fit's partial results, success, failure and cancellation recorded in the session. A mixin of
:class:`~manifold_studio.gui.main_window.MainWindow` (it uses the window's session, panels,
``start_job``, ``report_error``, ``show_status`` and ``runFinished``)."""
from __future__ import annotations

from manifold_studio.errors import error_message
from manifold_studio.gui.distance_matrix_actions import distance_blocker
from manifold_studio.gui.fit_partials import route_partial
from manifold_studio.gui.missing_values import missing_blocker
from manifold_studio.session.records import run_end_text


class RunActions:
    """The window's run actions (mixed into the main window)."""

    def run_blocker(self) -> str:
        """Why Run is not possible right now ("" when it is)."""
        if not self.session.datasets:
            return "Load a data set first."
        algo = self.algorithm_panel.algorithm_id
        if not algo:
            return "Pick an algorithm."
        errors = self.algorithm_panel.form.errors()
        if errors:
            return next(iter(errors.values()))
        prep = getattr(self, "preparation_panel", None)
        if prep is not None and prep.errors():
            return prep.errors()
        panel = getattr(self, "classification_panel", None)
        return (distance_blocker(self, algo) or (panel.blocker(algo) if panel is not None else "")
                or missing_blocker(self, algo))

    def run_algorithm(self, algorithm_id: str | None = None, params: dict | None = None,
                      dataset_name: str | None = None, *, rows=None, make_task=None,
                      source_run: int | None = None):
        """Fit ``algorithm_id`` (default: the panel's) with ``params`` (default: the form's) on
        a data set (default: the current one). Returns the Run, or None if it could not start.

        ``rows``: fit on these rows of the data set only (e.g. a hold-out split).
        ``make_task(run)``: build the Qt-free task instead of ``session.fit_task(run)``; it must
        return a :class:`~manifold_studio.session.model.FitOutcome` (e.g. "fit on a sample, extend to all").
        ``source_run``: fit on the embedding of this earlier run ("cluster this map"); when the
        algorithm comes from the panel (``algorithm_id`` None) it defaults to the panel's input."""
        if self.fit_job is not None and not self.fit_job.finished:
            self.report_error("A fit is already running: wait for it or cancel it.", log=False)
            return None
        algo = algorithm_id or self.algorithm_panel.algorithm_id
        if not algo:
            self.report_error("Pick an algorithm first.", log=False)
            return None
        try:
            cls = self.host.algorithm_class(algo)  # resolved once: the run, the checks and the task use it
        except Exception as exc:  # noqa: BLE001 - an unknown id: say why, start nothing
            self.report_error(f"Cannot run {algo}: {error_message(exc)}")
            return None
        panel = getattr(self, "classification_panel", None)
        if panel is not None and not panel.confirm_run(algo, cls):
            return None
        try:
            if params is None:
                params = self.algorithm_panel.values()
            selector = getattr(self.algorithm_panel, "input_selector", None)
            if source_run is None and algorithm_id is None and selector is not None and rows is None:
                source_run = selector.source_run()
            chain = self.preparation_chain() if source_run is None else []
            run = self.session.create_run(cls, params, dataset_name, rows=rows, source_run=source_run,
                                          chain=chain)
        except Exception as exc:  # noqa: BLE001 - invalid input: say why, start nothing
            self.report_error(f"Cannot run {algo}: {error_message(exc)}")
            return None
        try:
            # a chained run fits the pipeline in this process (the isolated child builds a bare algorithm)
            isolated = self.run_controls.isolated_for(algo, cls) and "chain" not in run.meta
            task = self.session.fit_task(run, isolated=isolated) if make_task is None else make_task(run)
        except Exception as exc:  # noqa: BLE001
            self.session.fail_run(run.id, exc)
            self.report_error(f"Run #{run.id} failed: {error_message(exc)}", log=False)
            self.runFinished.emit(run)
            return run
        self.session.start_run(run.id)
        rid = run.id
        self.fit_job = self.start_job(
            task, title=f"Fitting {algo}",
            on_success=lambda outcome, rid=rid: self._fit_done(rid, outcome),
            on_failure=lambda msg, detail, rid=rid: self._fit_failed(rid, msg, detail),
            on_cancel=lambda rid=rid: self._fit_cancelled(rid))
        self.fit_job.run_id = rid  # the run's duration is what the window reports for it
        self.fit_job.partial.connect(lambda result, rid=rid: self._fit_partial(rid, result))
        self.show_status(f"Running {run.title()}…", 0)
        return run

    def preparation_chain(self) -> list[tuple[str, dict]]:
        """The Preparation panel's steps for the next run (none without the panel)."""
        prep = getattr(self, "preparation_panel", None)
        return prep.chain() if prep is not None else []

    def _fit_partial(self, run_id: int, result) -> None:
        """An intermediate result of a running fit: a training curve or a map preview."""
        route_partial(self, run_id, result)

    def _fit_done(self, run_id: int, outcome) -> None:
        run = self.session.complete_run(run_id, outcome)
        self.show_status(f"Run {run.title()} {run_end_text(run)} "
                         f"({run.n_points:,} points)")
        self.runFinished.emit(run)

    def _fit_failed(self, run_id: int, message: str, detail: str) -> None:
        run = self.session.fail_run(run_id, message, detail)
        self.show_run(self.session.current_run)  # drop any intermediate preview
        self.report_error(f"Run {run.title()} failed: {message}" + (
            "; the previous result is still shown" if self.session.current_run else ""), detail, log=False)
        self.runFinished.emit(run)

    def _fit_cancelled(self, run_id: int) -> None:
        run = self.session.cancel_run(run_id)
        if self.fit_job is not None and self.fit_job.abandoned:
            self.session.log(self.fit_job.message, "warning", run_id=run_id)
        self.show_run(self.session.current_run)  # drop any intermediate preview
        self.show_status(f"Run {run.title()} cancelled.")
        self.runFinished.emit(run)

