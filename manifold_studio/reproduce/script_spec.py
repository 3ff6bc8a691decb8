"""The plain-data description of a session that an exported script reproduces (Qt-free).

:func:`session_spec` turns a session (and its saved Test & Score comparison) into one JSON-able
dict: the data sets to load (source, size and SHA-256, loader options, roles), the runs to refit
(algorithm, parameters, preparation chain, rows, outputs, evaluation, dendrogram cut) and the
comparison to repeat. :mod:`manifold_studio.reproduce.script_export` writes it into the script as
one JSON literal that the script's fixed code reads: no name, key, path or value from the data
or the project ever becomes code.

Everything is checked before it goes in: an algorithm or preparation step that is not installed,
a parameter the algorithm (or step) does not declare and a loader option the loader does not
declare are refused with :class:`~manifold_studio.errors.ManifoldStudioError` naming them.
Floats that JSON cannot hold (NaN, ±inf) are written tagged, ``{"$float": "nan"}``, and the
script decodes them back with :func:`decode_floats` (the same code, copied into the script).
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from manifold_studio.analysis.run_cut import cut_arguments
from manifold_studio.errors import ManifoldStudioError, UnknownAlgorithmError
from manifold_studio.fileio.source_file import with_digest
from manifold_studio.analysis.chain import non_default_params, pipeline_chain
from manifold_studio.session.records import DONE
from manifold_studio.distance_matrix import DistanceMatrixLoader

__all__ = ["NothingToExport", "session_spec", "spec_json", "script_spec", "decode_floats", "run_output_name",
           "run_chain", "FLOAT_TAG"]

#: the key of a tagged float (NaN, inf, -inf) in the script's JSON
FLOAT_TAG = "$float"
_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


class NothingToExport(ManifoldStudioError):
    """The session has no finished run to reproduce."""


def _safe(text) -> str:
    return "".join(c if c.isascii() and (c.isalnum() or c in "-_") else "_" for c in str(text))


def run_output_name(run) -> str:
    """The file stem of a run's outputs: ``run3_isomap`` (ASCII letters, digits, ``-`` and ``_``
    only, whatever a tampered project put in the run's id or algorithm id: never a path)."""
    return f"run{_safe(run.id)}_{_safe(run.algorithm_id)}"


def run_chain(run) -> list[tuple[str, dict]]:
    """The run's preparation steps as ``[(step_id, params), ...]`` (empty: none)."""
    steps = run.meta.get("chain") if isinstance(run.meta, dict) else None
    if steps:
        return [(str(s[0]), dict(s[1] or {})) for s in steps]
    return pipeline_chain(run.estimator)


def plain(value, where: str):
    """``value`` as JSON data: numpy scalars and arrays as numbers and lists, tuples as lists,
    NaN and ±inf tagged. Anything else (an object, a non-text key) is refused naming ``where``."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {FLOAT_TAG: "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"}
    if isinstance(value, (list, tuple)):
        return [plain(v, where) for v in value]
    if isinstance(value, dict):
        bad = [k for k in value if not isinstance(k, str)]
        if bad:
            raise ManifoldStudioError(f"{where}: the key {bad[0]!r} is not text; the script cannot hold it.")
        return {k: plain(v, where) for k, v in value.items()}
    raise ManifoldStudioError(f"{where}: a value of type {type(value).__name__} cannot go into a script "
                              "(numbers, text, lists and dictionaries can).")


def decode_floats(obj: dict):
    """``json.loads`` object hook: a tagged float back to ``float('nan')`` / ``float('inf')``."""
    if len(obj) == 1 and obj.get(FLOAT_TAG) in _SPECIAL:
        return _SPECIAL[obj[FLOAT_TAG]]
    return obj


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=True, allow_nan=False)


def spec_json(spec: dict) -> list[str]:
    """The spec as the lines of one strict JSON text (no NaN token: those are tagged by
    :func:`plain`; only ASCII, so no line separator inside a line): one line per top-level
    field, and per data set, run and Test & Score learner."""
    out, keys = ["{"], list(spec)
    for i, key in enumerate(keys):
        value, comma = spec[key], "," if i < len(keys) - 1 else ""
        if isinstance(value, list) and value:
            out.append(f" {_dumps(key)}: [")
            out += [f"  {_dumps(v)}" + ("," if j < len(value) - 1 else "") for j, v in enumerate(value)]
            out.append(" ]" + comma)
        elif isinstance(value, dict) and isinstance(value.get("learners"), list):
            rest = {k: v for k, v in value.items() if k != "learners"}
            out.append(f" {_dumps(key)}: {_dumps(rest)[:-1]}, \"learners\": [")
            out += [f"  {_dumps(v)}" + ("," if j < len(value["learners"]) - 1 else "")
                    for j, v in enumerate(value["learners"])]
            out.append(" ]}" + comma)
        else:
            out.append(f" {_dumps(key)}: {_dumps(value)}{comma}")
    return out + ["}"]


def _declared(params: dict, declared, what: str) -> dict:
    """``params`` whose names all are among ``declared`` (Param constraints), else refused."""
    names = [p.name for p in declared]
    for key in params:
        if key not in names:
            raise ManifoldStudioError(f"{what}: unknown parameter {key!r}; allowed are "
                                      f"{', '.join(names) or 'none'}. The script is not written.")
    return plain(dict(params), what)


def _algorithm(host, algorithm_id, params: dict, chain, what: str) -> dict:
    """One estimator: algorithm id and parameters, and its preparation chain, all checked."""
    if not isinstance(algorithm_id, str):
        raise UnknownAlgorithmError(f"{what} names no installed algorithm (it is {algorithm_id!r}).")
    cls = host.algorithm_class(algorithm_id)
    steps = []
    for step_id, step_params in chain or ():
        step = host.preprocessor_class(str(step_id))
        kept = non_default_params(step_id, _declared(dict(step_params or {}), step.params,
                                                     f"{what}, preparation step {step_id!r}"), host)
        steps.append([step.id, kept])
    return {"algorithm": cls.id, "params": _declared(dict(params or {}), cls.params, f"{what} ({cls.id})"),
            "chain": steps}


def _loader_options(host, ds):
    """The options ``ds``'s loader (or sample) declares; None when no installed one reads it."""
    source = str(ds.source)
    try:
        if source.startswith("sample:"):
            return host.samples[source.split(":", 1)[1]].options
        loader = host.loader_for(source)
    except (KeyError, ManifoldStudioError):
        return None
    return DistanceMatrixLoader(loader).options if ds.distance_matrix else loader.options


