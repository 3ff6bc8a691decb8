"""The ``compare-clusterings`` command: several clustering methods over a range of k with every
measure of seed 001 and seed 000's validation log-likelihood
(:func:`manifold_studio.evaluation.compare_clusterings`), printed as a table, optionally written
as CSV.

    manifold-studio compare-clusterings kmeans gmm hierarchical --data F --k 2:8 --seed 0 \\
        --param hierarchical.method=average --prep standardize --holdout 0.25 -o table.csv

``--param PREFIX.NAME=VALUE``: PREFIX is an algorithm id (every entry of that algorithm) or an
entry's 1-based position on the command line. The number of clusters is set by ``--k``.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.analysis.compare_clusterings import MEASURES, TITLES, compare_on_dataset, parse_k_range
from manifold_studio.cli.commands import _check_writable, _pairs, _timed, load_dataset, write_csv
from manifold_studio.cli.console import EXIT_OK, Console, UsageError
from manifold_studio.analysis.chain import chain_imputes
from manifold_studio.cli.prep_options import add_arguments as add_prep_arguments
from manifold_studio.cli.prep_options import parse_prep, parse_roles
from manifold_studio.cli.score_command import learner_names, learner_params
from manifold_studio.cli.worker_command import add_in_process_argument, in_worker
from manifold_studio.errors import InvalidParameterError
from manifold_studio.session.isolated_fit import third_party_parts

__all__ = ["add_compare_clusterings_parser", "cmd_compare_clusterings"]


def add_compare_clusterings_parser(sub, data_help: str) -> None:
    p = sub.add_parser("compare-clusterings", help="compare clustering methods over a range of k",
                       description="Fit every clustering method ALGO for every k and print one row per method "
                       "and k: W (within-cluster inertia), B (between), H (homogeneity), S (separability), "
                       "the Davies–Bouldin index, the mean silhouette, and the validation log-likelihood of the "
                       "held-out rows (the method's own density, or the Gaussian mixture of its partition).")
    p.add_argument("algorithms", nargs="+", metavar="ALGO",
                   help="clustering method ids with a number of clusters (see 'manifold-studio list')")
    p.add_argument("--data", required=True, metavar="FILE|sample:NAME", help=data_help)
    p.add_argument("--k", default="2:8", metavar="FROM:TO",
                   help="the k to try: FROM:TO (both included) or a list such as 2,3,5 (default 2:8)")
    p.add_argument("--label-column", metavar="C", help="a label column to leave out of the features")
    p.add_argument("--data-option", "-D", action="append", nargs="+", metavar="NAME=VALUE",
                   help="a loader or sample option, e.g. delimiter=tab")
    p.add_argument("--param", "-p", action="append", nargs="+", metavar="ALGO.NAME=VALUE",
                   help="a method parameter: ALGO is an algorithm id or the method's 1-based position")
    add_prep_arguments(p, prep=True)  # --prep (the chain, fitted before each method), --role, --id-column
    p.add_argument("--holdout", type=float, default=0.25, metavar="FRACTION",
                   help="share of the rows held out for the validation log-likelihood (default 0.25; 0: none)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="seed of the held-out split and of every method's random_state (default 0)")
    p.add_argument("--out", "-o", metavar="FILE", help="also write the table, in the format its extension names: .csv, .tsv or "
                   ".parquet ('-': CSV on standard output)")
    add_in_process_argument(p)
    p.add_argument("--quiet", "-q", action="store_true", help="print only the table, notes and errors")
    p.set_defaults(func=cmd_compare_clusterings)


def cmd_compare_clusterings(args) -> int:
    console = Console(args.quiet, info_to_stderr=args.out == "-")
    if not 0.0 <= args.holdout < 1.0:
        raise UsageError(f"--holdout expects a fraction from 0 to below 1, got {args.holdout}")
    try:
        ks = parse_k_range(args.k)
    except InvalidParameterError as exc:
        raise UsageError(f"--k: {exc}") from None
    specs = learner_params(args.algorithms, _pairs(args.param, "--param"), kind="clustering",
                           noun="a clustering method", why="compare-clusterings compares clustering methods")
    chain = parse_prep(args.prep)
    code = in_worker(args, third_party_parts([a for a, _ in specs] + [s for s, _ in chain]), "compare-clusterings")
    if code is not None:
        return code
    _check_writable(args.out, "--out")
    ds = load_dataset(args.data, args.label_column, _pairs(args.data_option, "--data-option"), console,
                      label_optional=True, roles=parse_roles(args.role), id_column=args.id_column,
                      keep_missing=chain_imputes([s for s, _ in chain]))
    names = learner_names(specs)
    cmp, seconds = _timed(
        console, "Comparing clusterings",
        lambda progress: compare_on_dataset(specs, ds, ks, chain=chain, seed=args.seed,
                                            validation=args.holdout or None, names=names, progress=progress),
        args.data)
    console.flush_notes()
    out = console.info_stream
    held = f", {args.holdout:g} held out" if args.holdout else ", no rows held out"
    prep = f", through {' → '.join(s for s, _ in chain)}" if chain else ""
    print(f"Comparing clusterings on {ds.name} ({ds.X.shape[0]:,} rows{prep}): k = {ks[0]}…{ks[-1]}, "
          f"seed {args.seed}{held}", file=out)
    print(cmp.format_table(), file=out)
    print("\nBest k of each measure (W, B and H improve with almost every added cluster: look for an elbow):",
          file=out)
    for m in MEASURES[2:]:
        print(f"  {TITLES[m]}: " + ", ".join(f"{n} {cmp.best(n, m) or 'n/a'}" for n in cmp.methods), file=out)
    for msg in cmp.failures:
        print(f"warning: {msg}", file=out)
    print(f"Time: {seconds:.1f} s", file=out)
    if args.out:
        rows = cmp.table()
        header = ["method", "k", "n_clusters_found", *MEASURES, "notes"]
        columns = [np.array([r[h] for r in rows], dtype=object if h in ("method", "notes") else None)
                   for h in header]
        write_csv(args.out, header, columns)
        if args.out != "-":
            console.info(f"wrote {args.out}")
    return EXIT_OK
