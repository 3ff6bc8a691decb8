"""The base class of every result view, and the registry the main window builds its views from.

A view is a QWidget that shows something about the *current run* (the run selected in the run
log, or the last one that finished). To add one, write a module in this package::

    from manifold_studio.gui.views.base import ResultView, register_view

    @register_view
    class SpectrumView(ResultView):
        view_id = "spectrum"
        title = "Eigenvalue spectrum"
        area = "right"            # "central", "right", "bottom" or "left" dock area

        def applies_to(self, run):                # optional: hide for other runs
            return run is not None and hasattr(run.estimator, "eigenvalues_")

        def show_run(self, run, dataset):
            ...                                   # draw; never compute anything heavy here

and import the module in :mod:`manifold_studio.gui.views` (its ``__init__`` imports the
built-in view modules so that registration happens). The main window creates one instance per
registered view, puts it in a dock (tabified with the other docks of the same area) and calls
:meth:`ResultView.show_run` whenever the current run changes. Views reach the rest of the
application through ``self.window``: ``window.session`` (the model), ``window.jobs`` (start
background work) and ``window.bridge`` (session events as Qt signals).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtWidgets import QMainWindow, QWidget

if TYPE_CHECKING:  # pragma: no cover
    from manifold_studio.data import Dataset
    from manifold_studio.session.records import Run

_REGISTRY: dict[str, type["ResultView"]] = {}


class ResultView(QWidget):
    view_id: str = ""
    title: str = ""
    #: where the main window puts it: "central" (one view only), "right", "bottom", "left"
    area: str = "right"
    #: order among views of the same area (lower first)
    order: int = 100
    #: the job the view started with :meth:`start_own_job` (a :class:`~manifold_studio.gui.worker.Job`)
    job = None

    def __init__(self, window=None, parent=None):
        super().__init__(parent)
        self.window = window
        self.run: Run | None = None
        self.dataset: Dataset | None = None

    @property
    def job_window(self):
        """The application window that runs this view's background jobs, or None (a view on its
        own, e.g. in a test with a stand-in window: the work is done here)."""
        return self.window if isinstance(self.window, QMainWindow) else None

    def applies_to(self, run: "Run | None") -> bool:
        """Whether this view has something to show for ``run`` (its dock is hidden otherwise)."""
        return True

    def show_run(self, run: "Run | None", dataset: "Dataset | None") -> None:
        """Display ``run`` (None: nothing selected). ``dataset`` may be None if it was removed."""
        self.run, self.dataset = run, dataset

    def clear(self) -> None:
        self.show_run(None, None)

    # -- the report ---------------------------------------------------------------------------------
    def report_blocker(self) -> str:
        """Why *Add to report* cannot add this view now ("" when it can): it shows nothing yet."""
        return "" if self.run is not None else f"{self.title} shows nothing yet: run a method first."

    def ensure_drawn(self) -> None:
        """Draw what the state says now, even off screen (a view that draws lazily overrides it):
        *Add to report* renders the view whether its tab is visible or not."""

    # -- a view's own job (for views with a Compute / Cancel button) ------------------------------
    @property
    def busy(self) -> bool:
        """The view's job is running."""
        return self.job is not None and not self.job.finished

    def start_own_job(self, fn, *args, **kwargs):
        """``window.start_job(fn, *args, **kwargs)`` as the view's job; :meth:`_update_enabled`
        follows it (now, and when it ends). Returns the Job."""
        self.job = self.window.start_job(fn, *args, **kwargs)
        self.job.ended.connect(self._update_enabled)
        self._update_enabled()
        return self.job

    def cancel(self) -> None:
        """Cancel the view's job, if it runs."""
        if self.busy:
            self.job.cancel()

    def _update_enabled(self) -> None:
        """Enable the view's controls for its state (e.g. Cancel while its job runs)."""


def register_view(cls: type[ResultView]) -> type[ResultView]:
    """Class decorator: make the main window create this view."""
    if not cls.view_id:
        raise ValueError(f"{cls.__name__} needs a view_id")
    _REGISTRY[cls.view_id] = cls
    return cls


def unregister_view(view_id: str) -> None:
    _REGISTRY.pop(view_id, None)


def registered_views() -> list[type[ResultView]]:
    return sorted(_REGISTRY.values(), key=lambda c: (c.order, c.view_id))
