"""Third-party code of a command in a worker process (Qt-free).

``run`` fits a third-party algorithm, or a chain with a third-party step, there
(:func:`isolated_fit`, over :mod:`manifold_studio.session.isolated_fit`), and extends it there
(``--extend``, ``--fit-sample``: :func:`isolated_extend`). ``score``,
``compare-clusterings`` and ``replay`` fit and apply many models: when a part of them is
third-party (an algorithm or a preparation step from a plugin installed from another
distribution) the whole command runs again, as it was typed plus ``--in-process``, in a child
process (:func:`in_worker`). Whatever the plugin does there — a segmentation fault, ``os._exit``,
``SystemExit`` — only the child dies: this process reports it in one line naming the signal or
the exit code and exits with status 1. The child prints its own output, notes and errors; it
proves that it finished by writing its exit status to the file named by
``MANIFOLD_STUDIO_COMMAND_DONE``, so a child that ended any other way (even with status 0) is a
failure. ``--in-process`` opts out.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

from manifold_studio.algorithms.pipeline import PIPELINE_ID
from manifold_studio.cli.console import EXIT_INTERNAL, print_error
from manifold_studio.errors import describe_exit
from manifold_studio.session.isolated_extend import extend_model
from manifold_studio.session.isolated_fit import PluginProcessError, fit_estimator_in_subprocess

#: set in the child: the file it writes its exit status to when it finishes
DONE_ENV = "MANIFOLD_STUDIO_COMMAND_DONE"
NOTHING_WRITTEN = "No output file was written."


def isolated_fit(est, algorithm_id: str, ds):
    """``fit(X, y, progress) -> FitOutcome`` of ``est`` (an algorithm, or a pipeline fitted under
    the feature names of ``ds``) in a worker process; a worker that dies or fails raises
    PluginProcessError saying so, and that nothing was written."""
    columns = categories = None
    if getattr(est, "id", "") == PIPELINE_ID:
        columns = list(ds.feature_names or [f"x{j}" for j in range(ds.n_features)])
        categories = {k: v for k, v in ds.table.categories().items() if k in columns} if ds.table is not None else {}

    def fit(X, y, progress):
        try:
            return fit_estimator_in_subprocess(est, X, y, progress, unaffected=NOTHING_WRITTEN, columns=columns,
                                               categories=categories)
        except PluginProcessError as exc:
            raise nothing_written(algorithm_id, exc) from None
    return fit


def isolated_extend(algorithm_id: str):
    """``extend(est, X, progress) -> values``: the fitted ``est`` (its fit ran in a worker process)
    extended to ``X`` in a worker process too, by the window's path
    (:func:`~manifold_studio.session.isolated_extend.extend_model`: a pipeline gets its training
    columns matched here, no plugin code; its steps and algorithm run in the worker). ``run
    --extend`` and ``run --fit-sample`` use it; a dead worker says that nothing was written."""

    def extend(est, X, progress):
        try:
            return extend_model(est, X, progress, isolated=True, unaffected=NOTHING_WRITTEN)
        except PluginProcessError as exc:
            raise nothing_written(algorithm_id, exc) from None
    return extend


def nothing_written(algorithm_id: str, exc: PluginProcessError) -> PluginProcessError:
    text = str(exc)
    return PluginProcessError(text if NOTHING_WRITTEN in text else
                              f"{algorithm_id}: {text.rstrip('.')}. {NOTHING_WRITTEN}")


def command_prefix() -> list[str]:
    """The command that starts the command line: the application itself when frozen."""
    if getattr(sys, "frozen", False):
        return [sys.executable]
    return [sys.executable, "-m", "manifold_studio"]


def add_in_process_argument(parser) -> None:
    parser.add_argument("--in-process", action="store_true",
                        help="run third-party plugins' algorithms and preparation steps in this process (by "
                        "default the command runs in a worker process when it uses one, so that a crash in "
                        "the plugin ends the command with a message)")


def step_ids(prep_texts) -> list[str]:
    """The step ids of ``--prep`` texts (``impute:strategy=median`` -> ``impute``)."""
    return [str(t).partition(":")[0].strip() for t in prep_texts or []]


def in_worker(args, parts: list[str], what: str, kept: str = NOTHING_WRITTEN) -> int | None:
    """Run this command (``args.argv``) again with ``--in-process`` in a child process when
    ``parts`` (the third-party ids it uses) is not empty and ``--in-process`` was not given;
    returns its exit status (1 when it died), or None when the command is to run here.
    ``what`` names the work in the message; ``kept`` says what a dead child leaves behind."""
    argv = getattr(args, "argv", None)
    if getattr(args, "in_process", False) or not parts or argv is None or os.environ.get(DONE_ENV):
        return None
    with tempfile.TemporaryDirectory(prefix="ms-command-") as tmp:
        done = Path(tmp) / "done"
        env = dict(os.environ)
        env[DONE_ENV] = str(done)
        code = subprocess.call(command_prefix() + list(argv) + ["--in-process"], env=env)
        if done.is_file():
            return code
    print_error(f"the run failed: {what}: the worker process running the third-party plugin code "
                f"({', '.join(parts)}) {describe_exit(code, 'before finishing')}. {kept} "
                "(--in-process runs it in this process.)")
    return EXIT_INTERNAL


def report_done(code: int) -> int:
    """In the child: record that the command finished, with its exit status."""
    path = os.environ.get(DONE_ENV)
    if path:
        try:
            Path(path).write_text(str(code), encoding="utf-8")
        except OSError:
            pass
    return code
