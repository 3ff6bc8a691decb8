"""Export a session as a Python script that reproduces it with the public API (Qt-free).

::

    from manifold_studio.reproduce.script_export import session_script, write_script
    text = session_script(session)            # or write_script("project.msproj", "analysis.py")

The script is generated from data, never from text pasted into code. What the session did is
one plain-data spec (:func:`manifold_studio.reproduce.script_spec.session_spec`): the data sets,
the runs, the Test & Score comparison. The script holds it as one JSON literal,
``SPEC = json.loads((<repr of each line of the JSON text>), object_hook=decode_floats)`` (one
string literal, split in lines: one per data set and per run), followed by code that
is the same for every session: helper functions, then one line per data set and per run that
only indexes ``SPEC`` by position (``data1 = load(SPEC['datasets'][0])``,
``run3 = fit_run(SPEC['runs'][2], data1)``). No comment or docstring holds a name, a key or a
path; notes about what was left out are in ``SPEC["notes"]`` and printed when the script runs.

The script loads each data set from its source with the options it was loaded with
(``ms.load_data(source, **options)``; a data file under the script's folder is named relative to
the script, any other by its absolute path, and the script checks its size and SHA-256 against
those the project recorded), gives its columns the roles they had in the session, and refits
every finished run in order: its algorithm and parameters (``ms.get_algorithm``), behind its
preparation chain bound to the data set's named columns (as the session fits it, so steps that
name columns work), on the same rows or on the map of the run it was fitted on. A dendrogram cut
(``run.cut_labels`` with ``run.meta["cut"]``) is repeated with the estimator's ``cut`` method.
Recorded evaluations are repeated with :func:`manifold_studio.evaluation.evaluate`, and a saved
Test & Score comparison with :func:`manifold_studio.evaluation.compare_learners`. Outputs are CSV
files named after the run (``run3_isomap.csv``), evaluations ``run5_svm_evaluation.json``, the
comparison ``test_score.json``.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path

from manifold_studio.reproduce.script_spec import (
    FLOAT_TAG,
    NothingToExport,
    run_chain,
    run_output_name,
    session_spec,
    spec_json,
)
from manifold_studio.fileio.atomic import atomic_write
from manifold_studio.fileio.export_paths import check_output_path
from manifold_studio.project.project_file import read_project

__all__ = ["session_script", "write_script", "script_text", "run_output_name", "run_chain", "NothingToExport"]

#: the script's fixed code up to SPEC (``{stamp}`` and ``{tag}`` are filled in by script_text)
_HEADER = '''"""Reproduces a Manifold Studio session.

Exported by Manifold Studio on {stamp}. Run it with Python where manifold-studio is
installed: python analysis.py [OUTPUT_FOLDER]  (default: ./results). Every output is a CSV
file named after the run that made it; evaluations are JSON files.

