"""The ``run`` and ``apply`` commands of the command line and their data helpers: reading a
data set with --label-column / --data-option, aligning columns with a model's training data,
evaluating a classifier (--cv / --holdout), writing results. :mod:`manifold_studio.cli.main` holds the
parser, the console and ``main``."""
from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

import manifold_studio as ms
from manifold_studio.algorithms.labels import same_labels
from manifold_studio.cli.console import EXIT_OK, Console, UsageError, format_seconds
from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.cli.dask_paths import apply_on_dask, run_on_dask
from manifold_studio.cli.distance_option import distance_run_params, load_source
from manifold_studio.cli.h5ad_output import apply_h5ad, apply_output, is_backed, isolated_out, outputs_to_check, write_run_output
from manifold_studio.project.housekeeping import clean_next_to
from manifold_studio.cli.result_output import check_output_format, write_csv  # noqa: F401 (write_csv: score, compare)
from manifold_studio.cli.prep_options import (
    KEPT_AS_NAN,
    apply_loading_options,
    apply_roles,
    has_column,
    imputed_notes,
    loading_options,
    parse_prep,
    parse_roles,
    roles_for,
    with_chain,
)
from manifold_studio.cli.run_results import result_name, shape_text, uses_labels
from manifold_studio.cli.session_fit import fit_in_session
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.evaluation import HOLDOUT, KFOLD, evaluate
from manifold_studio.extend.isolated_apply import apply_in_subprocess, model_ids
from manifold_studio.extend.out_of_core import (
    align_features,
    chain_types,
    data_parts,
    dataset_table,
    extend_source,
    row_id_header,
)
from manifold_studio.fileio.bounded import check_regular_file
from manifold_studio.fileio.export_paths import same_file
from manifold_studio.files.model_file import (
    load_model_with_metadata,
    read_metadata,
    save_model,
)
from manifold_studio.plugins.host import get_host
from manifold_studio.render.plot import check_plot_option, plot_run
from manifold_studio.cli.worker_command import NOTHING_WRITTEN, in_worker, isolated_extend, nothing_written
from manifold_studio.session.isolated_fit import PluginProcessError, estimator_ids, third_party_parts
from manifold_studio.tables.result_formats import meta_columns
from manifold_studio.tables.result_table import result_table



def check_inputs(args, flags: tuple[str, ...]) -> None:
    """Refuse at once an input that is a FIFO, a device or a socket (reading it could block)."""
    for flag in flags:
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is None or value == "-" or str(value).startswith("sample:"):
            continue
        try:
            check_regular_file(value, "data file" if flag != "--model" else "model file")
        except DataError as exc:
            raise UsageError(f"{flag} {value}: {exc}") from None


def check_outputs_differ(args, outputs: tuple[str, ...], inputs: tuple[str, ...]) -> None:
    """Refuse an output (``--out``...) that is one of the input files (``--data``...), compared
    after resolving links and relative paths: writing the result would replace the input."""
    sources: list[tuple[str, Path]] = []
    for flag in inputs:
        value = getattr(args, flag.lstrip("-").replace("-", "_"), None)
        if value is None or value == "-" or str(value).startswith("sample:"):
            continue
        try:
            parts = data_parts(value) if flag != "--model" else [Path(value)]
        except DataError:  # a missing input is reported by its reader
            parts = [Path(value)]
        sources += [(flag, p) for p in parts]
    for out_flag in outputs:
        out = getattr(args, out_flag.lstrip("-").replace("-", "_"), None)
        if out is None or out == "-":
            continue
        target = Path(out)
        for flag, source in sources:
            if same_file(target, source):
                hint = (" (or add --h5ad-add to add the result to it: only obsm / obs change)"
                        if out_flag == "--out" and target.suffix.lower() == ".h5ad"
                        and hasattr(args, "h5ad_add") else "")
                raise UsageError(f"{out_flag} {out} is the input file of {flag}: writing the result would "
                                 f"replace it; choose another output file{hint}")


def _check_writable(path: str | None, flag: str) -> None:
    if path is None or path == "-":
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist")
    if target.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name")
    if flag != "--save-model":
        check_output_format(path)
    clean_next_to(target)  # what killed writes of this file left behind (a day old, our names only)


# --------------------------------------------------------------------------------------
# parameters and data
# --------------------------------------------------------------------------------------
def _pairs(items: Sequence[Sequence[str]] | None, flag: str) -> list[tuple[str, str]]:
    out = []
    for group in items or []:
        for item in group:
            name, sep, value = item.partition("=")
            if not sep or not name.strip():
                raise UsageError(f"{flag} expects NAME=VALUE, got '{item}'")
            out.append((name.strip(), value))
    return out


