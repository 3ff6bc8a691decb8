"""``manifold-studio script PROJECT -o analysis.py`` and
``manifold-studio replay PROJECT --data new.csv --out-dir results/`` (Qt-free).

``script`` writes a Python script reproducing the project with the public API
(:mod:`manifold_studio.reproduce.script_export`); ``replay`` applies every saved model of the
project to a file with the same columns and writes each run's output, named after the run
(:mod:`manifold_studio.reproduce.replay`). Refusals exit with status 2 and one line.
"""
from __future__ import annotations

from pathlib import Path

from manifold_studio.reproduce.replay import replay
from manifold_studio.reproduce.script_export import write_script
from manifold_studio.cli.console import EXIT_OK, UsageError
from manifold_studio.cli.worker_command import add_in_process_argument, in_worker
from manifold_studio.session.isolated_fit import third_party_ids


def add_project_parsers(sub) -> None:
    """Add the ``script`` and ``replay`` commands to the main parser's sub-parsers."""
    p = sub.add_parser("script", help="write a Python script that reproduces a project",
                       description="Write a readable Python script that reproduces the project's runs with "
                       "the public API (loading with the same options, each run with its parameters and "
                       "seeds, evaluations) and writes each run's output as CSV named after the run.")
    p.add_argument("project", metavar="PROJECT.msproj", help="a project saved by the window")
    p.add_argument("--out", "-o", required=True, metavar="FILE.py", help="the script to write")
    p.set_defaults(func=cmd_script)

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
    p.set_defaults(func=cmd_replay)


def _existing(path: str, what: str) -> Path:
    p = Path(path)
    if not p.is_file():
        raise UsageError(f"{what} not found: {path}")
    return p


def cmd_script(args) -> int:
    out = write_script(_existing(args.project, "project"), args.out)
    print(f"wrote {out}")
    return EXIT_OK


def cmd_replay(args) -> int:
    project, data = _existing(args.project, "project"), _existing(args.data, "data file")
    # opening the project restores its models (a third-party plugin's code runs then too): with
    # third-party plugins installed, the whole replay runs in a worker process
    code = in_worker(args, sorted(third_party_ids()), f"replay of {project.name}",
                     "Outputs of the runs replayed before it ended are kept.")
    if code is not None:
        return code
    result = replay(project, data, args.out_dir, metas=args.metas)
    for note in result.notes:
        print(f"note: {note}")
    if not args.quiet:
        for run_id, path in result.outputs:
            print(f"run #{run_id}: wrote {path} ({result.n_rows:,} rows)")
    return EXIT_OK
