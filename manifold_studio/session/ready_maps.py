"""Ready-made maps: the embeddings a data file brings with it (an AnnData file's ``obsm['X_umap']``,
``obsm['X_pca']``, ...; :attr:`manifold_studio.data.Dataset.ready_maps`) recorded as finished runs
of the pseudo-algorithm ``ready_map``, so that the views colour, select and compare them like any
run's map. They have no model: they cannot be extended, refitted or saved as a model."""
from __future__ import annotations

import time

import numpy as np

from manifold_studio.session.records import DONE, Run

#: the algorithm id of the runs that are maps stored with the data
READY_MAP = "ready_map"


#: the maps shown first when a file brings several (the others are in the Runs table)
PREFERRED_KEYS = ("X_umap", "X_tsne")


def is_ready_map(run: Run) -> bool:
    return run.algorithm_id == READY_MAP


def preferred_ready_map(runs: list[Run]) -> Run:
    """The ready map shown when its data set is loaded: X_umap, else X_tsne, else the first."""
    rank = {k.casefold(): i for i, k in enumerate(PREFERRED_KEYS)}
    return min(runs, key=lambda r: rank.get(str(r.params.get("key", "")).casefold(), len(rank)))


def add_ready_maps(session, dataset_name: str) -> list[Run]:
    """One finished run per ready map of data set ``dataset_name`` not recorded yet (a project
    reopened keeps its own); returns the runs added."""
    ds = session.dataset(dataset_name)
    have = {r.meta.get("ready_map") for r in session.runs.values()
            if is_ready_map(r) and r.dataset_name == dataset_name}
    added = []
    for key, embedding in ds.ready_maps.items():
        if key in have:
            continue
        run = Run(session.new_run_id(), READY_MAP, {"key": key}, dataset_name, kind="embedding",
                  algorithm_name=f"{key} (stored in {ds.name})", status=DONE,
                  embedding=np.asarray(embedding, dtype=np.float64),
                  summary={"note": f"the map {key!r} stored in the data file; it has no model to extend"},
                  meta={"ready_map": key})
        run.timings.update(created=time.time(), finished=time.time(), duration_s=0.0)
        session.add_run(run)
        added.append(run)
    if added:
        session.log(f"{dataset_name}: {len(added)} ready-made map(s) from the file: "
                    f"{', '.join(r.params['key'] for r in added)}", dataset=dataset_name)
    return added
