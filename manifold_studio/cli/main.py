"""The ``manifold-studio`` command line.

::

    manifold-studio                      start the GUI (also: manifold-studio gui)
    manifold-studio list [--json] [-v]   algorithms by kind with their parameters, loaders,
                                         sample data sets and plugin failures
    manifold-studio run ALGO --data FILE|sample:NAME [--param NAME=VALUE ...]
                        [--label-column C] [--data-option NAME=VALUE ...]
                        [--extend FILE --extend-out FILE] --out FILE [--save-model FILE]
                        [--plot MAP.png|MAP.svg [--plot-size WxH]]
    manifold-studio apply --model FILE --data FILE --out FILE
    manifold-studio --self-test          check that this installation works (self_test.py)

Results are CSV files with a header (``-`` writes to standard output). Bad input (unknown
algorithm or parameter, invalid value, missing or unreadable file, unusable data) exits
with status 2 and one line ``manifold-studio: error: ...`` on standard error; Ctrl-C exits
with 130. A third-party plugin's algorithm or preparation step fits in a worker process (``score``,
``compare-clusterings`` and ``replay`` then run whole in one; ``--in-process`` opts out):
when that process dies, exits early or ends without a result, the run fails with status 1 and a
line naming the signal or exit code, and no output file is written. Qt is imported only when the GUI starts.
"""
from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
import textwrap
from typing import Sequence

import manifold_studio as ms
from manifold_studio.algorithms import KINDS
from manifold_studio.cli.command_parsers import (add_compare_clusterings_parser, add_project_parsers,
                                                 add_score_parser, lazy_command)
from manifold_studio.cli.h5ad_output import add_h5ad_argument
from manifold_studio.project.housekeeping import clean_own_folders
from manifold_studio.cli.console import (
    DEBUG_ENV,
    EXIT_INTERNAL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    PROG,
    Parser,
    UsageError,
    isatty,
    print_error,
    terminal_columns,
)
from manifold_studio.cli.plugin_commands import add_plugins_parser
from manifold_studio.cli import distance_option
from manifold_studio.cli.prep_options import add_arguments as add_prep_arguments, preprocessor_listing
from manifold_studio.cli.qt_libraries import missing_message, missing_qt_libraries, qt_platform
from manifold_studio.cli.window_probe import PROBE_ARGS, window_probe
from manifold_studio.cli.worker_command import report_done
from manifold_studio.errors import FitCancelled, ManifoldStudioError
from manifold_studio.plugins.host import get_host
from manifold_studio.plugins.probe import PROBE_FLAG
from manifold_studio.plugins.probe_child import child_main as plugin_probe


# imported when the command runs: a command's machinery (evaluation, extension, plotting,
# scipy's statistics) stays off the start-up of 'list' and the window (benchmarks/bench_startup.py)
cmd_run = lazy_command("manifold_studio.cli.commands", "cmd_run")
cmd_apply = lazy_command("manifold_studio.cli.commands", "cmd_apply")
self_test = lazy_command("manifold_studio.cli.self_test", "main")


def _plugin_process_errors() -> tuple[type, ...]:
    """(PluginProcessError,) once its module is loaded (only then can it have been raised)."""
    module = sys.modules.get("manifold_studio.session.isolated_fit")
    return (module.PluginProcessError,) if module is not None else ()


def cmd_list(args) -> int:
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
            "preprocessors": [{"id": c.id, "name": c.name, "help": c.help,
                               "params": [_jsonable_param(p) for p in c.params]}
                              for c in map(host.preprocessor_class, sorted(host.preprocessors))],
            "samples": [{"id": s.id, "name": s.name, "description": s.description,
                         "options": [_jsonable_param(p) for p in s.options]}
                        for _, s in sorted(host.samples.items())],
            "failures": [{"plugin": f.plugin, "stage": f.stage, "error": f.error, "quarantined": f.quarantined}
                         for f in host.failures],
            "disabled": list(host.disabled),
        }
        print(json.dumps(data, indent=2, default=str))
        return EXIT_OK

    out = []
    width = terminal_columns() if isatty(sys.stdout) else 100
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
    out.extend(preprocessor_listing(host, _param_lines, args.verbose, wrap))
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
            state = "quarantined" if failure.quarantined else failure.stage
            out.append(f"    {failure.plugin} ({state}): {failure.error}")
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
    # the defaults' column as wide as the widest default (up to 24 characters): columns stay aligned
    value_width = min(max(8, *(len(p.format(p.default)) for p in params)), 24)
    for p in params:
        lines.append(f"{indent}{p.name:<{name_width}}  = {p.format(p.default):<{value_width}} {p.describe()}")
        if verbose and p.help:
            lines.append(wrap(p.help, indent + " " * (name_width + 4)))
    return lines


