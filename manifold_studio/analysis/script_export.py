"""Export a session as a Python script that reproduces it with the public API (Qt-free).

::

    from manifold_studio.analysis.script_export import session_script, write_script
    text = session_script(session)            # or write_script("project.msproj", "analysis.py")

The script loads each data set from its source with the options it was loaded with
(``ms.load_data(source, **options)``), refits every finished run in order with its algorithm,
parameters and seeds (``ms.get_algorithm(id, **params).fit(X, y)``; ``ms.make_pipeline`` when the
run has a preparation chain; the source run's map when the run was fitted on a map; the same
rows when it was fitted on some rows), repeats each recorded evaluation
(:func:`manifold_studio.evaluation.evaluate` with the same method, folds and seed) and writes
every output as CSV next to it, named after the run: ``run3_isomap.csv``; evaluations go to
``run5_svm_evaluation.json``. A saved Test & Score comparison (the project's ``test_score``
analysis) is repeated with :func:`manifold_studio.evaluation.compare_learners`: the same learners,
each behind its recorded preparation chain, on the same folds and seed; its per-fold figures and
out-of-fold predictions go to ``test_score.json``. Floats are written with ``repr`` (round-trip exact).

A run's preparation chain is read from ``run.meta["chain"]`` (a list of ``[step_id, {params}]``,
as the window's Preparation dock records it) or from a fitted :class:`~manifold_studio.algorithms.pipeline.Pipeline` estimator.
"""
from __future__ import annotations

import datetime as _dt
import pprint
from pathlib import Path

import numpy as np

from manifold_studio.errors import ManifoldStudioError
from manifold_studio.files.project_file import read_project
from manifold_studio.session.chain import non_default_params, pipeline_chain
from manifold_studio.session.records import DONE

__all__ = ["session_script", "write_script", "run_output_name", "run_chain", "NothingToExport"]


class NothingToExport(ManifoldStudioError):
    """The session has no finished run to reproduce."""


def run_output_name(run) -> str:
    """The file stem of a run's outputs: ``run3_isomap``."""
    safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in str(run.algorithm_id))
    return f"run{run.id}_{safe}"


def run_chain(run) -> list[tuple[str, dict]]:
    """The run's preparation steps as ``[(step_id, params), ...]`` (empty: none)."""
    steps = run.meta.get("chain") if isinstance(run.meta, dict) else None
    if steps:
        return [(str(s[0]), dict(s[1] or {})) for s in steps]
    return pipeline_chain(run.estimator)


def _literal(value) -> str:
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    return pprint.pformat(value, width=96, compact=True, sort_dicts=False)


def _kwargs(params: dict) -> str:
    return ", ".join(f"{k}={_literal(v)}" for k, v in params.items())


def _header(title: str) -> list[str]:
    stamp = _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")
    return [
        f'"""{title}',
        "",
        f"Exported by Manifold Studio on {stamp}. Run it with Python where manifold-studio is",
        "installed: python analysis.py [OUTPUT_FOLDER]  (default: ./results). Every output is a CSV",
        "file named after the run that made it; evaluations are JSON files.",
        '"""',
        "import csv",
        "import json",
        "import sys",
        "from pathlib import Path",
        "",
        "import numpy as np",
        "",
        "import manifold_studio as ms",
        "from manifold_studio.evaluation import compare_learners, evaluate",
        "",
        'OUT = Path(sys.argv[1] if len(sys.argv) > 1 else "results")',
        "OUT.mkdir(parents=True, exist_ok=True)",
        "",
        "",
        "def write_csv(name, header, columns):",
        '    """Write columns (arrays of equal length) as one CSV file with a header row."""',
        '    with open(OUT / name, "w", newline="", encoding="utf-8") as f:',
        "        writer = csv.writer(f)",
        "        writer.writerow(header)",
        "        writer.writerows(zip(*[np.asarray(c).tolist() for c in columns]))",
        "",
    ]


def _dataset_lines(ds, var: str) -> list[str]:
    shape = f"{ds.n_samples:,} rows × {ds.n_features} feature columns"
    labels = f", labels: {ds.label_name}" if ds.label_name else ""
    lines = ["", f"# Data set {ds.name!r}: {shape}{labels}"]
    if not ds.source:
        return lines + ["# it was made in the session (not loaded from a file or a sample), so the script cannot",
                        "# load it; the runs on it are left out."]
    opts = dict(getattr(ds, "load_options", None) or {})
    args = ", ".join([repr(ds.source)] + [f"{k}={_literal(v)}" for k, v in opts.items()])
    lines.append(f"{var} = ms.load_data({args})")
    if getattr(ds, "table", None) is not None and "roles" not in opts:  # the roles as in the session
        roles = {c.name: c.role for c in ds.columns}
        lines.append(f"{var}.set_roles({_literal(roles)})")
        if ds.missing != "drop":
            lines.append(f"{var}.set_missing({ds.missing!r})")
    return lines


