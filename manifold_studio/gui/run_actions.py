"""Runs started from the main window: why Run is blocked, and running the session's fit spec
(:func:`manifold_studio.session.lifecycle.prepare_fit`) as a job, relaying its partial results,
success, failure and cancellation back to the spec (which records them in the session). A mixin
of :class:`~manifold_studio.gui.main_window.MainWindow` (it uses the window's session, panels,
``start_job``, ``report_error``, ``show_status`` and ``runFinished``). ``Session.run`` runs the
same spec synchronously (scripts, the command line)."""
from __future__ import annotations

from manifold_studio.errors import error_message, with_note
from manifold_studio.gui.distance_matrix_actions import distance_blocker
from manifold_studio.gui.fit_partials import prepare_partial_views, route_partial
from manifold_studio.gui.missing_values import missing_blocker
from manifold_studio.session.lifecycle import prepare_fit
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
        prep = self.preparation_panel
        if prep is not None and prep.errors():
            return prep.errors()
        panel = self.classification_panel
        return (distance_blocker(self, algo) or (panel.blocker(algo) if panel is not None else "")
                or missing_blocker(self, algo))

    def run_algorithm(self, algorithm_id: str | None = None, params: dict | None = None,
                      dataset_name: str | None = None, *, rows=None, make_task=None,
                      source_run: int | None = None):
        """Fit ``algorithm_id`` (default: the panel's) with ``params`` (default: the form's) on
        a data set (default: the current one). Returns the Run, or None if it could not start.

        ``rows``: fit on these rows of the data set only (e.g. a hold-out split).
        ``make_task(run)``: build the Qt-free task instead of ``session.fit_task(run)``; it must
        return a :class:`~manifold_studio.session.records.FitOutcome` (e.g. "fit on a sample, extend to all").
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
        panel = self.classification_panel
        if panel is not None and not panel.confirm_run(algo, cls):
            return None
        try:
            if params is None:
                params = self.algorithm_panel.values()
            selector = self.input_selector
            if source_run is None and algorithm_id is None and selector is not None and rows is None:
                source_run = selector.source_run()
            job = prepare_fit(self.session, cls, params, dataset_name, rows=rows, source_run=source_run,
                              chain=self.preparation_chain() if source_run is None else [],
                              isolated=self.run_controls.isolated_for(algo, cls), make_task=make_task)
        except Exception as exc:  # noqa: BLE001 - invalid input: say why, start nothing
            self.report_error(f"Cannot run {algo}: {error_message(exc)}")
            return None
        run = job.run
        if job.failed:  # recorded as failed by the session
            self.report_error(f"Run #{run.id} failed: {error_message(job.error)}", log=False)
            self.runFinished.emit(run)
            return run
        job.start()
        rid = run.id
        self.fit_job = self.start_job(
            job.spec, title=f"Fitting {algo}",
            on_success=lambda outcome, job=job: self._fit_done(job, outcome),
            on_failure=lambda msg, detail, job=job: self._fit_failed(job, msg, detail),
            on_cancel=lambda job=job: self._fit_cancelled(job))
        self.fit_job.run_id = rid  # the run's duration is what the window reports for it
        self.fit_job.partial.connect(lambda result, rid=rid: self._fit_partial(rid, result))
        prepare_partial_views(self, cls)
        self.show_status(f"Running {run.title()}…", 0)
        return run

    def preparation_chain(self) -> list[tuple[str, dict]]:
        """The Preparation panel's steps for the next run (none without the panel)."""
        prep = self.preparation_panel
        return prep.chain() if prep is not None else []

    def _fit_partial(self, run_id: int, result) -> None:
        """An intermediate result of a running fit: a training curve or a map preview."""
        route_partial(self, run_id, result)

    def _fit_done(self, job, outcome) -> None:
        run = job.finish(outcome)
        self.show_status(f"Run {run.title()} {run_end_text(run)} "
                         f"({run.n_points:,} points)")
        self.runFinished.emit(run)

    def _fit_failed(self, job, message: str, detail: str) -> None:
        run = job.fail(message, detail)
        self.show_run(self.session.current_run)  # drop any intermediate preview
        self.report_error(with_note(f"Run {run.title()} failed: {message}",
                                    "the previous result is still shown" if self.session.current_run else ""),
                          detail, log=False)
        self.runFinished.emit(run)

    def _fit_cancelled(self, job) -> None:
        run = job.cancel()
        if self.fit_job is not None and self.fit_job.abandoned:
            self.session.log(self.fit_job.message, "warning", run_id=run.id)
        self.show_run(self.session.current_run)  # drop any intermediate preview
        self.show_status(f"Run {run.title()} cancelled.")
        self.runFinished.emit(run)

