"""Where the intermediate results of a running fit go (``progress.partial`` on the worker).

- a :class:`~manifold_studio.algorithms.curves.TrainingCurve` (a classifier's loss or mistakes
  per epoch) → the training curve view, raised so the user sees it live;
- anything else (an (n, k) intermediate embedding, e.g. t-SNE iterations) → the map's preview.

A preview must never break the fit: failures are logged as warnings.
"""
from __future__ import annotations

from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.session import error_message


def route_partial(window, run_id: int, result) -> None:
    run = window.session.runs.get(run_id)
    if run is None or run.finished:
        return
    try:
        if isinstance(result, TrainingCurve):
            view = window.views.get("training_curve")
            if view is not None:
                dock = window.docks.get("view:training_curve")
                if dock is not None and not dock.isVisible():
                    dock.setVisible(True)
                view.show_partial(run, result)
            return
        view = window.map_view
        if view is not None:
            view.show_partial(run, result, window.session.datasets.get(run.dataset_name))
    except Exception as exc:  # noqa: BLE001 - a preview must never break the fit
        window.session.log(f"Could not draw an intermediate result: {error_message(exc)}", "warning")