def parse_values(constraints, pairs: list[tuple[str, str]], owner: str) -> dict[str, Any]:
    """Parse NAME=VALUE texts with the declared constraints (clear errors for unknown names)."""

    by_name = {p.name: p for p in constraints}
    values = {}
    for name, text in pairs:
        if name not in by_name:
            allowed = ", ".join(by_name) or "none"
            raise InvalidParameterError(f"Unknown parameter '{name}' for {owner}: allowed are {allowed}.")
        values[name] = by_name[name].parse(text)
    return values


def _source_options(source: str):
    """(option constraints, owner description) for a data source."""

    host = get_host()
    if source.startswith("sample:"):
        sample = host.samples.get(source.split(":", 1)[1])
        if sample is None:
            return (), source
        return tuple(sample.options), f"sample {sample.id}"
    loader = host.loader_for(source)
    return tuple(loader.options), f"the {loader.name} loader"


def _folder_loader(source: str) -> bool:
    """Whether a loader plugin reads this folder (a folder of images, for instance)."""
    try:
        return ms._host().loader_for(source) is not None
    except DataError:
        return False


def load_dataset(source: str, label_column: str | None = None,
                 data_options: list[tuple[str, str]] | None = None, console: Console | None = None,
                 label_optional: bool = False, strict: bool = False, roles: dict | None = None,
                 id_column: str | None = None, keep_missing: bool = False, distances=False):
    """Load ``sample:NAME`` or a file, with --label-column and --data-option values. ``strict``
    (--strict): anything the loader had to change (a column left out, rows dropped, a text cell
    in a numeric column) is an error instead of a note. ``roles`` / ``id_column``: --role and
    --id-column; ``keep_missing``: rows with gaps are kept as NaN (the chain imputes them); ``distances``: load_source."""
    is_sample = source.startswith("sample:")
    if not is_sample and not Path(source).exists():
        raise DataError(f"File not found: {source}")
    if not is_sample and Path(source).is_dir() and not _folder_loader(source):
        raise DataError(f"{source} is a folder with no images; give a data file or a folder of images")
    options = loader_options(source, source, label_column, data_options or [])
    options, later_roles = loading_options(*_source_options(source), roles or {}, id_column, keep_missing, options)
    try:
        ds = load_source(source, options, distances)
    except DataError:
        if not (label_optional and label_column is not None):
            raise
        # a file to extend to may lack the training file's label column: read it without one
        options.pop("label_column", None)
        options.pop("label_array", None)
        ds = load_source(source, options, distances)
        if console:
            console.note(f"{Path(source).name} has no label column '{label_column}': read without labels.")
    ds = apply_roles(ds, later_roles, source)
    remarks = [line for line in (ds.report[1:] if ds.report and ds.report[0].startswith("Read ") else ds.report)
               if line.strip() and not (keep_missing and " kept as NaN" in line)]
    kept = [ln for ln in ds.report if keep_missing and KEPT_AS_NAN in ln]
    if kept and console:  # not a change to the data: the chain's impute step fills them
        console.note(imputed_notes(kept[:1], True)[0])
    if strict and remarks:
        more = f" (and {len(remarks) - 1} more remark(s))" if len(remarks) > 1 else ""
        raise DataError(f"{Path(source).name if not source.startswith('sample:') else source}: {remarks[0].rstrip('.')}{more}; "
                        "--strict refuses data the loader had to change (without --strict it is read with a note)")
    if console:
        for line in remarks:
            console.note(line)
    return ds


def _align_features(ds, train_names: list[str] | None, n_features: int, console: Console):
    """The matrix of ``ds`` with columns in the training order (by name when possible)."""

    X, note = align_features(ds, train_names, n_features)
    if note:
        console.note(note)
    return X


# --------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------
def _timed(console: Console, label: str, func, source: str):
    """(func(progress), seconds); data errors are prefixed with the data source."""

    progress = console.progress(label)
    start = time.perf_counter()
    try:
        value = func(progress)
    except DataError as exc:
        raise DataError(f"{source}: {exc}") from None
    finally:
        console.end_progress()
    return value, time.perf_counter() - start