def _estimator_expr(run, chain) -> str:
    return _learner_expr(run.algorithm_id, run.params, chain)


def _learner_expr(algorithm_id: str, params: dict, chain, indent: str = "    ") -> str:
    algo = f"ms.get_algorithm({algorithm_id!r}{', ' if params else ''}{_kwargs(params)})"
    if len(algo) > 90:  # one parameter per line
        inner = "".join(f"\n{indent}    {k}={_literal(v)}," for k, v in params.items())
        algo = f"ms.get_algorithm(\n{indent}    {algorithm_id!r},{inner}\n{indent})"
    if not chain:
        return algo
    chain = [(s, non_default_params(s, p)) for s, p in chain]  # a step's defaults go without saying
    steps = ", ".join(repr(s) if not p else f"({s!r}, {_literal(p)})" for s, p in chain)
    return f"ms.make_pipeline({steps}, {algo})"


def _run_lines(session, run, data_vars: dict, model_vars: dict) -> list[str]:
    ds = session.datasets.get(run.dataset_name)
    if ds is None or run.dataset_name not in data_vars:
        why = "which the script cannot load" if ds is not None else "which is no longer in the session"
        return ["", f"# Run #{run.id} ({run.algorithm_id}) was fitted on data set {run.dataset_name!r}, {why}: skipped."]
    dvar, var, stem = data_vars[run.dataset_name], f"run{run.id}", run_output_name(run)
    chain = run_chain(run)
    where = f"the map of run #{run.source_run}" if run.source_run is not None else f"data set {ds.name!r}"
    lines = ["", f"# Run #{run.id}: {run.algorithm_name or run.algorithm_id} ({run.kind}) on {where}"]
    if run.source_run is not None:
        if run.source_run not in model_vars:
            return lines + [f"# run #{run.source_run} it was fitted on is not in the script: skipped."]
        src = model_vars[run.source_run]
        lines.append(f"{var}_rows = {src}_rows  # the points of the map it was fitted on")
        x_expr = f"{src}.embedding_"
    elif run.rows is not None:
        lines.append(f"{var}_rows = np.array({_literal(np.asarray(run.rows))})  # the rows it was fitted on")
        x_expr = f"{dvar}.X[{var}_rows]"
    else:
        lines.append(f"{var}_rows = None  # all rows")
        x_expr = f"{dvar}.X"
    needs_y = run.kind == "classification" or bool(getattr(session.host.algorithms.get(run.algorithm_id),
                                                            "requires_labels", False))
    y_expr = (("None" if not needs_y else f"{dvar}.labels" if run.source_run is None and run.rows is None
               else f"{dvar}.labels if {var}_rows is None else {dvar}.labels[{var}_rows]"))
    unseeded = [k for k, v in run.params.items() if v is None and k in ("random_state", "seed")]
    if unseeded:
        lines.append(f"# {unseeded[0]}=None: this run was not seeded, so its numbers may differ from the session's")
    lines.append(f"X, y = {x_expr}, {y_expr}")
    lines.append(f"{var} = {_estimator_expr(run, chain)}.fit(X, y)")
    model_vars[run.id] = var
    outputs, header = [], []
    if run.embedding is not None:
        k = int(np.asarray(run.embedding).shape[1])
        lines.append(f"embedding = np.asarray({var}.embedding_)")
        header += [f"{run.algorithm_id}_{j + 1}" for j in range(k)]
        outputs += [f"embedding[:, {j}]" for j in range(k)]
    if run.labels is not None:
        if run.kind == "classification":
            lines.append(f"labels = {var}.predict(X)")
        else:
            lines.append(f"labels = {var}.labels_")
        header.append("label")
        outputs.append("labels")
    if outputs:
        lines.append(f"write_csv({stem + '.csv'!r}, {header!r}, [{', '.join(outputs)}])")
    evaluation = run.meta.get("evaluation") if isinstance(run.meta, dict) else None
    if isinstance(evaluation, dict) and evaluation.get("method"):
        opts = {"method": evaluation["method"], "random_state": evaluation.get("random_state", 0)}
        if "n_splits" in evaluation:
            opts["n_splits"] = evaluation["n_splits"]
        if "test_fraction" in evaluation:
            opts["test_fraction"] = evaluation["test_fraction"]
        est = _estimator_expr(run, chain)
        lines += [f"result = evaluate(lambda: {est}, X, y, {_kwargs(opts)})",
                  "print(" + repr(f"run #{run.id}: ") + " + result.summary())",
                  f"with open(OUT / {stem + '_evaluation.json'!r}, 'w', encoding='utf-8') as f:",
                  "    json.dump({'summary': result.summary(), 'mean_accuracy': result.mean_accuracy,",
                  "               'fold_accuracy': result.fold_accuracy.tolist(),",
                  "               'confusion': result.confusion.tolist(), **result.params}, f, indent=1)"]
    return lines


