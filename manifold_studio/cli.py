"""The ``manifold-studio`` command line.

::

    manifold-studio                      start the GUI (also: manifold-studio gui)
    manifold-studio list [--json] [-v]   algorithms by kind with their parameters, loaders,
                                         sample data sets and plugin failures
    manifold-studio run ALGO --data FILE|sample:NAME [--param NAME=VALUE ...]
                        [--label-column C] [--data-option NAME=VALUE ...]
                        [--extend FILE --extend-out FILE] --out FILE [--save-model FILE]
    manifold-studio apply --model FILE --data FILE --out FILE
    manifold-studio --self-test          check that this installation works (self_test.py)

Results are CSV files with a header (``-`` writes to standard output). Bad input (unknown
algorithm or parameter, invalid value, missing or unreadable file, unusable data) exits
with status 2 and one line ``manifold-studio: error: ...`` on standard error; Ctrl-C exits
with 130. Qt is imported only when the GUI starts.
"""
from __future__ import annotations

import argparse
import csv
import importlib
import json
import os
import sys
import textwrap
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from manifold_studio.result_table import cell_text, result_table

PROG = "manifold-studio"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "MANIFOLD_STUDIO_DEBUG"


class UsageError(Exception):
    """Bad command-line input: reported on one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing the usage and exiting."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------
# output helpers
# --------------------------------------------------------------------------------------
class _Console:
    """Info lines (stdout, or stderr when a result goes to stdout), data notes and progress.

    Notes (rows dropped, columns left out, ...) are held back and printed to stderr only when
    the command succeeds, so a failing command prints exactly one error line.
    """

    def __init__(self, quiet: bool = False, info_to_stderr: bool = False):
        self.quiet = quiet
        self.info_stream = sys.stderr if info_to_stderr else sys.stdout
        self.tty = _isatty(sys.stderr)
        self.notes: list[str] = []

    def info(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.info_stream, flush=True)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def flush_notes(self) -> None:
        for text in self.notes:  # a text may carry its own prefix ("warning: ...")
            print(text if text.startswith("warning: ") else f"note: {text}", file=sys.stderr, flush=True)
        self.notes.clear()

    def progress(self, label: str):
        """A Progress for the algorithms: a self-erasing line on a terminal, else nothing."""
        if self.quiet or not self.tty:
            return None
        from manifold_studio.algorithms.progress import CallbackProgress

        def show(fraction: float, message: str) -> None:
            line = f"{label}: {fraction * 100:3.0f}% {message}"[:_columns() - 1]
            sys.stderr.write("\r\x1b[K" + line)
            sys.stderr.flush()

        return CallbackProgress(on_progress=show, min_interval=0.1)

    def end_progress(self) -> None:
        if not self.quiet and self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def _columns() -> int:
    try:
        return max(20, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return 80


def _seconds(t: float) -> str:
    return f"{t:.3f} s" if t < 10 else f"{t:.1f} s"


def write_csv(path: str, header: list[str], columns: list[np.ndarray]) -> None:
    """Write columns as CSV with a header; ``-`` is standard output; files are replaced atomically."""
    n = len(columns[0]) if columns else 0

    def emit(fh):
        writer = csv.writer(fh, lineterminator="\n")
        writer.writerow(header)
        for i in range(n):
            writer.writerow([cell_text(c[i]) for c in columns])

    if path == "-":
        emit(sys.stdout)
        sys.stdout.flush()
        return
    from manifold_studio.fileio import atomic_write

    folder = Path(path).parent if str(Path(path).parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"cannot write {path}: the folder {folder} does not exist")
    atomic_write(path, emit, binary=False)


def _check_writable(path: str | None, flag: str) -> None:
    if path is None or path == "-":
        return
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise UsageError(f"{flag} {path}: the folder {folder} does not exist")
    if target.is_dir():
        raise UsageError(f"{flag} {path} is a folder; give a file name")


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
    from manifold_studio.errors import InvalidParameterError

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
    from manifold_studio.plugins import get_host

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
    import manifold_studio as ms
    from manifold_studio.errors import DataError

    try:
        return ms._host().loader_for(source) is not None
    except DataError:
        return False


def load_dataset(source: str, label_column: str | None = None,
                 data_options: list[tuple[str, str]] | None = None, console: _Console | None = None,
                 label_optional: bool = False):
    """Load ``sample:NAME`` or a file, with --label-column and --data-option values."""
    import manifold_studio as ms
    from manifold_studio.errors import DataError

    is_sample = source.startswith("sample:")
    if not is_sample and not Path(source).exists():
        raise DataError(f"File not found: {source}")
    if not is_sample and Path(source).is_dir() and not _folder_loader(source):
        raise DataError(f"{source} is a folder with no images; give a data file or a folder of images")
    constraints, owner = _source_options(source)
    options = parse_values(constraints, data_options or [], owner)
    if label_column is not None:
        names = {p.name for p in constraints}
        key = "label_column" if "label_column" in names else "label_array" if "label_array" in names else None
        if key is None:
            raise UsageError(f"--label-column does not apply to {source} ({owner} has no label column)")
        options[key] = next(p for p in constraints if p.name == key).parse(label_column)
    try:
        ds = ms.load_data(source, **options)
    except DataError:
        if not (label_optional and label_column is not None):
            raise
        # a file to extend to may lack the training file's label column: read it without one
        options.pop("label_column", None)
        options.pop("label_array", None)
        ds = ms.load_data(source, **options)
        if console:
            console.note(f"{Path(source).name} has no label column '{label_column}': read without labels.")
    if console:
        for line in ds.report[1:] if ds.report and ds.report[0].startswith("Read ") else ds.report:
            console.note(line)
    return ds


def _align_features(ds, train_names: list[str] | None, n_features: int, console: _Console):
    """The matrix of ``ds`` with columns in the training order (by name when possible)."""
    from manifold_studio.out_of_core import align_features

    X, note = align_features(ds, train_names, n_features)
    if note:
        console.note(note)
    return X


def _training_result(est, X):
    for attr in ("embedding_", "labels_"):
        value = getattr(est, attr, None)
        if value is not None:
            return np.asarray(value)
    return np.asarray(est.extend(X))


# --------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------
def cmd_list(args) -> int:
    import manifold_studio as ms
    from manifold_studio.algorithms import KINDS
    from manifold_studio.plugins import get_host

    host = get_host()
    if args.json:
        data = {
            "version": ms.__version__,
            "algorithms": {kind: [
                {"id": cls.id, "name": cls.name, "help": cls.help,
                 "params": [_jsonable_param(p) for p in cls.params]}
                for _, cls in sorted(host.algorithms.items()) if cls.kind == kind] for kind in KINDS},
            "loaders": [{"id": l.id, "name": l.name, "extensions": list(l.extensions),
                         "options": [_jsonable_param(p) for p in l.options]}
                        for _, l in sorted(host.loaders.items())],
            "samples": [{"id": s.id, "name": s.name, "description": s.description,
                         "options": [_jsonable_param(p) for p in s.options]}
                        for _, s in sorted(host.samples.items())],
            "failures": [{"plugin": f.plugin, "stage": f.stage, "error": f.error} for f in host.failures],
            "disabled": list(host.disabled),
        }
        print(json.dumps(data, indent=2, default=str))
        return EXIT_OK

    out = []
    width = _columns() if _isatty(sys.stdout) else 100
    wrap = lambda text, indent: textwrap.fill(text, width=width, initial_indent=indent,  # noqa: E731
                                              subsequent_indent=indent)
    out.append(f"Manifold Studio {ms.__version__}")
    out.append("")
    out.append("Algorithms")
    for kind in KINDS:
        classes = [cls for _, cls in sorted(host.algorithms.items()) if cls.kind == kind]
        out.append(f"  {kind} ({len(classes)})")
        if not classes:
            out.append("    (none)")
        for cls in classes:
            out.append(f"    {cls.id} — {cls.name}")
            if args.verbose and cls.help:
                out.append(wrap(cls.help, " " * 8))
            out.extend(_param_lines(cls.params, " " * 8, args.verbose, wrap))
    out.append("")
    out.append("Loaders (--data FILE)")
    for _, loader in sorted(host.loaders.items()):
        out.append(f"    {loader.id} — {loader.name}: {', '.join(loader.extensions) or 'a folder'}")
        out.extend(_param_lines(loader.options, " " * 8, args.verbose, wrap))
    if not host.loaders:
        out.append("    (none)")
    out.append("")
    out.append("Sample data sets (--data sample:NAME)")
    for _, sample in sorted(host.samples.items()):
        out.append(f"    {sample.id} — {sample.name}")
        if args.verbose and sample.description:
            out.append(wrap(sample.description, " " * 8))
        out.extend(_param_lines(sample.options, " " * 8, args.verbose, wrap))
    if not host.samples:
        out.append("    (none)")
    if host.failures or host.disabled:
        out.append("")
        out.append("Plugin problems")
        for failure in host.failures:
            out.append(f"    {failure.plugin} ({failure.stage}): {failure.error}")
        for name in host.disabled:
            out.append(f"    {name}: disabled (third-party plugins are off)")
    print("\n".join(out))
    return EXIT_OK


def _jsonable_param(p) -> dict:
    d = p.to_dict()
    d["default"] = p.format(p.default)
    return d


def _param_lines(params, indent: str, verbose: bool, wrap) -> list[str]:
    lines = []
    if not params:
        return lines
    name_width = max(len(p.name) for p in params)
    for p in params:
        lines.append(f"{indent}{p.name:<{name_width}}  = {p.format(p.default):<8} {p.describe()}")
        if verbose and p.help:
            lines.append(wrap(p.help, indent + " " * (name_width + 4)))
    return lines


def _timed(console: _Console, label: str, func, source: str):
    """(func(progress), seconds); data errors are prefixed with the data source."""
    from manifold_studio.errors import DataError

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
    import manifold_studio as ms
    from manifold_studio.errors import DataError

    console = _Console(args.quiet, info_to_stderr="-" in (args.out, args.extend_out))
    cls = ms.algorithm_class(args.algorithm)
    params = parse_values(cls.params, _pairs(args.param, "--param"), cls.id)
    est = ms.get_algorithm(cls.id, **params)
    if (args.extend is None) != (args.extend_out is None):
        raise UsageError("--extend FILE and --extend-out FILE go together")
    if args.out == "-" and args.extend_out == "-":
        raise UsageError("only one of --out and --extend-out can be '-' (standard output)")
    for flag, path in (("--out", args.out), ("--extend-out", args.extend_out),
                       ("--save-model", args.save_model)):
        _check_writable(path, flag)
    if args.extend is not None and not args.extend.startswith("sample:") and not Path(args.extend).exists():
        raise DataError(f"File not found: {args.extend}")

    if args.dask is not None:
        from manifold_studio.cli_dask import run_on_dask

        written, n, m, seconds = run_on_dask(args, est, console)
        console.flush_notes()
        console.info(f"{cls.id}: fitted on a sample of {m:,} of {n:,} rows drawn by Dask and extended to all "
                     f"on Dask in {_seconds(seconds)}; wrote {written}")
        return EXIT_OK

    # read everything first, compute, and write only when all of it worked
    data_options = _pairs(args.data_option, "--data-option")
    ds = load_dataset(args.data, args.label_column, data_options, console)
    y = ds.labels if cls.requires_labels else None
    if cls.requires_labels and y is None:
        raise DataError(f"{cls.id} is a {cls.kind} algorithm and needs labels, but {ds.name} has none: "
                        "choose the label column with --label-column.")
    new = X_new = None
    if args.extend is not None:
        new = load_dataset(args.extend, args.label_column, data_options, console, label_optional=True)
        X_new = _align_features(new, ds.feature_names, ds.n_features, console)

    evaluation = _evaluate(args, cls, params, ds, y, console) if (args.cv or args.holdout) else None
    fitted_mask = None
    if args.fit_sample is not None:
        from manifold_studio.sample_fit import fit_on_sample

        sampled, fit_time = _timed(
            console, f"{cls.id} on a sample",
            lambda progress: fit_on_sample(est, ds.X, args.fit_sample, y=y, random_state=args.sample_seed,
                                           progress=progress, clone=False), args.data)
        result, fitted_mask = sampled.output, sampled.fitted_mask
    else:
        _, fit_time = _timed(console, cls.id, lambda progress: est.fit(ds.X, y, progress=progress), args.data)
        result = _training_result(est, ds.X)
    if new is not None:
        ext, ext_time = _timed(console, f"{cls.id} extend",
                               lambda progress: est.extend(X_new, progress=progress), args.extend)
        ext = np.asarray(ext)

    header, columns = result_table(result, cls.id, cls.kind, ds.labels, ds.label_name)
    if fitted_mask is not None:
        header.append("fitted")
        columns.append(fitted_mask.astype(int))
    write_csv(args.out, header, columns)
    if new is not None:
        header, columns = result_table(ext, cls.id, cls.kind, new.labels, new.label_name)
        write_csv(args.extend_out, header, columns)
    if args.save_model is not None:
        from manifold_studio.model_io import save_model

        save_model(est, args.save_model, data=ds, extra={"fit_time_s": fit_time})

    for warning in getattr(est, "fit_warnings_", None) or ():
        console.note(f"warning: {warning}")
    console.flush_notes()
    if fitted_mask is not None:
        console.info(f"{cls.id}: fitted on a sample of {int(fitted_mask.sum()):,} of {ds.name} "
                     f"({ds.n_samples:,} × {ds.n_features}) and extended to all in {_seconds(fit_time)}")
    else:
        console.info(f"{cls.id}: fitted on {ds.name} ({ds.n_samples:,} × {ds.n_features}) in {_seconds(fit_time)}")
    if args.out != "-":
        console.info(f"wrote {_shape(result)} {_what(cls.kind)} to {args.out}")
    if cls.kind == "classification":
        console.info(f"training accuracy {_accuracy(result, y)}")
    if evaluation is not None:
        console.info(evaluation)
    if new is not None:
        console.info(f"extended to {new.name} ({new.n_samples:,} points) in {_seconds(ext_time)}"
                     + (f"; wrote {_shape(ext)} to {args.extend_out}" if args.extend_out != "-" else ""))
        if cls.kind == "classification" and new.labels is not None:
            console.info(f"accuracy on {new.name}: {_accuracy(ext, new.labels)}")
    if args.save_model is not None:
        console.info(f"saved the fitted model to {args.save_model}")
    return EXIT_OK


def cmd_apply(args) -> int:
    """Extend a saved model to a file, a folder of parts or a glob, chunk by chunk (bounded memory)."""
    from manifold_studio.model_io import load_model_with_metadata
    from manifold_studio.out_of_core import extend_source

    console = _Console(args.quiet, info_to_stderr=args.out == "-")
    _check_writable(args.out, "--out")
    est, meta = load_model_with_metadata(args.model)
    if args.dask is not None:
        from manifold_studio.cli_dask import apply_on_dask

        written, n, seconds = apply_on_dask(args, est, meta, console)
        console.flush_notes()
        console.info(f"{est.id} model from {Path(args.model).name} applied on Dask to {n:,} rows in "
                     f"{_seconds(seconds)}; wrote {written}")
        return EXIT_OK
    train = meta.get("training_data") or {}
    options = _chunk_options(args.data, args.label_column, _pairs(args.data_option, "--data-option"))
    label = f"{est.id} extend"
    progress = console.progress(label)
    try:
        rep = extend_source(est, args.data, options=options, out=args.out,
                            train_feature_names=train.get("feature_names"), chunk_rows=args.chunk_rows,
                            progress=progress)
    finally:
        console.end_progress()
    for note in rep.notes:
        if not note.startswith(("Read ", "Reading ")):
            console.note(note)
    console.flush_notes()
    parts = f"{len(rep.parts)} parts of " if len(rep.parts) > 1 else ""
    name = Path(args.data).stem if len(rep.parts) == 1 else args.data
    console.info(f"{est.id} model from {Path(args.model).name} applied to {parts}{name} "
                 f"({rep.n_rows:,} points, {rep.n_chunks:,} chunk(s)) in {_seconds(rep.seconds)}; peak memory "
                 f"{rep.peak_memory_mb:,.0f} MB" + (f"; wrote {rep.n_rows:,} rows to {args.out}" if args.out != "-" else ""))
    if rep.correct is not None:
        console.info(f"accuracy on {name}: {rep.accuracy:.4f} "
                     f"({rep.correct[0]:,} of {rep.correct[1]:,} correct)")
    return EXIT_OK


def _chunk_options(source: str, label_column, pairs) -> dict:
    """The loader options (--data-option, --label-column) for the parts of ``source``."""
    from manifold_studio.out_of_core import data_parts

    first = source if source.startswith("sample:") else str(data_parts(source)[0])
    constraints, owner = _source_options(first)
    options = parse_values(constraints, pairs, owner)
    if label_column is not None:
        names = {p.name for p in constraints}
        key = "label_column" if "label_column" in names else "label_array" if "label_array" in names else None
        if key is None:
            raise UsageError(f"--label-column does not apply to {source} ({owner} has no label column)")
        options[key] = next(p for p in constraints if p.name == key).parse(label_column)
    return options


def _evaluate(args, cls, params, ds, y, console) -> str:
    """--cv K / --holdout F: the evaluation's report (one accuracy line, then per class)."""
    from manifold_studio.evaluation import HOLDOUT, KFOLD, evaluate

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
                    lambda progress: evaluate((cls, params), ds.X, y, method, n_splits=args.cv or 5,
                                              test_fraction=args.holdout or 0.25, random_state=args.sample_seed,
                                              progress=progress), args.data)
    lines = [res.summary()]
    for k, c in enumerate(res.classes):
        lines.append(f"  class {c}: precision {res.precision[k]:.3f}, recall {res.recall[k]:.3f} "
                     f"({int(res.support[k])} test rows)")
    return "\n".join(lines)