#: the window's own options (manifold_studio.gui.app): given first, they start the window
GUI_OPTIONS = ("--screenshot", "--screenshot-timeout", "--size", "--sample", "--no-sample", "--algorithm")


def cmd_gui(args) -> int:
    return start_gui(list(getattr(args, "gui_args", None) or []))


def start_gui(gui_argv: list[str]) -> int:
    """Import the GUI only now (the command line never imports Qt) and run it; first check the
    system libraries Qt needs, so a bare machine gets the apt-get line instead of Qt's abort."""
    platform = qt_platform()
    missing = missing_qt_libraries(platform)
    if missing:
        print_error(missing_message(missing, platform))
        return EXIT_INTERNAL
    try:
        app = importlib.import_module("manifold_studio.gui.app")
    except ImportError as exc:
        print_error(f"the GUI cannot start: {exc} (is PySide6-Essentials installed? the command line "
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


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {2**32 - 1}, got {text[:40]!r}") from None
    if not 0 <= value < 2**32:
        raise argparse.ArgumentTypeError(f"expected a whole number from 0 to {2**32 - 1}, got {value}")
    return value


_NO_ESCAPE_HELP = ("write text cells exactly as they are; by default a label or header starting with =, +, -, @, "
                   "a tab or a carriage return gets a leading ' so that spreadsheets do not run it as a formula "
                   "(numbers are never changed)")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(prog=PROG, description="Dimensionality reduction, manifold learning and "
                     "clustering with out-of-sample extension. Without a command, starts the GUI.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {ms.__version__}")
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
    add_prep_arguments(p, prep=True, metas=True)
    p.add_argument("--distance-matrix", action="store_true", help=distance_option.HELP)
    p.add_argument("--extend", metavar="FILE", help="also extend the fitted model to the points of FILE")
    p.add_argument("--extend-out", metavar="FILE", help="where to write the extension of --extend (as --out)")
    p.add_argument("--out", "-o", required=True, metavar="FILE", help="the result, in the format its extension "
                   "names: .csv, .tsv, .npy (the result only), .parquet or .feather/.arrow ('-': CSV on standard output), or an "
                   "AnnData .h5ad file (embedding in obsm['X_ALGO'], labels in obs)")
    p.add_argument("--save-model", metavar="FILE", help="save the fitted model (.npz) for 'apply'")
    add_h5ad_argument(p)  # --out result.h5ad: obsm / obs of an AnnData file
    p.add_argument("--plot", metavar="FILE", help="also draw the map to FILE (.png or .svg): the first two "
                   "coordinates coloured by the data's labels, or cluster / predicted labels on the data's "
                   "2-D PCA map, with axes, a title and a legend")
    p.add_argument("--plot-size", metavar="WxH", help="size of --plot in pixels (default 1000x800)")
    p.add_argument("--fit-sample", type=_positive_int, metavar="M",
                   help="fit on M randomly chosen points and extend the model to all the others "
                   "(the output gets a 'fitted' column: 1 for the fitted points; in an .h5ad output "
                   "obs['ALGO_fitted'])")
    p.add_argument("--sample-seed", type=_seed, default=0, metavar="SEED",
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
    p.add_argument("--no-escape-formulas", dest="escape_formulas", action="store_false", help=_NO_ESCAPE_HELP)
    p.add_argument("--strict", action="store_true",
                   help="refuse data the loader had to change (a non-numeric column left out, rows with "
                   "missing values dropped, a text cell in a numeric column): without it they are notes")
    p.add_argument("--in-process", action="store_true",
                   help="fit a third-party plugin's algorithm or preparation step in this process (by default it fits in a worker "
                   "process, so that a crash in the plugin ends the run with a message, not the command)")
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
    add_prep_arguments(p, prep=False, metas=True)
    p.add_argument("--out", "-o", required=True, metavar="FILE",
                   help="the result, in the format its extension names: .csv, .tsv, .parquet or .feather/.arrow (with the "
                   "data's metas and labels, if any), .npy (the result only), .h5ad, or '-' (CSV on standard "
                   "output); written as the chunks go")
    add_h5ad_argument(p)
    p.add_argument("--chunk-rows", type=_positive_int, default=None, metavar="N",
                   help="rows read and extended at a time (memory is bounded by N; default 50,000)")
    p.add_argument("--dask", nargs="?", const="", metavar="SCHEDULER",
                   help="extend on Dask: a scheduler address, or none for a local cluster with one worker "
                   "per core (data: Parquet, .npy parts, CSV, Zarr; out: .parquet, .feather, .npy, .csv or a folder "
                   "of .npy parts)")
    p.add_argument("--no-escape-formulas", dest="escape_formulas", action="store_false", help=_NO_ESCAPE_HELP)
    p.add_argument("--in-process", action="store_true",
                   help="extend with a third-party plugin's model in this process (by default it runs in a "
                   "worker process, so that a crash in the plugin ends the command with a message)")
    p.add_argument("--quiet", "-q", action="store_true", help="print only data notes and errors")
    p.set_defaults(func=cmd_apply)

    add_score_parser(sub, data_help)  # manifold-studio score ALGO ALGO ... (Test & Score)
    add_compare_clusterings_parser(sub, data_help)  # manifold-studio compare-clusterings ALGO ... --k 2:8

    p = sub.add_parser("gui", help="start the graphical application (the default); "
                       "'manifold-studio gui --help' lists its options", add_help=False)
    p.add_argument("gui_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    p.set_defaults(func=cmd_gui)

    add_project_parsers(sub)  # manifold-studio script | replay
    add_plugins_parser(sub)  # manifold-studio plugins list|install|uninstall|enable|disable
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit status (recorded for a parent that runs this
    command as its worker process: :mod:`manifold_studio.cli.worker_command`)."""
    return report_done(_main(list(sys.argv[1:] if argv is None else argv)))


def _main(argv: list[str]) -> int:
    debug = os.environ.get(DEBUG_ENV, "").strip().lower() in {"1", "true", "yes", "on"}
    if argv[:1] == [PROBE_FLAG]:  # hidden: the frozen application acting as a plugin's import probe
        plugin_probe()
    clean_own_folders()  # stale temporaries of killed writes and installs (a day old, our names only)
    try:
        if argv == PROBE_ARGS:  # the self-test's window child: the window as a user starts it
            return window_probe()
        if argv[:1] == ["--self-test"]:  # everything after it belongs to the self-test's options
            return self_test(argv[1:])
        if argv[:1] == ["gui"]:  # everything after 'gui' belongs to the GUI's own options
            return start_gui(argv[1:])
        if argv and argv[0].split("=")[0] in GUI_OPTIONS:  # manifold-studio --screenshot X: the window's
            return start_gui(argv)
        try:
            args = build_parser().parse_args(argv)
        except SystemExit as exc:  # --help, --version
            return int(exc.code or 0) if not isinstance(exc.code, str) else EXIT_USAGE
        args.argv = argv   # a command may run again in a worker process (worker_command)
        debug = debug or args.debug
        if args.self_test:
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
        print_error("interrupted")
        return EXIT_INTERRUPTED
    except FitCancelled:
        print_error("cancelled")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # e.g. `manifold-studio list | head -3`: the reader went away
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return EXIT_INTERNAL
    except _plugin_process_errors() as exc:  # a plugin's worker process died: a failed run, nothing written
        if debug:
            raise
        print_error(f"the run failed: {exc}")
        return EXIT_INTERNAL
    except (UsageError, ManifoldStudioError, ValueError) as exc:
        if debug:
            raise
        print_error(str(exc) or type(exc).__name__)
        return EXIT_USAGE
    except OSError as exc:
        if debug:
            raise
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print_error(f"{where}{exc.strerror or exc}")
        return EXIT_USAGE
    except MemoryError:
        print_error("out of memory: try a smaller data set, or fit on a sample and extend to the rest")
        return EXIT_INTERNAL
    except Exception as exc:  # noqa: BLE001 - one line, no traceback, unless debugging
        if debug:
            raise
        print_error(f"internal error: {type(exc).__name__}: {exc} (set {DEBUG_ENV}=1 for the traceback)")
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


# the run and apply commands live in cli_commands.py (imported last: they use this module's console)
