"""The ``score`` command: Test & Score of several classifiers on the same folds
(:func:`manifold_studio.evaluation.compare_learners`), printed as a table, optionally written
as CSV.

    manifold-studio score perceptron linear_classifier svm --data F --label-column C --cv 5 \\
        --param linear_classifier.loss=logistic --param 3.kernel=rbf --repeats 2 --seed 0 --out t.csv \
        --prep standardize --prep select_columns:exclude=year

``--prep``, ``--role`` and ``--id-column`` are ``run``'s (:mod:`manifold_studio.cli.prep_options`):
every learner is the preparation chain followed by its classifier, fitted on each training part.

``--param PREFIX.NAME=VALUE``: PREFIX is an algorithm id (every learner of that algorithm) or a
learner's 1-based position on the command line (to give two copies of one algorithm different
settings).
"""
from __future__ import annotations

import numpy as np

import manifold_studio as ms
from manifold_studio.analysis.compare_learners import METRICS, TITLES
from manifold_studio.cli.commands import _check_writable, _pairs, _timed, load_dataset, parse_values, write_csv
from manifold_studio.cli.console import EXIT_OK, Console, UsageError
from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.cli.prep_options import add_arguments as add_prep_arguments
from manifold_studio.cli.prep_options import parse_prep, parse_roles, with_chain
from manifold_studio.cli.worker_command import add_in_process_argument, in_worker
from manifold_studio.errors import DataError
from manifold_studio.evaluation import compare_learners
from manifold_studio.session.isolated_fit import third_party_parts

__all__ = ["add_score_parser", "cmd_score"]


def add_score_parser(sub, data_help: str) -> None:
    p = sub.add_parser("score", help="Test & Score: compare classifiers on the same cross-validation folds",
                       description="Fit every classifier ALGO on the same folds and print one row per "
                       "learner: accuracy, balanced accuracy, macro F1, precision and recall, ROC AUC "
                       "(one-vs-rest for several classes), log-loss (with probabilities), fit and predict "
                       "time, each as mean ± spread over the folds; then the paired comparison (folds won).")
    p.add_argument("algorithms", nargs="+", metavar="ALGO", help="classifier ids (see 'manifold-studio list')")
    p.add_argument("--data", required=True, metavar="FILE|sample:NAME", help=data_help)
    p.add_argument("--label-column", metavar="C", help="the label column, by name or 0-based index")
    p.add_argument("--data-option", "-D", action="append", nargs="+", metavar="NAME=VALUE",
                   help="a loader or sample option, e.g. delimiter=tab")
    p.add_argument("--param", "-p", action="append", nargs="+", metavar="ALGO.NAME=VALUE",
                   help="a learner parameter: ALGO is an algorithm id or the learner's 1-based position")
    add_prep_arguments(p, prep=True)  # --prep (every learner is the chain + its classifier), --role, --id-column
    p.add_argument("--cv", metavar="K|loo",
                   help="stratified K-fold (scikit-learn's folds; default 5), or 'loo' for leave-one-out")
    p.add_argument("--repeats", type=int, default=1, metavar="N", help="repeat the K-fold (or hold-out) N times")
    p.add_argument("--holdout", type=float, metavar="FRACTION",
                   help="a stratified hold-out of this fraction of the rows instead of K-fold")
    p.add_argument("--seed", type=int, default=0, metavar="S", help="random seed of the folds (default 0)")
    p.add_argument("--compare-on", default="accuracy", choices=METRICS,
                   help="the figure of the paired comparison (default accuracy)")
    p.add_argument("--out", "-o", metavar="FILE", help="also write the table, in the format its extension names: .csv, .tsv or "
                   ".parquet ('-': CSV on standard output)")
    add_in_process_argument(p)
    p.add_argument("--quiet", "-q", action="store_true", help="print only the table, notes and errors")
    p.set_defaults(func=cmd_score)


def _cv_value(text: str):
    if text.strip().lower() in ("loo", "leave-one-out", "leave_one_out"):
        return "loo"
    try:
        k = int(text)
    except ValueError:
        raise UsageError(f"--cv expects a number of folds or 'loo', got '{text}'") from None
    if k < 2:
        raise UsageError(f"--cv expects at least 2 folds, got {k}")
    return k