def _accuracy(predicted, truth) -> str:
    from manifold_studio.algorithms.labels import same_labels

    eq = same_labels(predicted, truth)
    return f"{eq.mean():.4f} ({int(eq.sum()):,} of {eq.size:,} correct)"


def _shape(arr: np.ndarray) -> str:
    return " × ".join(f"{s:,}" for s in arr.shape)


def _what(kind: str) -> str:
    return {"embedding": "embedding", "clustering": "cluster labels",
            "classification": "predicted labels"}.get(kind, "result")


def cmd_gui(args) -> int:
    return start_gui(list(getattr(args, "gui_args", None) or []))


def start_gui(gui_argv: list[str]) -> int:
    """Import the GUI only now (the command line never imports Qt) and run it."""
    try:
        app = importlib.import_module("manifold_studio.gui.app")
    except ImportError as exc:
        _error(f"the GUI cannot start: {exc} (is PySide6-Essentials installed? the command line "
               "works without it: see 'manifold-studio --help')")
        return EXIT_INTERNAL
    try:
        return int(app.main(gui_argv) or 0)
    except SystemExit as exc:  # the GUI's own argument parser
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_USAGE)


# --------------------------------------------------------------------------------------
# entry point
# --------------------------------------------------------------------------------------
def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number >= 1, got {value}")
    return value