def cmd_run(args) -> int:
    console = Console(args.quiet, info_to_stderr="-" in (args.out, args.extend_out))
    check_inputs(args, ("--data", "--extend"))
    check_outputs_differ(args, outputs_to_check(args, ("--out", "--extend-out", "--save-model")), ("--data", "--extend"))
    cls = ms.algorithm_class(args.algorithm)
    params = distance_run_params(args, cls, parse_values(cls.params, _pairs(args.param, "--param"), cls.id))
    steps = parse_prep(getattr(args, "prep", None))
    est = with_chain(steps, ms.get_algorithm(cls.id, **params))
    parts = [] if args.in_process else third_party_parts(estimator_ids(est))
    # an evaluation fits many copies, and --dask fits here (and extends here without a cluster):
    # the whole command in a worker
    if parts and (args.cv or args.holdout or args.dask is not None):
        code = in_worker(args, parts, f"{cls.id} {'on Dask' if args.dask is not None else 'evaluation'}")
        if code is not None:
            return code
    loading = {"roles": parse_roles(getattr(args, "role", None)), "id_column": getattr(args, "id_column", None),
               "keep_missing": chain_imputes([s for s, _ in steps]), "distances": getattr(args, "distance_matrix", False)}
    if (args.extend is None) != (args.extend_out is None):
        raise UsageError("--extend FILE and --extend-out FILE go together")
    if args.out == "-" and args.extend_out == "-":
        raise UsageError("only one of --out and --extend-out can be '-' (standard output)")
    for flag, path in (("--out", args.out), ("--extend-out", args.extend_out),
                       ("--save-model", args.save_model)):
        _check_writable(path, flag)

    plot_size = check_plot_option(args.plot, args.plot_size)
    if plot_size and args.dask is not None:
        raise UsageError("--plot does not apply with --dask (the workers write the result)")
    if args.extend is not None and not args.extend.startswith("sample:") and not Path(args.extend).exists():
        raise DataError(f"File not found: {args.extend}")

    if args.dask is not None:  # out of core: the data never sit in one Session (a sample fits here)
        written, n, m, seconds = run_on_dask(args, est, console)
        console.flush_notes()
        console.info(f"{cls.id}: fitted on a sample of {m:,} of {n:,} rows drawn by Dask and extended to all "
                     f"on Dask in {format_seconds(seconds)}; wrote {written}")
        return EXIT_OK

    # read everything first, compute, and write only when all of it worked
    data_options = _pairs(args.data_option, "--data-option")
    ds = load_dataset(args.data, args.label_column, data_options, console, strict=getattr(args, "strict", False),
                      **loading)
    y = ds.labels if uses_labels(est, cls) else None
    if cls.requires_labels and y is None:
        raise DataError(f"{cls.id} is a {cls.kind} algorithm and needs labels, but {ds.name} has none: "
                        "choose the label column with --label-column.")
    new = X_new = None
    if args.extend is not None:
        new = load_dataset(args.extend, args.label_column, data_options, console, label_optional=True,
                           **{**loading, "roles": roles_for(args.extend, loading["roles"]), "distances": ds.distance_matrix and ds})
        if steps:   # text in a column numeric in the training data: refused as apply and replay do
            for text in chain_types(ds.feature_names, ds.table.categories() if ds.table is not None else {},
                                    est.imputes, new, Path(new.source).name if new.source else new.name):
                console.note(text)
        X_new = dataset_table(new) if steps else _align_features(new, ds.feature_names, ds.n_features, console)

    # an evaluation fits copies of the chain and algorithm built above on its training parts
    evaluation = _evaluate(args, cls, est, ds, y, console) if (args.cv or args.holdout) else None
    # the fit itself goes through the session lifecycle, as the window's and the API's do; a
    # third-party part fits (and extends) in a worker process: its crash ends the run, not us
    fitted = fit_in_session(ds, cls, params, steps, in_worker=bool(parts), fit_sample=args.fit_sample,
                            sample_seed=args.sample_seed,
                            timed=lambda label, work: _timed(console, label, work, args.data))
    est, result, fitted_mask, fit_time = fitted.estimator, fitted.result, fitted.fitted_mask, fitted.seconds
    # --extend: the new file's rows matched to the training columns by name (a table, not a data
    # set of the session), extended here or in a worker process
    extend_there = isolated_extend(cls.id) if parts else None
    if new is not None:
        extend = ((lambda progress: extend_there(est, X_new, progress)) if extend_there is not None
                  else lambda progress: est.extend(X_new, progress=progress))
        ext, ext_time = _timed(console, f"{cls.id} extend", extend, args.extend)
        ext = np.asarray(ext)

    header, columns = result_table(result, cls.id, cls.kind, ds.labels, ds.label_name, ds.row_ids, row_id_header(ds),
                                   meta_columns(ds) if args.metas else None)
    if fitted_mask is not None:
        header.append("fitted")
        columns.append(fitted_mask.astype(int))
    write_run_output(args, console, est, cls, ds, result,
                     lambda: write_csv(args.out, header, columns, args.escape_formulas, array=result),
                     fitted_mask=fitted_mask)
    if new is not None:
        header, columns = result_table(ext, cls.id, cls.kind, new.labels, new.label_name, new.row_ids,
                                       row_id_header(new), meta_columns(new) if args.metas else None)
        write_csv(args.extend_out, header, columns, args.escape_formulas, array=ext)
    if args.save_model is not None:
        save_model(est, args.save_model, data=ds, extra={"fit_time_s": fit_time})
    # the subtitle names the algorithm's own changed parameters; a pipeline's deep parameters (its
    # steps as Python reprs, every step's defaults) would be read as noise, and the title already
    # names the chain
    own = getattr(est, "final", None) or est
    plotted = plot_run(args.plot, plot_size, result, cls.kind, cls.id, ds, own.get_params(),
                                 {p.name: p.default for p in cls.params},  # (third-party steps: not here)
                                 fitted.plot_matrix()) if plot_size else ""

    for warning in getattr(est, "fit_warnings_", None) or ():
        console.note(f"warning: {warning}")
    console.flush_notes()
    if fitted_mask is not None:
        console.info(f"{cls.id}: fitted on a sample of {int(fitted_mask.sum()):,} of {ds.name} "
                     f"({ds.n_samples:,} × {ds.n_features}) and extended to all in {format_seconds(fit_time)}")
    else:
        console.info(f"{cls.id}: fitted on {ds.name} ({ds.n_samples:,} × {ds.n_features}) in {format_seconds(fit_time)}")
    if args.out != "-" and not is_backed(ds):
        console.info(f"wrote {shape_text(result)} {result_name(cls.kind)} to {args.out}")
    if cls.kind == "classification":
        console.info(f"training accuracy {_accuracy(result, y)}")
    if evaluation is not None:
        console.info(evaluation)
    if callable(getattr(est, "ranking_quality", None)) and y is not None:  # a ranking model
        q = est.ranking_quality(ds.X, y)
        console.info(f"ranking on {ds.name}: pairwise accuracy {q['pairwise_accuracy']:.4f} "
                     f"({q['n_pairs']:,} ordered pairs), mean Kendall tau {q['mean_kendall_tau']:.4f} "
                     f"over {len(q['kendall_tau'])} queries")
    if new is not None:
        console.info(f"extended to {new.name} ({new.n_samples:,} points) in {format_seconds(ext_time)}"
                     + (f"; wrote {shape_text(ext)} to {args.extend_out}" if args.extend_out != "-" else ""))
        if cls.kind == "classification" and new.labels is not None:
            console.info(f"accuracy on {new.name}: {_accuracy(ext, new.labels)}")
    if args.save_model is not None:
        console.info(f"saved the fitted model to {args.save_model}")
    if plotted:
        console.info(plotted)
    return EXIT_OK


