"""Project files: a whole session — data sets, runs with their results and fitted models,
extensions, history — and the view settings, in one file, without pickle.

The file is a compressed ``.npz`` (a zip of ``.npy`` arrays) holding one JSON document
(``__manifold_studio_project__``) and the arrays it refers to:

- ``data/<i>/X``, ``data/<i>/labels``, ``data/<i>/images`` for the i-th data set;
- ``run/<id>/embedding``, ``run/<id>/labels``, ``run/<id>/rows`` for a run's results;
- ``run/<id>/model/<attribute>`` for its fitted model (see :func:`model_io.pack_estimator`);
- ``run/<id>/ext/<j>/values`` and ``run/<id>/ext/<j>/rows`` for its extensions;
- ``analysis/<key>/<name>`` for the arrays of an analysis result saved with the project (a
  classifier run's evaluation, a Test & Score comparison: ``analyses=`` of :func:`save_project`,
  records of :mod:`manifold_studio.files.analysis_records`).

It is read back with ``np.load(allow_pickle=False)`` and written atomically (a temporary file,
then a rename), so a crash while saving never damages the previous version. A run whose
algorithm plugin is missing when the project is opened keeps its results; only its model
is dropped, and the session's log says so.
"""
from __future__ import annotations

import datetime as _dt
import itertools
import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from manifold_studio import __version__
from manifold_studio.data import Dataset
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.files.model_file import (
    ModelFileError,
    _jsonable,
    atomic_savez,
    open_npz,
    pack_estimator,
    read_arrays,
    read_document,
    unpack_estimator,
)
from manifold_studio.session.model import Session
from manifold_studio.session.records import (
    CANCELLED,
    FINISHED_STATUSES,
    Extension,
    LogEntry,
    Run,
)

FORMAT = "manifold-studio-project"
FORMAT_VERSION = 1
META_KEY = "__manifold_studio_project__"
SUFFIX = ".msproj"

__all__ = ["save_project", "load_project", "load_project_into", "read_project", "apply_project",
           "ProjectContents", "FORMAT_VERSION", "SUFFIX"]


@dataclass
class ProjectContents:
    """A project file read into a detached session (see :func:`read_project`)."""

    path: Path
    session: Session
    view_settings: dict
    #: runs whose model could not be restored (their results are kept)
    problems: list
    #: analysis results saved with the project: key -> (document, arrays)
    analyses: dict = field(default_factory=dict)


def _array(value) -> np.ndarray | None:
    """A pickle-free array: object arrays (e.g. mixed labels) become text."""
    if value is None:
        return None
    arr = np.asarray(value)
    if arr.dtype == object:
        arr = arr.astype(str)
    return arr


def _put(arrays: dict, key: str, value) -> str | None:
    arr = _array(value)
    if arr is None:
        return None
    arrays[key] = arr
    return key


def save_project(session: Session, path, view_settings: dict | None = None,
                 analyses: dict | None = None) -> Path:
    """Write ``session`` (and the GUI's ``view_settings``) to ``path``; returns the path.

    ``analyses``: results kept with the project, ``{key: (document, {name: array})}`` (a key
    is a plain name such as ``evaluation/3``; the document must be JSON-able)."""

    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    datasets = []
    for i, ds in enumerate(session.datasets.values()):
        datasets.append({
            "name": ds.name, "source": ds.source, "label_name": ds.label_name,
            "feature_names": ds.feature_names, "report": list(ds.report),
            "X": _put(arrays, f"data/{i}/X", ds.X),
            "labels": _put(arrays, f"data/{i}/labels", ds.labels),
            "images": _put(arrays, f"data/{i}/images", ds.images),
        })
    runs = []
    for run in session.runs.values():
        prefix = f"run/{run.id}"
        entry = {
            "id": run.id, "algorithm_id": run.algorithm_id, "algorithm_name": run.algorithm_name,
            "kind": run.kind, "params": _jsonable(run.params), "dataset_name": run.dataset_name,
            # an unfinished run cannot be resumed: it is saved as cancelled
            "status": run.status if run.status in FINISHED_STATUSES else CANCELLED,
            "error": run.error if run.status in FINISHED_STATUSES else "Unfinished when the project was saved.",
            "error_detail": run.error_detail, "source_run": run.source_run,
            "summary": _jsonable(run.summary), "timings": _jsonable(run.timings),
            "meta": _jsonable(run.meta),
            "embedding": _put(arrays, f"{prefix}/embedding", run.embedding),
            "labels": _put(arrays, f"{prefix}/labels", run.labels),
            "rows": _put(arrays, f"{prefix}/rows", run.rows),
            "model": None, "model_error": "", "extensions": [],
        }
        if run.estimator is not None and getattr(run.estimator, "is_fitted", False):
            try:
                model_arrays, model_meta = pack_estimator(run.estimator)
            except ManifoldStudioError as exc:
                entry["model_error"] = str(exc)
            else:
                for key, value in model_arrays.items():
                    arrays[f"{prefix}/model/{key}"] = value
                entry["model"] = model_meta
        for j, ext in enumerate(run.extensions):
            entry["extensions"].append({
                "name": ext.name, "dataset_name": ext.dataset_name, "time_s": ext.time_s,
                "created": ext.created,
                "values": _put(arrays, f"{prefix}/ext/{j}/values", ext.values),
                "rows": _put(arrays, f"{prefix}/ext/{j}/rows", ext.rows),
            })
        runs.append(entry)
    meta = {
        "format": FORMAT, "format_version": FORMAT_VERSION, "library_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "datasets": datasets, "current_dataset": session.current_dataset_name,
        "runs": runs, "current_run": session.current_run_id,
        "history": [{"time": e.time, "level": e.level, "message": e.message, "run_id": e.run_id,
                     "dataset": e.dataset} for e in session.history],
        "view_settings": _jsonable(view_settings or {}),
        "analyses": {},
    }
    for key, (document, named) in (analyses or {}).items():
        meta["analyses"][key] = {"document": _jsonable(document),
                                 "arrays": {n: _put(arrays, f"analysis/{key}/{n}", a) for n, a in named.items()}}
    arrays[META_KEY] = np.array(json.dumps(meta))
    atomic_savez(path, arrays)
    return path