def build_parser() -> argparse.ArgumentParser:
    from manifold_studio import __version__

    parser = _Parser(prog=PROG, description="Dimensionality reduction, manifold learning and "
                     "clustering with out-of-sample extension. Without a command, starts the GUI.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true",
                        help=f"show tracebacks of unexpected errors (or set {DEBUG_ENV}=1)")
    parser.add_argument("--self-test", action="store_true",
                        help="check that this installation works (every algorithm, a project, the "
                        "window): one line per step, exit status 1 at the first failure")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("list", help="list algorithms, loaders, sample data sets and plugin failures",
                       description="List the algorithms (by kind, with their parameters, defaults and "
                       "allowed values), the file loaders, the sample data sets and plugin failures.")
    p.add_argument("--json", action="store_true", help="machine-readable JSON output")
    p.add_argument("-v", "--verbose", action="store_true", help="also print help texts")
    p.set_defaults(func=cmd_list)

    data_help = "a data file (.csv, .tsv, .npy, .npz, ...) or sample:NAME (see 'manifold-studio list')"
    p = sub.add_parser("run", help="fit an algorithm and write the result as CSV",
                       description="Fit ALGO on the data and write its result (embedding, cluster or "
                       "predicted labels, plus the data's labels) as CSV with a header.")
    p.add_argument("algorithm", metavar="ALGO", help="algorithm id (see 'manifold-studio list')")
    p.add_argument("--data", required=True, metavar="FILE|sample:NAME", help=data_help)
    p.add_argument("--param", "-p", action="append", nargs="+", metavar="NAME=VALUE",
                   help="an algorithm parameter (repeatable)")
    p.add_argument("--label-column", metavar="C", help="the label column of a CSV file, by name or "
                   "0-based index (for .npz: the label array name)")
    p.add_argument("--data-option", "-D", action="append", nargs="+", metavar="NAME=VALUE",
                   help="a loader or sample option, e.g. delimiter=tab, missing=error, n_samples=500")
    p.add_argument("--extend", metavar="FILE", help="also extend the fitted model to the points of FILE")
    p.add_argument("--extend-out", metavar="FILE", help="where to write the extension of --extend (CSV)")
    p.add_argument("--out", "-o", required=True, metavar="FILE", help="result CSV ('-' for standard output)")
    p.add_argument("--save-model", metavar="FILE", help="save the fitted model (.npz) for 'apply'")
    p.add_argument("--fit-sample", type=_positive_int, metavar="M",
                   help="fit on M randomly chosen points and extend the model to all the others "
                   "(the output gets a 'fitted' column: 1 for the fitted points)")
    p.add_argument("--sample-seed", type=int, default=0, metavar="SEED",
                   help="random seed choosing the points of --fit-sample (default 0)")
    p.add_argument("--cv", type=_positive_int, metavar="K",
                   help="classifiers: also estimate the accuracy by stratified K-fold cross-validation "
                   "(per-class precision and recall, confusion matrix)")
    p.add_argument("--holdout", type=float, metavar="FRACTION",
                   help="classifiers: also estimate the accuracy on a stratified hold-out of this "
                   "fraction of the rows (e.g. 0.25)")
    p.add_argument("--dask", nargs="?", const="", metavar="SCHEDULER",
                   help="fit on the --fit-sample rows drawn by Dask and extend to all rows on Dask: a "
                   "scheduler address, or none for a local cluster with one worker per core (needs "
                   "pip install \"manifold-studio[dask]\"; data: Parquet, .npy parts, CSV, Zarr)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only data notes and errors")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("apply", help="extend a saved model to the points of a data file",
                       description="Load a model saved with 'run --save-model' and extend it to the "
                       "points of a data file, a folder of parts (.npy/CSV files) or a glob pattern "
                       "(quote it), chunk by chunk with bounded memory; write the result as CSV or .npy.")
    p.add_argument("--model", required=True, metavar="FILE", help="a model file written by --save-model")
    p.add_argument("--data", required=True, metavar="FILE|sample:NAME", help=data_help)
    p.add_argument("--label-column", metavar="C", help="the label column of the data, if any")
    p.add_argument("--data-option", "-D", action="append", nargs="+", metavar="NAME=VALUE",
                   help="a loader option, e.g. delimiter=tab")
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the result: CSV (with the data's labels, if any), .npy (the result only) or '-' "
                   "(CSV on standard output); written as the chunks go")
    p.add_argument("--chunk-rows", type=_positive_int, default=50_000, metavar="N",
                   help="rows read and extended at a time (memory is bounded by N; default 50,000)")
    p.add_argument("--dask", nargs="?", const="", metavar="SCHEDULER",
                   help="extend on Dask: a scheduler address, or none for a local cluster with one worker "
                   "per core (data: Parquet, .npy parts, CSV, Zarr; out: .parquet, .npy, .csv or a folder "
                   "of .npy parts)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only data notes and errors")
    p.set_defaults(func=cmd_apply)

    p = sub.add_parser("gui", help="start the graphical application (the default); "
                       "'manifold-studio gui --help' lists its options", add_help=False)
    p.add_argument("gui_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_gui)

    from manifold_studio.cli_plugins import add_plugins_parser
    add_plugins_parser(sub)  # manifold-studio plugins list|install|uninstall|enable|disable
    return parser


def _one_line(text: str) -> str:
    return " ".join(str(text).split())


def _error(message: str) -> None:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status."""
    from manifold_studio.errors import FitCancelled, ManifoldStudioError

    argv = list(sys.argv[1:] if argv is None else argv)
    debug = os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
    try:
        if argv[:1] == ["--self-test"]:  # everything after it belongs to the self-test's options
            from manifold_studio.self_test import main as self_test

            return self_test(argv[1:])
        if argv[:1] == ["gui"]:  # everything after 'gui' belongs to the GUI's own options
            return start_gui(argv[1:])
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
        debug = debug or args.debug
        if args.self_test:
            from manifold_studio.self_test import main as self_test

            return self_test([])
        if args.command is None:
            return start_gui([])
        import warnings

        with warnings.catch_warnings():
            # fit warnings are kept by the estimators (fit_warnings_) and printed as notes, once,
            # without Python's file:line prefix
            if not debug:
                warnings.simplefilter("ignore")
            return args.func(args)
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    except FitCancelled:
        _error("cancelled")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `manifold-studio list | head -3`: the reader went away
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_INTERNAL
    except (UsageError, ManifoldStudioError, ValueError) as exc:
        if debug:
            raise
        _error(str(exc) or type(exc).__name__)
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        _error(f"{where}{exc.strerror or exc}")
        return EXIT_USAGE
    except MemoryError:
        _error("out of memory: try a smaller data set, or fit on a sample and extend to the rest")
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 - one line, no traceback, unless debugging
        if debug:
            raise
        _error(f"internal error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
