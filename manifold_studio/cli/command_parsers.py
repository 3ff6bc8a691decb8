"""The parsers of the commands whose machinery is heavy (``score``, ``compare-clusterings``,
``script``, ``replay``; ``run`` and ``apply`` in :mod:`manifold_studio.cli.main`): each command's
function is imported by name when the command runs (:func:`lazy_command`), so building the
parser, ``manifold-studio list`` and the window's start do not import evaluation, extension,
plotting, projects or scipy's statistics (issue 32; ``benchmarks/bench_startup.py``)."""
from __future__ import annotations

import importlib

from manifold_studio.analysis.compare_learners import METRICS
from manifold_studio.cli.prep_options import add_arguments as add_prep_arguments
from manifold_studio.cli.worker_command import add_in_process_argument

__all__ = ["lazy_command", "add_score_parser", "add_compare_clusterings_parser", "add_project_parsers"]


def lazy_command(module: str, name: str):
    """``module.name`` (a command's function), imported when it is called."""
    def call(*args, **kwargs):
        return getattr(importlib.import_module(module), name)(*args, **kwargs)

    call.__name__ = call.__qualname__ = name
    call.__module__ = module
    return call


def _comparison_parser(sub, name: str, help_: str, description: str, ids_help: str, data_help: str,
                       label_help: str, what: str):
    """The parser of a command comparing several algorithms on one table: the ALGO ids, --data,
    --label-column, --data-option, --param (of each ``what``: learner or method) and the preparation
    chain's --prep, --role, --id-column (fitted before each ``what``)."""
    p = sub.add_parser(name, help=help_, description=description)
    p.add_argument("algorithms", nargs="+", metavar="ALGO", help=ids_help)
    p.add_argument("--data", required=True, metavar="FILE|sample:NAME", help=data_help)
    p.add_argument("--label-column", metavar="C", help=label_help)
    p.add_argument("--data-option", "-D", action="append", nargs="+", metavar="NAME=VALUE",
                   help="a loader or sample option, e.g. delimiter=tab")
    p.add_argument("--param", "-p", action="append", nargs="+", metavar="ALGO.NAME=VALUE",
                   help=f"a {what} parameter: ALGO is an algorithm id or the {what}'s 1-based position")
    add_prep_arguments(p, prep=True)
    return p


def _add_table_arguments(p) -> None:
    """--out (the table to a file), the worker choice and --quiet of a command that prints a table."""
    p.add_argument("--out", "-o", metavar="FILE", help="also write the table, in the format its extension names: .csv, .tsv, "
                   ".parquet or .feather/.arrow ('-': CSV on standard output)")
    add_in_process_argument(p)
    p.add_argument("--quiet", "-q", action="store_true", help="print only the table, notes and errors")


def add_score_parser(sub, data_help: str) -> None:
    p = _comparison_parser(
        sub, "score", "Test & Score: compare classifiers on the same cross-validation folds",
        "Fit every classifier ALGO on the same folds and print one row per learner: accuracy, balanced "
        "accuracy, macro F1, precision and recall, ROC AUC (one-vs-rest for several classes), log-loss (with "
        "probabilities), fit and predict time, each as mean ± spread over the folds; then the paired "
        "comparison (folds won).",
        "classifier ids (see 'manifold-studio list')", data_help, "the label column, by name or 0-based index",
        "learner")
    p.add_argument("--cv", metavar="K|loo",
                   help="stratified K-fold (scikit-learn's folds; default 5), or 'loo' for leave-one-out")
    p.add_argument("--repeats", type=int, default=1, metavar="N", help="repeat the K-fold (or hold-out) N times")
    p.add_argument("--holdout", type=float, metavar="FRACTION",
                   help="a stratified hold-out of this fraction of the rows instead of K-fold")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed of the folds (default 0)")
    p.add_argument("--compare-on", default="accuracy", choices=METRICS,
                   help="the figure of the paired comparison (default accuracy)")
    _add_table_arguments(p)
    p.set_defaults(func=lazy_command("manifold_studio.cli.score_command", "cmd_score"))


def add_compare_clusterings_parser(sub, data_help: str) -> None:
    p = _comparison_parser(
        sub, "compare-clusterings", "compare clustering methods over a range of k",
        "Fit every clustering method ALGO for every k and print one row per method and k: W (within-cluster "
        "inertia), B (between), H (homogeneity), S (separability), the Davies–Bouldin index, the mean "
        "silhouette, and the validation log-likelihood of the held-out rows (the method's own density, or "
        "the Gaussian mixture of its partition).",
        "clustering method ids with a number of clusters (see 'manifold-studio list')", data_help,
        "a label column to leave out of the features", "method")
    p.add_argument("--k", default="2:8", metavar="FROM:TO",
                   help="the k to try: FROM:TO (both included) or a list such as 2,3,5 (default 2:8)")
    p.add_argument("--holdout", type=float, default=0.25, metavar="FRACTION",
                   help="share of the rows held out for the validation log-likelihood (default 0.25; 0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the held-out split and of every method's random_state (default 0)")
    _add_table_arguments(p)
    p.set_defaults(func=lazy_command("manifold_studio.cli.cluster_compare_command",
                                         "cmd_compare_clusterings"))


def add_project_parsers(sub) -> None:
    """Add the ``script`` and ``replay`` commands to the main parser's sub-parsers."""
    p = sub.add_parser("script", help="write a Python script that reproduces a project",
                       description="Write a readable Python script that reproduces the project's runs with "
                       "the public API (loading with the same options, each run with its parameters and "
                       "seeds, evaluations) and writes each run's output as CSV named after the run.")
    p.add_argument("project", metavar="PROJECT.msproj", help="a project saved by the window")
    p.add_argument("--out", "-o", required=True, metavar="FILE.py", help="the script to write")
    p.set_defaults(func=lazy_command("manifold_studio.cli.project_commands", "cmd_script"))

    p = sub.add_parser("replay", help="apply a project's analysis to another file with the same columns",
                       description="Apply every saved model of the project to a new file (columns matched "
                       "by name) and write each run's output as CSV, named after the run "
                       "(e.g. run3_isomap.csv).")
    p.add_argument("project", metavar="PROJECT.msproj", help="a project saved by the window")
    p.add_argument("--data", required=True, metavar="FILE", help="the new data file")
    p.add_argument("--out-dir", required=True, metavar="FOLDER", help="where to write the outputs")
    p.add_argument("--no-metas", dest="metas", action="store_false",
                   help="leave the new file's meta columns out of the outputs (by default they follow the row id)")
    add_in_process_argument(p)
    p.add_argument("--quiet", "-q", action="store_true", help="print only notes and errors")
    p.set_defaults(func=lazy_command("manifold_studio.cli.project_commands", "cmd_replay"))