def cmd_apply(args) -> int:
    """Extend a saved model to a file, a folder of parts or a glob, chunk by chunk (bounded memory)."""

    console = Console(args.quiet, info_to_stderr=args.out == "-")
    check_inputs(args, ("--model", "--data"))
    check_outputs_differ(args, outputs_to_check(args, ("--out",)), ("--data", "--model"))
    _check_writable(args.out, "--out")
    if args.dask is not None:  # the model file is read once; its bytes go to the workers as they are
        # restoring a third-party model (and its probe extension) runs the plugin: the command in a worker
        parts = [] if args.in_process else third_party_parts(model_ids(read_metadata(args.model)))
        code = in_worker(args, parts, f"apply of {Path(args.model).name} on Dask")
        if code is not None:
            return code
        written, n, seconds = apply_on_dask(args, Path(args.model).read_bytes(), console)
        console.flush_notes()
        console.info(f"model from {Path(args.model).name} applied on Dask to {n:,} rows in "
                     f"{format_seconds(seconds)}; wrote {written}")
        return EXIT_OK
    meta = read_metadata(args.model)
    algo_id = str(meta["algorithm"])
    # a third-party plugin's model is read and extended in a worker process, as its fit runs:
    # even restoring it runs the plugin's code
    isolate = not args.in_process and bool(third_party_parts(model_ids(meta)))
    est = None if isolate else load_model_with_metadata(args.model)[0]
    train = meta.get("training_data") or {}
    label_column = args.label_column
    if label_column is None and has_column(args.data, train.get("label_name")):
        label_column = train["label_name"]  # kept in the output, as 'run --extend' keeps it
        console.note(f"the training data's label column '{label_column}' is kept in the output")
    options = _chunk_options(args.data, label_column, _pairs(args.data_option, "--data-option"))
    first = args.data if args.data.startswith("sample:") else str(data_parts(args.data)[0])
    options = apply_loading_options(args, _source_options(first), est, options)
    progress = console.progress(f"{algo_id} extend")
    try:
        if not isolate:
            rep = apply_h5ad(args, est, extend_source(est, args.data, options=options, **apply_output(args),
                                                      train_feature_names=train.get("feature_names"), progress=progress,
                                                      chunk_rows=args.chunk_rows or 50_000, escape_formulas=args.escape_formulas,
                                                      metas=args.metas))
        else:
            try:
                rep = apply_in_subprocess(args.model, algo_id, args.data, options=options, out=isolated_out(args, algo_id),
                                          train_feature_names=train.get("feature_names"),
                                          chunk_rows=args.chunk_rows or 50_000, progress=progress,
                                          unaffected=NOTHING_WRITTEN, escape_formulas=args.escape_formulas, metas=args.metas)
            except PluginProcessError as exc:
                raise nothing_written(algo_id, exc) from None
    finally:
        console.end_progress()
    imputes = options.get("missing") == "keep" and est is not None and chain_imputes(getattr(est, "steps", ()))
    for note in imputed_notes(rep.notes, imputes):
        if not note.startswith(("Read ", "Reading ")):
            console.note(note)
    console.flush_notes()
    parts = f"{len(rep.parts)} parts of " if len(rep.parts) > 1 else ""
    name = Path(args.data).stem if len(rep.parts) == 1 else args.data
    console.info(f"{algo_id} model from {Path(args.model).name} applied to {parts}{name} "
                 f"({rep.n_rows:,} points, {rep.n_chunks:,} chunk(s)) in {format_seconds(rep.seconds)}; peak memory "
                 f"{rep.peak_memory_mb:,.0f} MB" + (f"; wrote {rep.n_rows:,} rows to {args.out}" if args.out != "-" else ""))
    if rep.correct is not None:
        console.info(f"accuracy on {name}: {rep.accuracy:.4f} "
                     f"({rep.correct[0]:,} of {rep.correct[1]:,} correct)")
    return EXIT_OK


