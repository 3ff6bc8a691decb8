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
from manifold_studio.cli.worker_command import in_worker
from manifold_studio.session.isolated_fit import third_party_ids


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
    result = replay(project, data, args.out_dir, isolated=False, metas=args.metas)   # (here: in the worker, or --in-process)
    for note in result.notes:
        print(f"note: {note}")
    if not args.quiet:
        for run_id, path in result.outputs:
            print(f"run #{run_id}: wrote {path} ({result.n_rows:,} rows)")
    return EXIT_OK