Everything this analysis is made of (data files, column roles, algorithms, parameters, seeds)
is in SPEC below, one JSON document; the code after it only reads SPEC.
"""
import csv
import hashlib
import json
import sys
from pathlib import Path

import numpy as np

import manifold_studio as ms
from manifold_studio.analysis.chain import chained_estimator

HERE = Path(__file__).resolve().parent  # data paths in SPEC are relative to this script's folder
OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "results")
OUT.mkdir(parents=True, exist_ok=True)
SPECIAL_FLOATS = {"nan": float("nan"), "inf": float("inf"), "-inf": float("-inf")}


def decode_floats(obj):
    """NaN and infinities, which JSON cannot hold, are written tagged: {{tag}: "nan"}."""
    if len(obj) == 1 and obj.get({tag}) in SPECIAL_FLOATS:
        return SPECIAL_FLOATS[obj[{tag}]]
    return obj
'''

#: the script's fixed code after SPEC
_HELPERS = '''

def data_file(path, size=None, sha256=None):
    """The data file (relative to this script's folder, or absolute); stops if it is missing and
    warns if it is not the file the analysis read (another size or SHA-256)."""
    found = HERE / path
    shown = str(found) if str(found).isprintable() else repr(str(found))  # no control characters to the terminal
    if not found.exists():
        sys.exit(f"The data file {shown} is not there: put it back, or edit its path in SPEC.")
    if size is not None and found.is_file():
        digest = hashlib.sha256()
        with open(found, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
        if found.stat().st_size != size or (sha256 and digest.hexdigest() != sha256):
            print(f"Warning: {shown} is not the file the analysis read (it was {size:,} bytes, SHA-256 "
                  f"{sha256 or 'not recorded'}): the numbers may differ.", file=sys.stderr)
    return str(found)


def load(d):
    """A data set of SPEC: loaded with its options, its columns given the roles they had."""
    source = d["sample"] if d["sample"] else data_file(d["path"], d["size"], d["sha256"])
    data = (ms.load_distance_matrix if d["distances"] else ms.load_data)(source, **d["options"])
    if d["roles"] is not None and data.table is not None:
        data.set_roles({name: role for name, role in d["roles"].items() if name in data.table})
        label = d["label"]
        if label is not None and label in data.table and data.label_name != label:
            data.set_target(label)
    if d["missing"] is not None and data.table is not None:
        data.set_missing(d["missing"])
    return data


def estimator(a, data):
    """An algorithm of SPEC with its parameters, behind its preparation chain bound to the
    data set's named columns."""
    algo = ms.get_algorithm(a["algorithm"], **a["params"])
    if not a["chain"]:
        return algo
    return chained_estimator([(step, params) for step, params in a["chain"]], algo, data)


def write_csv(name, header, columns):
    """Write columns (arrays of equal length) as one CSV file with a header row."""
    with open(OUT / name, "w", newline="", encoding="utf-8") as f:
        writer = csv.writer(f)
        writer.writerow(header)
        writer.writerows(zip(*[np.asarray(c).tolist() for c in columns]))


class Fitted:
    """A refitted run: its model and the rows of the data set it was fitted on (None: all)."""

    def __init__(self, model, rows):
        self.model, self.rows = model, rows


def fit_run(r, data, source=None):
    """Refit a run of SPEC on data (or on the map of the source run) and write its outputs."""
    if source is not None:
        rows, X = source.rows, np.asarray(source.model.embedding_)
    elif r["rows"] is not None:
        rows = np.asarray(r["rows"], dtype=np.intp)
        X = data.X[rows]
    else:
        rows, X = None, data.X
    y = None
    if r["needs_labels"]:
        y = data.labels if rows is None else data.labels[rows]
    model = estimator(r, data).fit(X, y)
    header, columns = [], []
    if r["embedding"] is not None:
        embedding = np.asarray(model.embedding_)
        header += [f"{r['algorithm']}_{j + 1}" for j in range(r["embedding"])]
        columns += [embedding[:, j] for j in range(r["embedding"])]
    if r["labels"] is not None:
        labels = model.predict(X) if r["labels"] == "predict" else model.labels_
        if r["cut"] is not None:  # the dendrogram cut chosen in the session, without a refit
            labels = (getattr(model, "final", None) or model).cut(**r["cut"])
        header.append("label")
        columns.append(labels)
    if columns:
        write_csv(r["output"] + ".csv", header, columns)
    if r["evaluation"] is not None:
        from manifold_studio.evaluation import evaluate

        result = evaluate(lambda: estimator(r, data), X, y, **r["evaluation"])
        print(f"run #{r['id']}: " + result.summary())
        with open(OUT / (r["output"] + "_evaluation.json"), "w", encoding="utf-8") as f:
            json.dump({"summary": result.summary(), "mean_accuracy": result.mean_accuracy,
                       "fold_accuracy": result.fold_accuracy.tolist(),
                       "confusion": result.confusion.tolist(), **result.params}, f, indent=1)
    return Fitted(model, rows)


def test_and_score(t, data):
    """Test & Score of SPEC: every learner is its preparation chain and its classifier, fitted on
    each training part only; the figures go to test_score.json."""
    from manifold_studio.evaluation import compare_learners

    learners = {a["name"]: estimator(a, data) for a in t["learners"]}
    comparison = compare_learners(learners, data, **t["options"])
    print(comparison.format_table())
    with open(OUT / "test_score.json", "w", encoding="utf-8") as f:
        json.dump({"preparation": comparison.preparation(), "scheme": comparison.scheme,
                   "folds": [[int(r), te.tolist()] for r, te in comparison.folds],
                   "learners": {r.name: {"fold_metrics": {m: v.tolist() for m, v in r.fold_metrics.items()},
                                         "predictions": r.predictions.tolist(),
                                         "pooled_auc": comparison.pooled_auc(r.name)}
                                for r in comparison.learners}}, f, indent=1)
    return comparison


for note in SPEC["notes"]:
    print("Note:", note if note.isprintable() else repr(note), file=sys.stderr)
'''


def script_text(spec: dict) -> str:
    """The script for a spec of :func:`~manifold_studio.reproduce.script_spec.session_spec`: the
    fixed code, the spec as one JSON literal, and one line per data set and run that indexes it
    by position (variable names are made of positions and run numbers only)."""
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    header = _HEADER.replace("{stamp}", stamp).replace("{tag}", repr(FLOAT_TAG))
    lines = [header.rstrip("\n"), "", "", "SPEC = json.loads(("]
    lines += [f"    {chunk + chr(10)!r}" for chunk in spec_json(spec)]  # each line of the JSON text, by repr
    lines += ["), object_hook=decode_floats)", _HELPERS.rstrip("\n"), ""]
    data_vars = [f"data{i + 1:d}" for i in range(len(spec["datasets"]))]
    for i, var in enumerate(data_vars):
        lines.append(f"{var} = load(SPEC['datasets'][{i:d}])")
    run_vars: list[str] = []
    for j, r in enumerate(spec["runs"]):
        rid = int(r["id"])
        var = f"run{rid:d}" if rid >= 0 else f"fitted{j + 1:d}"
        source = "" if r["source"] is None else f", source={run_vars[int(r['source'])]}"
        lines.append(f"{var} = fit_run(SPEC['runs'][{j:d}], {data_vars[int(r['dataset'])]}{source})")
        run_vars.append(var)
    if spec["test_score"] is not None:
        lines.append("comparison = test_and_score(SPEC['test_score'], "
                     f"{data_vars[int(spec['test_score']['dataset'])]})")
    lines += ['print(f"Outputs written to {OUT}")', ""]
    return "\n".join(lines)


def session_script(session, title: str = "Reproduces a Manifold Studio session", analyses: dict | None = None,
                   script_dir=None) -> str:
    """The Python script reproducing ``session``'s finished runs and, from ``analyses`` (the
    project's saved results), its Test & Score comparison (see the module docstring).
    ``script_dir``: the folder the script will be written to (data files under it are named
    relative to it; None: every data file by its absolute path). ``title`` goes into
    ``SPEC["title"]``, never into the code. Raises :class:`NothingToExport` when nothing has run,
    and ManifoldStudioError naming an unknown algorithm, parameter, step or load option."""
    return script_text(session_spec(session, analyses, script_dir, title))


def write_script(source, out_path, analyses: dict | None = None) -> Path:
    """Write the script of a session or a project file (path) to ``out_path`` (a ``.py`` file in a
    writable folder, written atomically); returns the path. ``analyses``: the session's saved
    results (a project file brings its own)."""
    if isinstance(source, (str, Path)):
        contents = read_project(source)
        session, analyses = contents.session, contents.analyses
        title = f"Reproduces the Manifold Studio project {Path(source).name}"
    else:
        session, title = source, "Reproduces a Manifold Studio session"
    out_path = Path(out_path)
    check_output_path(out_path, (".py",), "the script")
    text = session_script(session, title, analyses, out_path.parent)
    return atomic_write(out_path, lambda fh: fh.write(text), binary=False)