def _chunk_options(source: str, label_column, pairs) -> dict:
    """The loader options (--data-option, --label-column) for the parts of ``source``."""

    first = source if source.startswith("sample:") else str(data_parts(source)[0])
    return loader_options(first, source, label_column, pairs)


def loader_options(path: str, source: str, label_column, pairs) -> dict:
    """The options of the loader (or sample) reading ``path``: --data-option pairs parsed with its
    constraints, and --label-column as its label column (or .npz label array)."""
    constraints, owner = _source_options(path)
    options = parse_values(constraints, pairs, owner)
    if label_column is not None:
        names = {p.name for p in constraints}
        key = "label_column" if "label_column" in names else "label_array" if "label_array" in names else None
        if key is None:
            raise UsageError(f"--label-column does not apply to {source} ({owner} has no label column)")
        options[key] = next(p for p in constraints if p.name == key).parse(label_column)
    return options


def _evaluate(args, cls, est, ds, y, console) -> str:
    """--cv K / --holdout F: the evaluation's report (one accuracy line, then per class); a copy of
    ``est`` (with --prep: the chain and the classifier) is fitted on each training part."""

    if cls.kind != "classification":
        raise UsageError(f"--cv and --holdout evaluate classifiers; {cls.id} is an {cls.kind} algorithm"
                         if cls.kind == "embedding" else
                         f"--cv and --holdout evaluate classifiers; {cls.id} is a {cls.kind} algorithm")
    if args.cv and args.holdout:
        raise UsageError("give --cv K or --holdout FRACTION, not both")
    if args.holdout is not None and not 0.0 < args.holdout < 1.0:
        raise UsageError(f"--holdout must be a fraction between 0 and 1, got {args.holdout}")
    method = KFOLD if args.cv else HOLDOUT
    res, _ = _timed(console, f"{cls.id} evaluation",
                    lambda progress: evaluate(est, ds, y, method, n_splits=args.cv or 5,
                                              test_fraction=args.holdout or 0.25, random_state=args.sample_seed,
                                              progress=progress), args.data)
    lines = [res.summary()]
    for k, c in enumerate(res.classes):
        lines.append(f"  class {c}: precision {res.precision[k]:.3f}, recall {res.recall[k]:.3f} "
                     f"({int(res.support[k])} test rows)")
    return "\n".join(lines)


def _accuracy(predicted, truth) -> str:
    eq = same_labels(predicted, truth)
    return f"{eq.mean():.4f} ({int(eq.sum()):,} of {eq.size:,} correct)"