def load_project(path, host=None) -> tuple[Session, dict]:
    """``(session, view_settings)`` read from a project file written by :func:`save_project`."""
    contents = read_project(path, host)
    session = contents.session
    session.log(f"Opened project {contents.path.name}: {len(session.datasets)} data set(s), "
                f"{len(session.runs)} run(s)")
    for problem in contents.problems:
        session.log(problem, "warning")
    return session, contents.view_settings


def read_project(path, host=None) -> ProjectContents:
    """Read and check a whole project file into a new, detached session. Pure: safe on a
    worker thread; raises :class:`ModelFileError` with the file name when it is unusable."""
    path = Path(path)
    with open_npz(path, "project", f"a {SUFFIX} file saved by Manifold Studio") as npz:
        meta = read_document(npz, path, META_KEY, FORMAT, FORMAT_VERSION, "project")
        arrays = read_arrays(npz, path, "")

    def get(key):
        return None if key is None else arrays[key]

    session = Session(host)
    try:
        for d in meta["datasets"]:
            ds = Dataset(d["name"], get(d["X"]), get(d.get("labels")), d.get("feature_names"),
                         d.get("source", ""), d.get("label_name"), list(d.get("report") or []),
                         get(d.get("images")))
            session.datasets[ds.name] = ds
        session.current_dataset_name = meta.get("current_dataset")
        if session.current_dataset_name not in session.datasets:
            session.current_dataset_name = next(iter(session.datasets), None)
        session.history = [LogEntry(h["time"], h["level"], h["message"], "", h.get("run_id"),
                                    h.get("dataset")) for h in meta.get("history", [])]
        problems = []
        for r in meta["runs"]:
            run = Run(r["id"], r["algorithm_id"], dict(r["params"]), r["dataset_name"], kind=r["kind"],
                      algorithm_name=r.get("algorithm_name", ""), status=r["status"],
                      error=r.get("error", ""), error_detail=r.get("error_detail", ""),
                      rows=get(r.get("rows")), source_run=r.get("source_run"),
                      embedding=get(r.get("embedding")), labels=get(r.get("labels")),
                      summary=dict(r.get("summary") or {}), timings=dict(r.get("timings") or {}),
                      meta=dict(r.get("meta") or {}))
            for e in r.get("extensions", []):
                run.extensions.append(Extension(e["name"], e.get("dataset_name"), get(e["values"]),
                                                get(e.get("rows")), e.get("time_s", 0.0),
                                                e.get("created", time.time())))
            if r.get("model"):
                prefix = f"run/{run.id}/model/"
                model_arrays = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
                try:
                    run.estimator = unpack_estimator(r["model"], model_arrays,
                                                     f"{path.name} (run #{run.id})")
                except ManifoldStudioError as exc:
                    problems.append(f"Run #{run.id} ({run.algorithm_id}): its results are kept but its "
                                    f"model cannot be restored: {exc}")
            session.runs[run.id] = run
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{path.name}: the project is incomplete or damaged "
                             f"({type(exc).__name__}: {exc}).") from None
    session._ids = itertools.count(max(session.runs, default=0) + 1)
    current = meta.get("current_run")
    session.current_run_id = current if current in session.runs else None
    analyses = {}
    try:
        for key, entry in (meta.get("analyses") or {}).items():
            analyses[key] = (dict(entry["document"]), {n: arrays[k] for n, k in entry["arrays"].items()})
    except (KeyError, TypeError, AttributeError) as exc:
        problems.append(f"The saved analyses of {path.name} are damaged and were left out ({exc}).")
        analyses = {}
    return ProjectContents(path, session, dict(meta.get("view_settings") or {}), problems, analyses)


def load_project_into(session: Session, path) -> dict:
    """Replace the contents of a live ``session`` with a project file's; returns its view
    settings. If the file cannot be read, the session is left untouched."""
    return apply_project(session, read_project(path, session.host))


def apply_project(session: Session, contents: ProjectContents) -> dict:
    """Replace the contents of a live ``session`` (observed by the GUI) with ``contents``,
    notifying observers of every removal and addition. Returns the view settings."""
    running = [r.id for r in session.runs.values() if not r.finished]
    if running:
        raise ManifoldStudioError(f"Run(s) {', '.join(f'#{i}' for i in running)} still running: "
                                  "cancel them before opening a project.")
    loaded = contents.session
    for run_id in list(session.runs):
        session.remove_run(run_id)
    for name in list(session.datasets):
        session.remove_dataset(name)
    for ds in loaded.datasets.values():
        session.add_dataset(ds, replace=True, make_current=False)
    session.set_current_dataset(loaded.current_dataset_name)
    for run in loaded.runs.values():
        session.add_run(run)
    session.set_current_run(loaded.current_run_id)
    session.log(f"Opened project {contents.path.name}: {len(loaded.datasets)} data set(s), "
                f"{len(loaded.runs)} run(s)")
    for problem in contents.problems:
        session.log(problem, "warning")
    return contents.view_settings