def _load_options(declared, ds, options: dict) -> dict:
    names = [p.name for p in declared]
    for key in options:
        if key not in names:
            raise ManifoldStudioError(f"Data set {ds.name!r}: unknown load option {key!r}; its loader takes "
                                      f"{', '.join(names) or 'none'}. The script is not written.")
    return plain(options, f"Data set {ds.name!r}, load options")


def _dataset_spec(declared, ds, script_dir: Path | None) -> dict:
    opts = dict(getattr(ds, "load_options", None) or {})
    out = {"name": str(ds.name), "sample": None, "path": None, "size": None, "sha256": None,
           "distances": bool(ds.distance_matrix), "options": _load_options(declared, ds, opts), "roles": None,
           "label": None, "missing": None}
    if str(ds.source).startswith("sample:"):
        out["sample"] = str(ds.source)
    else:
        record = dict(with_digest(ds.source_file) or {})  # a session not saved yet: the digest now, if unchanged
        path = Path(record.get("path") or Path(ds.source).expanduser().resolve())
        shown = str(path)
        if script_dir is not None and path.is_relative_to(script_dir):
            shown = path.relative_to(script_dir).as_posix()
        out["path"] = shown
        if "size" in record:
            out["size"], out["sha256"] = int(record["size"]), record.get("sha256") or None
    table = getattr(ds, "table", None)
    several = table is not None and len(table.target_names) > 1 and ds.label_name
    if table is not None and (opts.get("roles") != table.roles or several):  # the roles as in the session
        out["roles"] = plain(dict(table.roles), f"Data set {ds.name!r}, roles")
        out["label"] = str(ds.label_name) if several else None
    if table is not None and ds.missing != opts.get("missing", "drop"):
        out["missing"] = str(ds.missing)
    return out


def _cut_spec(run, cls) -> dict | None:
    """The dendrogram cut of ``run`` for its estimator's ``cut`` method (None: none, or its
    algorithm cannot cut)."""
    return cut_arguments(run) if callable(getattr(cls, "cut", None)) else None


def _run_spec(session, run, index: dict, positions: dict, notes: list) -> dict | None:
    ds = session.datasets.get(run.dataset_name)
    what = f"Run #{run.id}"
    if ds is None or run.dataset_name not in index:
        why = "which the script cannot load" if ds is not None else "which is no longer in the session"
        notes.append(f"{what} was fitted on data set {run.dataset_name!r}, {why}: skipped.")
        return None
    if run.source_run is not None and run.source_run not in positions:
        notes.append(f"{what}: run #{run.source_run} it was fitted on is not in the script: skipped.")
        return None
    try:
        cls = session.host.algorithm_class(str(run.algorithm_id))
        spec = _algorithm(session.host, run.algorithm_id, run.refit_params, run_chain(run), what)
    except UnknownAlgorithmError as exc:  # a plugin not installed here: the run cannot be refitted
        notes.append(f"{what} cannot be refitted: {exc} Skipped.")
        return None
    rows = None
    if run.source_run is None and run.rows is not None:
        rows = [int(r) for r in np.asarray(run.rows).ravel()]
    unseeded = [k for k, v in run.refit_params.items() if v is None and k in ("random_state", "seed")]
    if unseeded:
        notes.append(f"{what}: {unseeded[0]}=None, so it was not seeded and its numbers may differ from the session's.")
    elif run.params.get("random_state", 0) is None:
        notes.append(f"{what}: random_state=None drew seed {run.refit_params['random_state']} in the session; "
                     "the script uses that seed.")
    cut = _cut_spec(run, cls)
    if run.cut_labels is not None and cut is None:
        notes.append(f"{what}: its clusters were changed in the session in a way the script cannot repeat; "
                     "the script writes the run's own clusters.")
    spec = {"id": int(run.id), **spec}
    spec.update({
        "output": run_output_name(run), "dataset": index[run.dataset_name],
        "source": positions.get(run.source_run) if run.source_run is not None else None, "rows": rows,
        "needs_labels": cls.kind == "classification" or bool(getattr(cls, "requires_labels", False)),
        "embedding": int(np.asarray(run.embedding).shape[1]) if run.embedding is not None else None,
        "labels": None if run.labels is None else "predict" if cls.kind == "classification" else "labels_",
        "cut": cut, "evaluation": None})
    evaluation = run.meta.get("evaluation") if isinstance(run.meta, dict) else None
    if isinstance(evaluation, dict) and evaluation.get("method"):
        opts = {"method": evaluation["method"], "random_state": evaluation.get("random_state", 0)}
        for key in ("n_splits", "test_fraction"):
            if key in evaluation:
                opts[key] = evaluation[key]
        spec["evaluation"] = plain(opts, f"{what}, evaluation")
    return spec