def learner_params(algorithms: list[str], pairs: list[tuple[str, str]], kind: str = "classification",
                   noun: str = "a classifier", why: str = "score compares classifiers") -> list[tuple[str, dict]]:
    """``[(id, params)]``, the ``--param PREFIX.NAME=VALUE`` pairs parsed with each algorithm's
    constraints; every algorithm must be of ``kind`` (else a usage error ending in ``why``)."""
    classes = [ms.algorithm_class(a) for a in algorithms]
    for a, cls in zip(algorithms, classes):
        if cls.kind != kind:
            raise UsageError(f"{a} is not {noun} ({cls.kind}): {why}")
    texts: list[list[tuple[str, str]]] = [[] for _ in algorithms]
    for name, value in pairs:
        prefix, dot, pname = name.partition(".")
        if not dot or not pname:
            raise UsageError(f"--param expects ALGO.NAME=VALUE (ALGO an id or a position), got '{name}={value}'")
        if prefix.isdigit():
            pos = int(prefix)
            if not 1 <= pos <= len(algorithms):
                raise UsageError(f"--param {name}: position {pos} is not between 1 and {len(algorithms)}")
            targets = [pos - 1]
        else:
            targets = [i for i, cls in enumerate(classes) if cls.id == prefix]
            if not targets:
                raise UsageError(f"--param {name}: '{prefix}' is not one of the learners "
                                 f"({', '.join(algorithms)})")
        for i in targets:
            texts[i].append((pname, value))
    return [(cls.id, parse_values(cls.params, t, cls.id)) for cls, t in zip(classes, texts)]


def learner_names(specs) -> list[str]:
    names = []
    for i, (algo, params) in enumerate(specs):
        same = [j for j, (a, _) in enumerate(specs) if a == algo]
        names.append(algo if len(same) == 1 else f"{algo} #{i + 1}")
    return names


def cmd_score(args) -> int:
    console = Console(args.quiet, info_to_stderr=args.out == "-")
    if args.cv is not None and args.holdout is not None:
        raise UsageError("--cv and --holdout are two schemes: give one of them")
    cv = _cv_value("5" if args.cv is None else args.cv)
    if args.repeats < 1:
        raise UsageError(f"--repeats expects a whole number >= 1, got {args.repeats}")
    if args.holdout is not None and not 0.0 < args.holdout < 1.0:
        raise UsageError(f"--holdout expects a fraction between 0 and 1, got {args.holdout}")
    specs = learner_params(args.algorithms, _pairs(args.param, "--param"))
    steps = parse_prep(args.prep)
    parts = third_party_parts([a for a, _ in specs] + [s for s, _ in steps])
    code = in_worker(args, parts, "Test & Score")
    if code is not None:
        return code
    _check_writable(args.out, "--out")
    ds = load_dataset(args.data, args.label_column, _pairs(args.data_option, "--data-option"), console,
                      roles=parse_roles(args.role), id_column=args.id_column,
                      keep_missing=chain_imputes([s for s, _ in steps]))
    if ds.labels is None:
        raise DataError(f"{ds.name} has no labels: choose the label column with --label-column.")
    names = learner_names(specs)
    # each learner as 'run --prep' fits it: the chain + the classifier, fitted on each training part
    learners = [with_chain(steps, ms.get_algorithm(algo, **params)) for algo, params in specs]
    comparison, seconds = _timed(
        console, "Test & Score",
        lambda progress: compare_learners(learners, ds, cv=cv, repeats=args.repeats, holdout=args.holdout,
                                          seed=args.seed, names=names, progress=progress),
        args.data)
    console.flush_notes()
    out = console.info_stream
    scheme = (f"stratified hold-out of {args.holdout:g}" if args.holdout is not None else
              "leave-one-out" if cv == "loo" else f"stratified {cv}-fold")
    if args.repeats > 1 and cv != "loo":
        scheme += f", {args.repeats} repeats"
    print(f"Test & Score on {ds.name} ({ds.X.shape[0]:,} rows, {len(comparison.classes)} classes): "
          f"{scheme}, seed {args.seed}, {len(comparison.folds)} fold(s), mean ± spread over folds; preparation "
          f"(fitted on each training part): {comparison.preparation()}", file=out)
    print(comparison.format_table(), file=out)
    wins, paired = comparison.wins(args.compare_on)
    if len(names) > 1:
        print(f"\nPaired comparison on {TITLES[args.compare_on]}: folds where the row learner beats the column "
              "learner (of the folds both scored)", file=out)
        width = max(len(n) for n in names)
        cols = [max(8, len(n)) for n in names]
        print(" " * width + "  " + "  ".join(n.rjust(w) for n, w in zip(names, cols)), file=out)
        for i, n in enumerate(names):
            cells = [("—" if i == j else f"{wins[i, j]}/{paired[i, j]}").rjust(cols[j]) for j in range(len(names))]
            print(n.ljust(width) + "  " + "  ".join(cells), file=out)
    for r in comparison.learners:
        for msg in r.failures:
            print(f"warning: {msg}", file=out)
        if r.auc_note:
            print(f"note: {r.auc_note}", file=out)
    print(f"Time: {seconds:.1f} s", file=out)
    if args.out:
        header = ["learner"] + [f"{m}{s}" for m in METRICS for s in ("", "_spread")] + ["folds_failed"]
        rows = comparison.table()
        columns = [np.array([r["learner"] for r in rows], dtype=object)]
        for m in METRICS:
            columns.append(np.array([r[m] for r in rows]))
            columns.append(np.array([r[m + "_spread"] for r in rows]))
        columns.append(np.array([len(r.failures) for r in comparison.learners]))
        write_csv(args.out, header, columns)
        if args.out != "-":
            console.info(f"wrote {args.out}")
    return EXIT_OK
