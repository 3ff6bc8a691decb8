"""Apply a project's analysis to another file with the same columns (Qt-free).

::

    from manifold_studio.reproduce.replay import replay
    result = replay("project.msproj", "new.csv", "results/")   # or a Session
    result.outputs        # [(run id, Path('results/run1_isomap.csv')), ...]
    result.notes          # runs that could not be applied, and why

Every finished run with a fitted model is applied to the new file in the order the runs were
made: a run fitted on a data set is extended to the new file's rows (its columns matched by
name, in any order; a run with a preparation chain gets the new data set itself, so its fitted
pipeline matches every column its steps use), a run fitted on another run's map ("cluster this map") is extended to that
run's output on the new file. Each output is written as CSV (the new file's row id, its meta
columns unless ``metas=False``, then the run's coordinates or labels) named after the run that made it: ``run3_isomap.csv``. The new file's
columns get the roles saved in the project (a column made meta in the session stays meta). A new
file that lacks a column a run was fitted on is refused with one line naming the column;
nothing is written then.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import manifold_studio as ms
from manifold_studio.algorithms.named_columns import check_numeric_columns
from manifold_studio.algorithms.progress import SubProgress, as_progress
from manifold_studio.analysis.run_cut import extend_cut
from manifold_studio.reproduce.script_export import run_output_name
from manifold_studio.errors import DataError, InvalidParameterError, ManifoldStudioError, WriteError
from manifold_studio.extend.out_of_core import row_id_header
from manifold_studio.fileio.export_paths import same_file
from manifold_studio.project.project_file import read_project
from manifold_studio.session.isolated_extend import extend_model
from manifold_studio.session.isolated_fit import estimator_ids, third_party_parts
from manifold_studio.session.lifecycle import run_extends_in_worker
from manifold_studio.session.records import DONE
from manifold_studio.tables.export import write_table_csv
from manifold_studio.tables.result_formats import meta_columns
from manifold_studio.tables.model import NUMERIC
from manifold_studio.tables.options import ROLES_OPTION

__all__ = ["ReplayResult", "replay", "matched_matrix", "run_input", "check_outputs_differ", "check_types"]


@dataclass
class ReplayResult:
    """What :func:`replay` wrote (``outputs``: (run id, path)) and what it skipped (``notes``)."""

    outputs: list = field(default_factory=list)
    notes: list = field(default_factory=list)
    n_rows: int = 0


def matched_matrix(train, new, where: str) -> np.ndarray:
    """The new data set's matrix with the training data set's feature columns, matched by name.
    A missing column raises DataError naming it."""
    names = list(train.feature_names or [])
    new_names = list(new.feature_names or [])
    if not names or not new_names:
        if new.n_features != train.n_features:
            raise DataError(f"{where} has {new.n_features} feature columns; the analysis was fitted on "
                            f"{train.n_features}.")
        return new.X
    missing = [n for n in names if n not in new_names]
    if missing:
        raise DataError(_missing_message(where, missing[0], train.name, len(missing) - 1))
    index = {n: j for j, n in enumerate(new_names)}
    return new.X[:, [index[n] for n in names]]


def _missing_message(where: str, column: str, train_name: str, more: int) -> str:
    return (f"{where} lacks column '{column}', which data set '{train_name}' was analysed with"
            + (f" (and {more} more)." if more else "."))


def run_input(run, train, new, where: str, notes: list | None = None):
    """What ``run``'s model is applied to: a fitted pipeline takes the new data set itself (its
    columns matched by name, meta columns of its steps included), any other model the matched
    matrix. A missing column raises DataError naming it; so does a column that was numeric at fit
    time and holds text in the new file (:func:`check_types`)."""
    est = run.estimator
    if getattr(est, "id", "") == "pipeline" and run.source_run is None:
        available = {c.name for c in new.columns}
        missing = [str(n) for n in est.feature_names_in_ if str(n) not in available]
        if missing:
            raise DataError(_missing_message(where, missing[0], train.name, len(missing) - 1))
        check_types(run, train, new, where, notes)
        return new
    check_types(run, train, new, where, notes)
    return matched_matrix(train, new, where)


def check_types(run, train, new, where: str, notes: list | None = None) -> None:
    """Refuse a column that ``run`` used as numeric (numeric in the project's table of its data
    set) and that the new file holds text in — read as categorical or text, or as numbers with
    the text cells missing — naming the column, the line and the cell; never recoded. A chain with
    an impute step takes those cells as missing instead (with a note in ``notes``)."""
    if train.table is None or new.table is None:
        return
    est = run.estimator
    pipeline = getattr(est, "id", "") == "pipeline" and run.source_run is None
    used = [str(n) for n in est.feature_names_in_] if pipeline else list(train.feature_names or [])
    imputes = pipeline and bool(getattr(est, "imputes", False))
    numeric = [n for n in used if n in train.table and train.table.column(n).type == NUMERIC]
    found = check_numeric_columns(new.table, numeric, f"run #{run.id} ({run.algorithm_id})", where=where,
                                  imputes=imputes)
    if notes is not None:
        notes.extend(found)


def _load_like(train, data_path) -> "ms.Dataset":
    """``data_path`` loaded with the options ``train`` was loaded with, then given ``train``'s
    column roles and label as the project saved them (its table; else its ``roles`` option), for
    the columns the new file has: a column the new file lacks is named by :func:`run_input`, and a
    label column it lacks is not asked for."""
    from_sample = str(train.source or "").startswith("sample:")  # a sample's options are not a file's
    options = {} if from_sample else dict(getattr(train, "load_options", None) or {})
    try:  # a tampered project may hold anything here
        roles = dict(ROLES_OPTION.validate(options.pop("roles", None)) or {})
    except InvalidParameterError as exc:
        raise DataError(f"The project's load option 'roles' of data set '{train.name}' is not a mapping of "
                        f"column names to roles: {exc}") from None
    label = options.pop("label_column", None)
    if train.table is not None:
        roles, label = train.table.roles, train.label_name
    new = ms.load_data(str(data_path), **options)
    if new.table is None:
        return new
    # a column numeric at fit time that is not numeric here keeps the role it was read with:
    # check_types names its first text cell (it is never made a feature of category codes)
    recoded = {n for n in roles if train.table is not None and n in train.table and n in new.table
               and train.table.column(n).type == NUMERIC and new.table.column(n).type != NUMERIC}
    present = {name: role for name, role in roles.items() if name in new.table and name != label
               and name not in recoded}
    if present and present != {n: new.table.roles[n] for n in present}:
        new.set_roles(present)
    if label is not None and label in new.table and new.label_name != label:
        new.set_target(label)
    return new


def check_outputs_differ(outputs, inputs) -> None:
    """Refuse, before anything is written, an output file that is one of the input files (the
    same path in another spelling, a symbolic link or a hard link to it): writing it would
    replace the input."""
    for out in outputs:
        for source in inputs:
            if same_file(out, source):
                raise WriteError(f"The output {out} is the input file {source}: writing it would replace "
                                 "the input; choose another output folder. Nothing was written.")


def _columns(run, values: np.ndarray) -> tuple[list[str], list[np.ndarray]]:
    if values.ndim == 2:
        return ([f"{run.algorithm_id}_{j + 1}" for j in range(values.shape[1])],
                [values[:, j] for j in range(values.shape[1])])
    return ["label"], [values]


def _with_cut(session, run, X, values: np.ndarray) -> np.ndarray:
    """The run's dendrogram cut applied to the new rows, when it has one (issue 30: a cut is
    run state): see :func:`manifold_studio.analysis.run_cut.extend_cut`."""
    cut = extend_cut(run, session.training_data(run)[0], X) if run.cut_labels is not None else None
    return values if cut is None else np.asarray(cut)


def _unrestored_model(contents, run) -> str:
    """Why the project could not restore ``run``'s saved model (e.g. its chain names a step no
    installed plugin provides), as the project reader said it; "" when it did not say."""
    head, mark = f"Run #{run.id} ({run.algorithm_id}): ", "model cannot be restored: "
    for problem in (contents.problems if contents is not None else ()):
        if problem.startswith(head) and mark in problem:
            return problem.split(mark, 1)[1]
    return ""


def _metas(train, new) -> tuple[list[str], list[np.ndarray]]:
    """The new file's meta columns that are meta columns of the training data too (a feature the
    new file's text made categorical is not one), for the output after the row id as in run and
    apply."""
    table = getattr(train, "table", None)
    kept = set(table.meta_names) if table is not None else set()
    pairs = [(n, v) for n, v in zip(*meta_columns(new)) if n in kept]
    return [n for n, _ in pairs], [v for _, v in pairs]


def replay(project, data_path, out_dir, progress=None, metas: bool = True, *,
           isolated: bool | None = None) -> ReplayResult:
    """Apply every saved model of ``project`` (a project path or a Session) to ``data_path`` and
    write each run's output to ``out_dir`` (see the module docstring). ``isolated``: extend every
    run in this process (False: the command line, whose replay runs wholly in a worker process when
    a third-party plugin is installed) or, by default (None), a run with a third-party part in a
    worker process (:func:`~manifold_studio.session.isolated_extend.extend_model`, the window)."""
    progress = as_progress(progress)
    contents = read_project(project) if isinstance(project, (str, Path)) else None
    session = contents.session if contents is not None else project
    data_path = Path(data_path)
    runs = [r for r in sorted(session.runs.values(), key=lambda r: r.id) if r.status == DONE]
    if not runs:
        raise ManifoldStudioError("Nothing to replay: the project has no finished run.")
    result = ReplayResult()
    loaded: dict[str, object] = {}
    inputs: dict[int, object] = {}
    applicable = []
    for run in runs:  # check every column first: a missing one writes nothing
        if run.estimator is None:
            why = _unrestored_model(contents, run)
            result.notes.append(f"Run #{run.id} ({run.algorithm_id}) " + (
                f"is skipped: its model cannot be restored: {why}" if why else "has no saved model: skipped."))
            continue
        train = session.datasets.get(run.dataset_name)
        if train is None:
            result.notes.append(f"Run #{run.id} ({run.algorithm_id}): its data set '{run.dataset_name}' is not "
                                "in the project: skipped.")
            continue
        if run.dataset_name not in loaded:
            loaded[run.dataset_name] = _load_like(train, data_path)
        inputs[run.id] = run_input(run, train, loaded[run.dataset_name], data_path.name, result.notes)
        applicable.append(run)
    out_dir = Path(out_dir)
    targets = {run.id: out_dir / f"{run_output_name(run)}.csv" for run in applicable}
    for path in targets.values():  # a forged run id cannot lead out of the folder
        if path.parent != out_dir or path.name.startswith("."):
            raise WriteError(f"Refused to write {path}: a run's output must be a file of {out_dir}. "
                             "Nothing was written.")
    check_outputs_differ(targets.values(), [data_path] + ([Path(project)] if isinstance(project, (str, Path)) else []))
    made: dict[int, np.ndarray] = {}
    for k, run in enumerate(applicable):
        X = inputs[run.id]
        if run.source_run is not None:
            X = made.get(run.source_run)
            if X is None or X.ndim != 2:
                result.notes.append(f"Run #{run.id} ({run.algorithm_id}) was fitted on the map of run "
                                    f"#{run.source_run}, which was not replayed: skipped.")
                continue
        sub = SubProgress(progress, k / len(applicable), (k + 1) / len(applicable), f"Run #{run.id}: ")
        try:  # every run is applied before anything is written: a step that cannot take the file writes nothing
            in_worker = run_extends_in_worker(run) if isolated is None else isolated
            values = np.asarray(extend_model(run.estimator, X, sub, isolated=True, what=data_path.name) if in_worker
                                else run.estimator.extend(X, progress=sub))   # (a pipeline takes the data set)
            if in_worker and run.cut_labels is not None and third_party_parts(estimator_ids(run.estimator)):
                raise DataError(f"its dendrogram cut would run its third-party part "
                                f"({', '.join(third_party_parts(estimator_ids(run.estimator)))}) in this process; "
                                "the command line's replay applies it in a worker process")
            values = _with_cut(session, run, X, values)
        except (DataError, InvalidParameterError) as exc:
            raise DataError(f"Run #{run.id} ({run.algorithm_id}) cannot be applied to {data_path.name}: "
                            f"{str(exc).rstrip('.')}. Nothing was written.") from None
        made[run.id] = values
    out_dir.mkdir(parents=True, exist_ok=True)
    for run in applicable:
        if run.id not in made:
            continue
        values = made[run.id]
        header, columns = _columns(run, values)
        path = targets[run.id]
        new = loaded[run.dataset_name]
        meta_names, meta_values = _metas(session.datasets[run.dataset_name], new) if metas else ([], [])
        write_table_csv(path, [row_id_header(new)] + meta_names + header,
                        [np.asarray(new.row_ids)] + meta_values + columns)
        result.outputs.append((run.id, path))
        result.n_rows = int(values.shape[0])
    progress.checkpoint(1.0, f"Replayed {len(result.outputs)} run(s)")
    return result