def _comparison_spec(session, doc: dict, index: dict, notes: list) -> dict | None:
    name, scheme = doc.get("dataset"), dict(doc.get("scheme") or {})
    learners = [d for d in doc.get("learners") or [] if isinstance(d, dict)]
    if name not in index:
        notes.append(f"Test & Score on data set {name!r}: the data set is not loaded by this script: skipped.")
        return None
    if scheme.get("cv") == "given" or not learners:
        notes.append("Test & Score was scored on folds given by hand (or has no learner), which the script "
                     "cannot repeat: skipped.")
        return None
    opts = {"cv": scheme.get("cv", 5), "repeats": int(scheme.get("repeats") or 1), "seed": scheme.get("seed", 0)}
    if scheme.get("holdout") is not None:
        opts = {"holdout": scheme["holdout"], "repeats": opts["repeats"], "seed": opts["seed"]}
    out = []
    for d in learners:
        what = f"Test & Score learner {str(d.get('name'))!r}"
        chain = [(str(s[0]), dict(s[1] or {})) for s in d.get("chain") or []]
        try:
            entry = _algorithm(session.host, d.get("algorithm"), dict(d.get("params") or {}), chain, what)
        except UnknownAlgorithmError as exc:
            notes.append(f"Test & Score cannot be repeated: {what}: {exc} Skipped.")
            return None
        entry["name"] = str(d.get("name"))
        out.append(entry)
    return {"dataset": index[name], "learners": out, "options": plain(opts, "Test & Score scheme")}


def session_spec(session, analyses: dict | None = None, script_dir=None, title: str = "") -> dict:
    """The plain-data spec of ``session``'s finished runs and its saved Test & Score comparison
    (``analyses["test_score"]``). ``script_dir``: the folder the script goes to (data files
    under it are named relative to it). Raises :class:`NothingToExport` when nothing has run and
    ManifoldStudioError for anything the script cannot hold safely (see the module docstring)."""
    script_dir = None if script_dir is None else Path(script_dir).expanduser().resolve()
    done = [r for r in session.runs.values() if r.status == DONE]
    comparison = (analyses or {}).get("test_score")
    comparison = comparison[0] if isinstance(comparison, tuple) and isinstance(comparison[0], dict) else None
    if not done and comparison is None:
        raise NothingToExport("Nothing to export as a script: no run has finished yet. Run an algorithm first.")
    used = {r.dataset_name for r in done} | ({comparison.get("dataset")} if comparison else set())
    notes: list[str] = []
    datasets, index = [], {}
    for ds in (d for d in session.datasets.values() if d.name in used):
        if not ds.source:
            notes.append(f"Data set {ds.name!r} was made in the session (not loaded from a file or a sample), "
                         "so the script cannot load it; the runs on it are left out.")
            continue
        declared = _loader_options(session.host, ds)
        if declared is None:
            notes.append(f"Data set {ds.name!r}: no installed loader reads its source {str(ds.source)!r}; the runs "
                         "on it are left out.")
            continue
        index[ds.name] = len(datasets)
        datasets.append(_dataset_spec(declared, ds, script_dir))
    runs, positions = [], {}
    for run in sorted(done, key=lambda r: r.id):
        spec = _run_spec(session, run, index, positions, notes)
        if spec is not None:
            positions[run.id] = len(runs)
            runs.append(spec)
    test_score = _comparison_spec(session, comparison, index, notes) if comparison is not None else None
    return {"format": 1, "title": str(title), "notes": notes, "datasets": datasets, "runs": runs,
            "test_score": test_score}


def script_spec(text: str) -> dict:
    """The spec held by an exported script's ``SPEC = json.loads(...)`` line, read without running
    the script (``ast.literal_eval`` of the one literal)."""
    import ast

    for node in ast.parse(text).body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == ["SPEC"]:
            return json.loads(ast.literal_eval(node.value.args[0]), object_hook=decode_floats)
    raise ManifoldStudioError("This is not a script exported by Manifold Studio: it has no SPEC.")
