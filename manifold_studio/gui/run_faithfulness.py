"""The map's global faithfulness in each embedding run's summary (issue 31: "How faithful is
the map here ... the global figure goes in the run summary"): when an embedding run finishes, a
background worker computes the mean local trustworthiness (k = TRUST_K) of its map from the
shared neighbour index (:func:`~manifold_studio.analysis.map_neighbours.global_trustworthiness`;
over every row up to TRUST_SAMPLE points, else a random sample of that many rows, whose size
the summary states as ``local_trustworthiness_sample_rows``)."""
from __future__ import annotations

import numpy as np
from PySide6.QtCore import QTimer

from manifold_studio.analysis.map_neighbours import TRUST_SAMPLE, IndexCache, global_trustworthiness
from manifold_studio.gui.views.neighbour_layer import SAMPLE_KEY, TRUST_K, TRUST_KEY, feature_space
from manifold_studio.session.records import DONE

#: the job starts this long after the run finishes: the finished map is drawn first, without a
#: worker competing for the interpreter lock (building the index holds it at times)
START_DELAY_MS = 1500


def run_trust_task(cache: IndexCache, dataset, run, xy, sample: int = TRUST_SAMPLE, progress=None):
    """(run id, figure, rows used) of ``run``'s map (Qt-free; on a worker)."""
    if dataset.distance_matrix:
        value, used = global_trustworthiness(None, xy, TRUST_K, distances=dataset.X, sample=sample)
    else:
        X, key = feature_space(dataset, run)
        value, used = global_trustworthiness(cache.get(key, X, progress=progress), xy, TRUST_K,
                                             sample=sample, progress=progress)
    return run.id, value, used


class RunFaithfulness:
    """Starts :func:`run_trust_task` for each embedding run that finishes with a map of every
    row of its data set (once per run), and writes the figure into its summary."""

    def __init__(self, window, cache: IndexCache):
        self.window, self.cache = window, cache
        self.started: set[int] = set()
        self.sample = TRUST_SAMPLE   # rows of a larger map the figure is estimated on
        self.delay_ms = START_DELAY_MS
        window.bridge.runChanged.connect(self._on_run_changed)

    def wanted(self, run) -> bool:
        emb = getattr(run, "embedding", None)
        if (run is None or run.status != DONE or run.kind != "embedding" or emb is None or emb.ndim != 2
                or emb.shape[1] < 2 or run.id in self.started or TRUST_KEY in run.summary):
            return False
        session = self.window.session
        if run.id not in session.runs or run.dataset_name not in session.datasets:
            return False
        n = session.dataset(run.dataset_name).n_samples
        rows = run.point_index
        return len(rows) == n > TRUST_K + 1 and bool(np.array_equal(rows, np.arange(n)))

    def _on_run_changed(self, run) -> None:
        if not self.wanted(run):
            return
        self.started.add(run.id)
        run_id = run.id
        QTimer.singleShot(self.delay_ms, self.window, lambda: self._start(run_id))

    def _start(self, run_id: int) -> None:
        run = self.window.session.runs.get(run_id)
        if run is None or self.window._shut_down or TRUST_KEY in run.summary \
                or run.dataset_name not in self.window.session.datasets:
            return
        dataset = self.window.session.dataset(run.dataset_name)
        xy = np.asarray(run.embedding[:, :2], dtype=float)
        self.window.start_job(
            run_trust_task, self.cache, dataset, run, xy, self.sample, title="Map faithfulness (run summary)",
            foreground=False, on_success=self._ready, on_failure=self._failed)

    def _ready(self, result) -> None:
        run_id, value, used = result
        run = self.window.session.runs.get(run_id)
        if run is None or TRUST_KEY in run.summary:   # removed, or the colour option came first
            return
        run.summary[TRUST_KEY] = round(value, 4)
        if used < run.n_points:
            run.summary[SAMPLE_KEY] = used
        if self.window.run_log is not None:
            self.window.run_log.refresh_run(run)

    def _failed(self, message, _detail) -> None:   # no figure: said in the status bar only
        self.window.show_status(f"Map faithfulness for the run summary: {message}")