def _comparison_lines(doc: dict, data_vars: dict) -> list[str]:
    """Test & Score (a saved comparison record) as ``compare_learners`` of the same learners,
    each behind its recorded preparation chain, on the same folds; its figures go to
    ``test_score.json``."""
    name, scheme = doc.get("dataset"), dict(doc.get("scheme") or {})
    learners = [d for d in doc.get("learners") or [] if isinstance(d, dict)]
    lines = ["", f"# Test & Score on data set {name!r}: every learner is its preparation chain and its classifier,",
             "# fitted on each training part only"]
    if name not in data_vars:
        return lines + ["# the data set is not loaded by this script: skipped."]
    if scheme.get("cv") == "given" or not learners:
        return lines + ["# it was scored on folds given by hand (or has no learner), which the script cannot repeat: "
                        "skipped."]
    opts = {"cv": scheme.get("cv", 5), "repeats": int(scheme.get("repeats") or 1), "seed": scheme.get("seed", 0)}
    if scheme.get("holdout") is not None:
        opts = {"holdout": scheme["holdout"], "repeats": opts["repeats"], "seed": opts["seed"]}
    lines.append("comparison = compare_learners({")
    for d in learners:
        chain = [(str(s[0]), dict(s[1] or {})) for s in d.get("chain") or []]
        expr = _learner_expr(str(d.get("algorithm")), dict(d.get("params") or {}), chain, indent="        ")
        lines.append(f"    {str(d['name'])!r}: {expr},")
    lines += [f"}}, {data_vars[name]}, {_kwargs(opts)})",
              "print(comparison.format_table())",
              "with open(OUT / 'test_score.json', 'w', encoding='utf-8') as f:",
              "    json.dump({'preparation': comparison.preparation(), 'scheme': comparison.scheme,",
              "               'folds': [[int(r), te.tolist()] for r, te in comparison.folds],",
              "               'learners': {r.name: {'fold_metrics': {m: v.tolist() for m, v in",
              "                                                      r.fold_metrics.items()},",
              "                                     'predictions': r.predictions.tolist(),",
              "                                     'pooled_auc': comparison.pooled_auc(r.name)}",
              "                            for r in comparison.learners}}, f, indent=1)"]
    return lines


def session_script(session, title: str = "Reproduces a Manifold Studio session", analyses: dict | None = None) -> str:
    """The Python script reproducing ``session``'s finished runs and, from ``analyses`` (the
    project's saved results), its Test & Score comparison (see the module docstring). Raises
    :class:`NothingToExport` when nothing has run."""
    done = [r for r in session.runs.values() if r.status == DONE]
    comparison = (analyses or {}).get("test_score")
    comparison = comparison[0] if isinstance(comparison, tuple) and isinstance(comparison[0], dict) else None
    if not done and comparison is None:
        raise NothingToExport("Nothing to export as a script: no run has finished yet. Run an algorithm first.")
    used = {r.dataset_name for r in done} | ({comparison.get("dataset")} if comparison else set())
    lines = _header(title)
    data_vars: dict[str, str] = {}
    for i, ds in enumerate((d for d in session.datasets.values() if d.name in used), start=1):
        lines += _dataset_lines(ds, f"data{i}")
        if ds.source:
            data_vars[ds.name] = f"data{i}"
    model_vars: dict[int, str] = {}
    for run in sorted(done, key=lambda r: r.id):
        lines += _run_lines(session, run, data_vars, model_vars)
    if comparison is not None:
        lines += _comparison_lines(comparison, data_vars)
    lines += ["", 'print(f"Outputs written to {OUT}")', ""]
    return "\n".join(lines)


def write_script(source, out_path, analyses: dict | None = None) -> Path:
    """Write the script of a session or a project file (path) to ``out_path``; returns the path.
    ``analyses``: the session's saved results (a project file brings its own)."""
    if isinstance(source, (str, Path)):
        contents = read_project(source)
        session, analyses = contents.session, contents.analyses
        title = f"Reproduces the Manifold Studio project {Path(source).name}"
    else:
        session, title = source, "Reproduces a Manifold Studio session"
    text = session_script(session, title, analyses)
    out_path = Path(out_path)
    out_path.write_text(text, encoding="utf-8")
    return out_path
