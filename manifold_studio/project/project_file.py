"""Project files: a whole session — data sets, runs with their results and fitted models,
extensions, history — and the view settings, in one file, without pickle.

The file is a compressed ``.npz`` (a zip of ``.npy`` arrays) holding one JSON document
(``__manifold_studio_project__``) and the arrays it refers to:

- ``data/<i>/X``, ``data/<i>/labels``, ``data/<i>/images``, ``data/<i>/row_ids`` for the i-th data
  set, and (format 2) ``data/<i>/table/...`` for the typed table it was read from, with its column
  roles and meta columns (:mod:`manifold_studio.files.project_tables`); its document also names
  the file it was read from with its size and SHA-256 (:mod:`manifold_studio.fileio.source_file`).
  A format 1 file (without them) still opens;
- ``run/<id>/embedding``, ``run/<id>/labels``, ``run/<id>/rows`` for a run's results, and
  ``run/<id>/cut_labels`` for the dendrogram cut the user chose (``meta["cut"]`` describes it);
- ``run/<id>/model/<attribute>`` for its fitted model (see :func:`model_io.pack_estimator`);
- ``run/<id>/ext/<j>/values`` and ``run/<id>/ext/<j>/rows`` for its extensions;
- ``analysis/<key>/<name>`` for the arrays of an analysis result saved with the project (a
  classifier run's evaluation, a Test & Score comparison: ``analyses=`` of :func:`save_project`,
  records of :mod:`manifold_studio.project.analysis_records`).

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
import scipy.sparse as sp

from manifold_studio import __version__
from manifold_studio.data import MISSING_POLICIES, Dataset
from manifold_studio.errors import DataError, ManifoldStudioError, error_message
from manifold_studio.fileio.bounded import out_of_memory
from manifold_studio.files.form_values import form_values_field, read_form_values
from manifold_studio.files.model_file import (
    ModelFileError,
    _jsonable,
    atomic_savez,
    check_member_names,
    open_npz,
    pack_estimator,
    read_arrays,
    read_document,
    short_text,
    unpack_estimator,
)
from manifold_studio.project.project_state import chain_document, read_chain, read_view_state, view_state_document
from manifold_studio.files.project_tables import pack_table, table_problem, unpack_table
from manifold_studio.project.project_parts import read_analyses, read_report
from manifold_studio.files.schemas import PROJECT, short
from manifold_studio.fileio.source_file import with_digest
from manifold_studio.session.model import Session
from manifold_studio.session.records import (
    CANCELLED,
    FAILED,
    FINISHED_STATUSES,
    Extension,
    LogEntry,
    Run,
)

FORMAT = "manifold-studio-project"
#: 2: data sets keep their table (column roles, meta columns), row ids and source file
FORMAT_VERSION = 2
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
    form_values: dict = field(default_factory=dict)   #: the forms' values per method (files/form_values.py)


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


def _put_matrix(arrays: dict, key: str, X) -> dict:
    """The document fields of a data set's X: a dense array under ``key``; a sparse one as its
    CSR parts (``key/data``, ``key/indices``, ``key/indptr``) with ``X_sparse_shape`` [n, d]."""
    if getattr(X, "format", None) != "csr":
        return {"X": _put(arrays, key, X)}
    for part in ("data", "indices", "indptr"):
        arrays[f"{key}/{part}"] = np.asarray(getattr(X, part))
    return {"X": key, "X_sparse_shape": [int(X.shape[0]), int(X.shape[1])]}


def save_project(session: Session, path, view_settings: dict | None = None,
                 analyses: dict | None = None, form_values: dict | None = None) -> Path:
    """Write ``session`` (and the GUI's ``view_settings``) to ``path``; returns the path.

    ``analyses``: results kept with the project, ``{key: (document, {name: array})}`` (a key
    is a plain name such as ``evaluation/3``; the document must be JSON-able). ``form_values``:
    the settings forms' values per method (:func:`form_values_field`)."""

    path = Path(path)
    arrays: dict[str, np.ndarray] = {}
    datasets = []
    for i, ds in enumerate(session.datasets.values()):
        ds.source_file = with_digest(ds.source_file)  # computed once, while the file is the one read
        datasets.append({
            "name": ds.name, "source": ds.source, "label_name": ds.label_name,
            "feature_names": ds.feature_names, "report": list(ds.report),
            "load_options": _jsonable(ds.load_options),
            **_put_matrix(arrays, f"data/{i}/X", ds.X),
            "labels": _put(arrays, f"data/{i}/labels", ds.labels),
            "images": _put(arrays, f"data/{i}/images", ds.images),
            # format 2: the rows, the table with its roles, and which file it was read from
            "row_ids": _put(arrays, f"data/{i}/row_ids", ds.row_ids),
            "missing": ds.missing, "source_file": _jsonable(ds.source_file),
            "table": None if ds.table is None else
            pack_table(ds.table, f"data/{i}/table", lambda key, a: _put(arrays, key, a)),
            "table_rows": _put(arrays, f"data/{i}/table_rows", ds.table_rows),
            "table_scope": _put(arrays, f"data/{i}/table_scope", ds.table_scope),
            **({"distance_matrix": True} if ds.distance_matrix else {}), **({} if ds.table_features else {"table_features": False}),
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
            "cut_labels": _put(arrays, f"{prefix}/cut_labels", run.cut_labels),
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
    report_items, report_arrays = session.report.to_document()
    arrays.update(report_arrays)
    meta = {
        "report": report_items,
        "format": FORMAT, "format_version": FORMAT_VERSION, "library_version": __version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "datasets": datasets, "current_dataset": session.current_dataset_name,
        "runs": runs, "current_run": session.current_run_id,
        "history": [{"time": e.time, "level": e.level, "message": e.message, "run_id": e.run_id,
                     "dataset": e.dataset} for e in session.history],
        "view_settings": _jsonable(view_settings or {}),
        "form_values": form_values_field(form_values),
        "analyses": {},
        **chain_document(session),
        **view_state_document(session, arrays),
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
    worker thread; raises :class:`ModelFileError` with the file name when it is unusable.

    The JSON document is validated against its declared schema (:data:`schemas.PROJECT`) and
    every array is read bounded before anything is built. A run whose results do not fit its
    data set (an embedding of 3 rows for 150 data rows) is kept, marked failed as damaged, and
    named in ``problems``; so is an extension that does not fit."""
    path = Path(path)
    with open_npz(path, "project", f"a {SUFFIX} file saved by Manifold Studio") as npz:
        meta = read_document(npz, path, META_KEY, FORMAT, FORMAT_VERSION, "project", PROJECT)
        try:
            return _ProjectReader(npz, path, host).read(meta)
        except MemoryError as exc:
            raise ModelFileError(str(out_of_memory(path.name, None, exc))) from None


class _ProjectReader:
    """Builds a detached session from a validated project document and its open archive."""

    def __init__(self, npz, path: Path, host):
        self.npz, self.path, self.host = npz, path, host
        self.problems: list[str] = []

    def matrix(self, d: dict, field: str):
        """A data set's X: its array, or the sparse matrix rebuilt from its CSR parts (indices
        checked against the shape before any sparse routine uses them)."""
        shape = d.get("X_sparse_shape")
        if shape is None:
            return self.array(d["X"], field)
        key = d["X"]
        parts = [self.array(f"{key}/{p}", f"{field} ({p})") for p in ("data", "indices", "indptr")]
        try:
            if len(shape) != 2:
                raise ValueError(f"the shape {shape} has {len(shape)} entries")
            X = sp.csr_array(tuple(parts), shape=(int(shape[0]), int(shape[1])))
            X.check_format(full_check=True)
        except (ValueError, TypeError, IndexError) as exc:
            raise ModelFileError(f"{self.path.name}: {field} is a damaged sparse matrix: {exc}") from None
        return X

    def array(self, key, field: str):
        if key is None:
            return None
        if key not in self.npz.files:
            raise ModelFileError(f"{self.path.name}: field '{field}' refers to member '{short_text(key)}', "
                                 "which the file does not hold.")
        return read_arrays(self.npz, self.path, "", [key])[key]

    def read(self, meta: dict) -> ProjectContents:
        session = Session(self.host)
        for i, d in enumerate(meta["datasets"]):
            field = f"datasets[{i}]"
            try:
                ds = Dataset(d["name"], self.matrix(d, f"{field}.X"),
                             self.array(d.get("labels"), f"{field}.labels"), d.get("feature_names"),
                             d.get("source", ""), d.get("label_name"), list(d.get("report") or []),
                             self.array(d.get("images"), f"{field}.images"),
                             distance_matrix=bool(d.get("distance_matrix")), table_features=d.get("table_features") is not False)
            except ModelFileError:
                raise
            except DataError as exc:
                raise ModelFileError(f"{self.path.name}: {field} ('{short_text(d['name'])}') is damaged: "
                                     f"{exc}") from None
            ds.load_options = dict(d.get("load_options") or {})
            self.dataset_rows(ds, d, field)
            if ds.images is not None and ds.images.shape[:1] != (ds.n_samples,):
                ds.images = None
                self.problems.append(f"Data set '{ds.name}': its images do not match its "
                                     f"{ds.n_samples:,} rows and were dropped.")
            session.datasets[ds.name] = ds
        session.current_dataset_name = meta.get("current_dataset")
        if session.current_dataset_name not in session.datasets:
            session.current_dataset_name = next(iter(session.datasets), None)
        session.history = [LogEntry(h["time"], h["level"], h["message"], "", h.get("run_id"),
                                    h.get("dataset")) for h in meta.get("history", [])]
        for i, r in enumerate(meta["runs"]):
            run = self.run(r, f"runs[{i}]", session)
            if run.id in session.runs:
                raise ModelFileError(f"{self.path.name}: field 'runs[{i}].id': run #{run.id} appears twice.")
            session.runs[run.id] = run
        session._ids = itertools.count(max(session.runs, default=0) + 1)
        session.report = read_report(meta.get("report") or [], self.array, self.problems)
        current = meta.get("current_run")
        session.current_run_id = current if current in session.runs else None
        read_chain(session, meta, self.problems, self.path.name)
        read_view_state(session, meta, self.array, self.problems, self.path.name)
        analyses = read_analyses(meta.get("analyses") or {}, self.array, self.problems)
        return ProjectContents(self.path, session, dict(meta.get("view_settings") or {}), self.problems, analyses,
                               read_form_values(meta.get("form_values"), self.problems))

    def dataset_rows(self, ds: Dataset, d: dict, field: str) -> None:
        """Format 2's row ids, table (roles, meta columns) and source file of data set ``ds``;
        a part that does not fit the data set is dropped and named in ``problems``."""
        ds.source_file = d.get("source_file")
        if d.get("missing") in MISSING_POLICIES:
            ds.missing = d["missing"]
        ids = self.array(d.get("row_ids"), f"{field}.row_ids")
        if ids is not None:
            if ids.shape == (ds.n_samples,):
                ds.row_ids = ids
            else:
                self.problems.append(f"Data set '{ds.name}': its {len(ids):,} row ids do not match its "
                                     f"{ds.n_samples:,} rows; they were replaced by row numbers.")
        if d.get("table") is None:
            return
        try:
            table = unpack_table(d["table"], self.array, f"{field}.table")
            ds.table_rows = self.array(d.get("table_rows"), f"{field}.table_rows")
            ds.table_scope = self.array(d.get("table_scope"), f"{field}.table_scope")
            problem = table_problem(table, ds)
        except (DataError, ValueError, TypeError, KeyError) as exc:
            problem = error_message(exc)
        if problem:
            ds.table_rows = ds.table_scope = None
            self.problems.append(f"Data set '{ds.name}': its table of columns is damaged ({problem}); it was "
                                 "dropped: the features and labels are kept, the column roles and meta columns "
                                 "are not.")
            return
        ds.table = table

    def run(self, r: dict, field: str, session: Session) -> Run:
        if r["status"] not in FINISHED_STATUSES:
            raise ModelFileError(f"{self.path.name}: field '{field}.status' must be one of "
                                 f"{', '.join(FINISHED_STATUSES)}, not {short(r['status'])}.")
        run = Run(r["id"], r["algorithm_id"], dict(r["params"]), r["dataset_name"], kind=r["kind"],
                  algorithm_name=r.get("algorithm_name", ""), status=r["status"],
                  error=r.get("error", ""), error_detail=r.get("error_detail", ""),
                  rows=self.array(r.get("rows"), f"{field}.rows"), source_run=r.get("source_run"),
                  embedding=self.array(r.get("embedding"), f"{field}.embedding"),
                  labels=self.array(r.get("labels"), f"{field}.labels"),
                  summary=dict(r.get("summary") or {}), timings=dict(r.get("timings") or {}),
                  meta=dict(r.get("meta") or {}))
        ds = session.datasets.get(run.dataset_name)
        damage = result_mismatch(run, ds)
        if damage:
            self.damaged(run, damage)
            return run
        self.cut(run, self.array(r.get("cut_labels"), f"{field}.cut_labels"))
        for j, e in enumerate(r.get("extensions", [])):
            ext = Extension(e["name"], e.get("dataset_name"), self.array(e["values"], f"{field}.extensions[{j}].values"),
                            self.array(e.get("rows"), f"{field}.extensions[{j}].rows"), e.get("time_s", 0.0),
                            e.get("created", time.time()))
            problem = rows_mismatch("extension", ext.values, ext.rows, session.datasets.get(ext.dataset_name))
            if problem:
                self.problems.append(f"Run #{run.id} ({run.algorithm_id}): its extension '{short_text(ext.name)}' is "
                                     f"damaged and was dropped: {problem}.")
                continue
            run.extensions.append(ext)
        if r.get("model"):
            prefix = f"run/{run.id}/model/"
            where = f"{self.path.name} (run #{run.id})"
            try:
                problem = model_mismatch(run, r["model"], None)
                if problem:
                    raise ModelFileError(f"{where}: {problem}.")
                names = [k[len(prefix):] for k in self.npz.files if k.startswith(prefix)]
                check_member_names(r["model"], names, where)  # a model, or a pipeline step by step
                run.estimator = unpack_estimator(r["model"], read_arrays(self.npz, self.path, prefix), where)
                problem = model_mismatch(run, r["model"], ds)
                if problem:
                    run.estimator = None
                    raise ModelFileError(f"{where}: {problem}.")
            except ManifoldStudioError as exc:
                self.problems.append(f"Run #{run.id} ({run.algorithm_id}): its results are kept but its "
                                     f"model cannot be restored: {exc}")
        return run

    def cut(self, run: Run, labels) -> None:
        """Restore the dendrogram cut the user chose (``run.cut_labels``, ``meta["cut"]``); one
        that does not match the run's labels is dropped with a note."""
        if labels is None:
            run.meta.pop("cut", None)
            return
        if run.labels is None or labels.shape != run.labels.shape:
            run.meta.pop("cut", None)
            self.problems.append(f"Run #{run.id} ({run.algorithm_id}): its dendrogram cut has shape {labels.shape}, "
                                 f"not that of its labels ({None if run.labels is None else run.labels.shape}); "
                                 "it was dropped and the run's own clusters are shown.")
            return
        run.cut_labels = labels

    def damaged(self, run: Run, damage: str) -> None:
        run.status, run.error = FAILED, f"Damaged in {self.path.name}: {damage}; its results were dropped."
        run.embedding = run.labels = None
        self.problems.append(f"Run #{run.id} ({run.algorithm_id}) is damaged: {damage}; it is marked failed "
                             "and its results were dropped.")


def rows_mismatch(what: str, values, rows, ds) -> str:
    """Why ``values`` (one per row of ``ds``, or per index in ``rows``) do not fit ``ds``, or ''.
    ``what`` names them in messages ("embedding", "labels", "extension")."""
    if rows is not None:
        if rows.ndim != 1 or rows.dtype.kind not in "iu":
            return f"its rows are not a list of row numbers (shape {rows.shape}, type {rows.dtype})"
        if ds is not None and rows.size and (rows.min() < 0 or rows.max() >= ds.n_samples):
            return f"its rows go beyond the {ds.n_samples:,} rows of data set '{short_text(ds.name)}'"
    if values is None:
        return ""
    has = "have" if what == "labels" else "has"
    if values.ndim == 0:
        return f"its {what} {has} a single value"
    expected = len(rows) if rows is not None else ds.n_samples if ds is not None else None
    if expected is not None and values.shape[0] != expected:
        of = (f"the {expected:,} rows it was fitted on" if rows is not None
              else f"the {expected:,} rows of data set '{short_text(ds.name)}'")
        return f"its {what} {has} {values.shape[0]:,} rows for {of}"
    return ""


def result_mismatch(run: Run, ds) -> str:
    """Why a run's results do not fit its data set, or ''."""
    for what, values in (("embedding", run.embedding), ("labels", run.labels)):
        problem = rows_mismatch(what, values, run.rows, ds)
        if problem:
            return problem
    emb = run.embedding
    if emb is not None and (emb.ndim != 2 or emb.shape[1] == 0 or emb.dtype.kind not in "biuf"):
        return f"its embedding is {emb.dtype} of shape {emb.shape}, not numbers in (rows, columns)"
    if run.labels is not None and run.labels.ndim != 1:
        return f"its labels have shape {run.labels.shape}, not one value per row"
    return ""


def model_mismatch(run: Run, model_meta: dict, ds) -> str:
    """Why a run's saved model cannot belong to it, or ''. A run with a preparation chain
    keeps a pipeline whose last step is the run's algorithm."""
    algorithm = model_meta.get("algorithm")
    if algorithm == "pipeline" and run.meta.get("chain"):
        steps = model_meta.get("steps")
        last = steps[-1] if isinstance(steps, list) and steps and isinstance(steps[-1], dict) else {}
        algorithm = last.get("algorithm")
    if algorithm != run.algorithm_id:
        return (f"its model is of algorithm '{short_text(algorithm)}', not the run's "
                f"'{short_text(run.algorithm_id)}'")
    est = run.estimator
    if est is not None and ds is not None and run.source_run is None and est.n_features_in_ != ds.n_features:
        return (f"its model takes {est.n_features_in_} features, but data set '{short_text(ds.name)}' has "
                f"{ds.n_features}")
    return ""


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
    session.restore_report(loaded.report.items)
    session.restore_view_settings(loaded.view_settings())
    session.restore_selections(loaded.selections(), loaded.saved_selections())
    session.restore_chain(loaded.chain)
    session.log(f"Opened project {contents.path.name}: {len(loaded.datasets)} data set(s), "
                f"{len(loaded.runs)} run(s)")
    for problem in contents.problems:
        session.log(problem, "warning")
    return contents.view_settings
