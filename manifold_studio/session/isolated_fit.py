"""Fit an algorithm in a separate worker process, so that a broken plugin cannot take the
application down (issue 12).

The data go to the child through temporary ``.npy`` files; progress, partial results (maps,
training curves) and Cancel travel over a pipe; the fitted model comes back as its pickle-free
model file (:func:`manifold_studio.files.model_file.model_bytes`). Whatever the plugin does — a
segmentation fault, running out of memory, ``os._exit``, an endless loop that never calls
``checkpoint`` — only the child dies: the run ends with a message that says what happened and the
window, the other runs and the session are untouched. Cancel asks the child to stop at its next
checkpoint and ends it by force after ``cancel_grace_s`` seconds.

Processes are started with ``spawn`` (a fresh interpreter: nothing of the window's threads or Qt
is inherited). The child imports the algorithm's class from its module, so any algorithm the
window can run — built in, installed or in a user plugin folder — runs there too.
"""
from __future__ import annotations

import importlib
import multiprocessing as mp
import os
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.checks import is_sparse
from manifold_studio.algorithms.pipeline import PIPELINE_ID, make_pipeline
from manifold_studio.algorithms.progress import as_progress
from manifold_studio.errors import DataError, FitCancelled, ManifoldStudioError, describe_exit, error_message
from manifold_studio.files.model_file import model_bytes, model_from_bytes
from manifold_studio.plugins.host import get_host
from manifold_studio.session.fitting import fit_estimator
from manifold_studio.session.records import FitOutcome

#: seconds a cancelled child gets to reach a checkpoint before it is ended by force
CANCEL_GRACE_S = 5.0


class PluginProcessError(ManifoldStudioError):
    """The worker process of a plugin ended without a result (crash, memory, exit)."""


# -- the child ------------------------------------------------------------------------------------

class PipeProgress:
    """The Progress protocol over a pipe: reports go up, Cancel comes down."""

    def __init__(self, conn, min_interval: float = 0.05):
        self.conn = conn
        self.min_interval = min_interval
        self._last = 0.0
        self.cancelled = False

    def checkpoint(self, fraction: float, message: str = "") -> None:
        while self.conn.poll():
            if self.conn.recv() == "cancel":
                self.cancelled = True
        if self.cancelled:
            raise FitCancelled("Cancelled by the user.")
        now = time.monotonic()
        if now - self._last >= self.min_interval:
            self._last = now
            self.conn.send(("progress", float(fraction), str(message)))

    def partial(self, result) -> None:
        self.conn.send(("partial", result))


def _limit_memory(memory_limit_mb: float | None) -> None:
    if memory_limit_mb:
        try:
            import resource

            limit = int(memory_limit_mb * 1024 * 1024)
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
        except (ImportError, ValueError, OSError):  # pragma: no cover - not on this platform
            pass


def _own_scheduling_group() -> None:
    """Work handed to this process by a window's worker thread (which runs nicer than the window,
    so this process inherited that niceness) moves into a session of its own. Linux's autogroup
    scheduling charges the CPU time of every process of a session to one group: a busy fit in
    the window's session made the window's thread wait 100–150 ms for a core at load 3–4
    (issue 33, item 9), its niceness counting only inside the group. Work started at normal
    priority (the command line) stays in its session."""
    try:
        if os.getpriority(os.PRIO_PROCESS, 0) > 0:
            os.setsid()
    except (AttributeError, OSError):  # pragma: no cover - not Linux, or already a session leader
        pass


def report_outcome(conn, work, stage: str = "fit") -> None:
    """In a worker process: send ``("done", *work())``, or what stopped ``work`` — Cancel, memory,
    ``SystemExit`` (never a result, whatever its code) or any other exception — to the parent."""
    _own_scheduling_group()
    try:
        conn.send(("done", *work()))
    except FitCancelled:
        conn.send(("cancelled",))
    except MemoryError:
        conn.send(("error", "the plugin ran out of memory (its process reached its memory limit)",
                   traceback.format_exc()))
    except SystemExit as exc:  # sys.exit() inside plugin code: not a result, whatever the code
        conn.send(("error", f"the plugin's {stage} raised SystemExit({exc.code!r}) (it tried to end its "
                   "process) instead of returning a result", traceback.format_exc()))
    except BaseException as exc:  # noqa: BLE001 - everything goes back to the parent
        try:
            message = error_message(exc)
        except Exception:  # noqa: BLE001
            message = f"{type(exc).__name__}: {exc}"
        # the last field: one of our own errors about the input (a damaged file, bad data)
        conn.send(("error", message, traceback.format_exc(), isinstance(exc, DataError)))
    finally:
        conn.close()


def _build(cls, params: dict, chain: dict | None):
    """The estimator to fit in the child: ``cls(**params)``, behind the preparation steps of
    ``chain`` ({"steps": [(step id, params)], "columns": names or None, "categories": {...}})."""
    est = cls(**params) if cls is not None else None
    if chain is None:
        return est
    pipe = make_pipeline(*[(str(i), dict(p)) for i, p in chain["steps"]], *([est] if est is not None else []))
    if chain.get("columns") is not None:
        pipe.bind_columns(chain["columns"], chain.get("categories") or {})
    return pipe


def _child(conn, module: str | None, qualname: str | None, params: dict, x_path: str, y_path: str | None,
           sys_path: list[str], memory_limit_mb: float | None, chain: dict | None = None) -> None:
    sys.path[:] = sys_path
    _limit_memory(memory_limit_mb)

    def work():
        obj = None
        if module is not None:
            obj = importlib.import_module(module)
            for part in qualname.split("."):
                obj = getattr(obj, part)
        if x_path.endswith(".npz"):   # a sparse X (scipy's save_npz format, loaded without pickle)
            X = sp.load_npz(x_path)
            get_host()   # every plugin imported: a refusal of sparse data names all that take it
        else:
            X = np.load(x_path, allow_pickle=False)
        y = np.load(y_path, allow_pickle=False) if y_path else None
        outcome = fit_estimator(_build(obj, params, chain), X, y, PipeProgress(conn))
        est = outcome.estimator
        return (model_bytes(est), outcome.embedding, outcome.labels, outcome.summary,
                outcome.fit_time, list(getattr(est, "fit_warnings_", []) or []),
                bool(getattr(est, "stopped_early_", False)))

    report_outcome(conn, work)


# -- the parent -----------------------------------------------------------------------------------

def save_inputs(folder: str, X, y=None) -> tuple[str, str | None]:
    """Write a worker's inputs into ``folder`` without pickle: X as ``.npy`` (or scipy's sparse
    ``.npz``, kept sparse: the algorithm decides whether it takes it), y as ``.npy`` (text
    labels as strings); returns their paths (y's None without y)."""
    if is_sparse(X):
        x_path = str(Path(folder) / "X.npz")
        sp.save_npz(x_path, sp.csr_array(X, dtype=np.float64), compressed=False)
    else:
        x_path = str(Path(folder) / "X.npy")
        np.save(x_path, np.ascontiguousarray(X, dtype=np.float64), allow_pickle=False)
    y_path = None
    if y is not None:
        y = np.asarray(y)
        y_path = str(Path(folder) / "y.npy")
        np.save(y_path, y.astype(str) if y.dtype == object else y, allow_pickle=False)
    return x_path, y_path


def fit_in_subprocess(algorithm_cls, params: dict, X, y=None, progress=None, *,
                      cancel_grace_s: float = CANCEL_GRACE_S, memory_limit_mb: float | None = None,
                      unaffected: str = "The window and your data are unaffected.",
                      chain: dict | None = None, name: str | None = None):
    """:func:`manifold_studio.session.model.fit_estimator` in a separate process; returns a FitOutcome.
    ``unaffected`` ends the message of a worker process that died (what it could not harm).
    ``chain``: preparation steps fitted before the algorithm, in the same process (see
    :func:`fit_estimator_in_subprocess`); ``name`` names the work in messages."""

    name = name or getattr(algorithm_cls, "name", "") or getattr(algorithm_cls, "__name__", "the pipeline")
    if memory_limit_mb is None and os.environ.get("MANIFOLD_STUDIO_PLUGIN_MEMORY_MB"):
        memory_limit_mb = float(os.environ["MANIFOLD_STUDIO_PLUGIN_MEMORY_MB"])
    with tempfile.TemporaryDirectory(prefix="ms-fit-") as tmp:
        x_path, y_path = save_inputs(tmp, X, y)
        module, qualname = (None, None) if algorithm_cls is None else (algorithm_cls.__module__,
                                                                       algorithm_cls.__qualname__)
        blob, embedding, labels, summary, fit_time, warnings_, early = run_supervised(
            _child, (module, qualname, dict(params), x_path, y_path, list(sys.path), memory_limit_mb, chain),
            progress, name, f"manifold-studio fit {qualname or 'pipeline'}", cancel_grace_s=cancel_grace_s,
            unaffected=unaffected)
    # the worker just fitted it; extending a probe point here would run plugin code in this process
    est = model_from_bytes(blob, f"the model of {name} from its worker process", check_usable=False)
    est.fit_warnings_ = warnings_
    if early:
        est.stopped_early_ = True
    return FitOutcome(est, embedding, labels, dict(summary), fit_time, meta={"worker_process": True})


def fit_estimator_in_subprocess(est, X, y=None, progress=None, **kwargs):
    """:func:`fit_in_subprocess` of an unfitted estimator as built: an algorithm, or a pipeline
    (:func:`manifold_studio.make_pipeline`) whose preparation steps are rebuilt by id in the
    worker and fitted there with its algorithm, under the column names bound to it
    (:meth:`~manifold_studio.algorithms.pipeline.Pipeline.bind_columns`, or ``columns`` /
    ``categories`` given here). Returns a FitOutcome whose estimator is the fitted pipeline."""
    columns, categories = kwargs.pop("columns", None), kwargs.pop("categories", None)
    if getattr(est, "id", "") != PIPELINE_ID:
        return fit_in_subprocess(type(est), est.get_params(), X, y, progress, **kwargs)
    bound = est.__dict__.get("_bound_columns")
    if columns is None and bound is not None:
        columns, categories = bound
    chain = {"steps": [(step.id, step.get_params()) for _, step in est.preparation],
             "columns": None if columns is None else [str(c) for c in columns],
             "categories": {str(k): list(v) for k, v in (categories or {}).items()}}
    final = est.final
    ids = ", ".join(step.id for _, step in est.preparation)
    name = f"{final.name if final is not None else 'the pipeline'} with its preparation steps ({ids})"
    return fit_in_subprocess(None if final is None else type(final), {} if final is None else final.get_params(),
                             X, y, progress, chain=chain, name=kwargs.pop("name", None) or name, **kwargs)


def third_party_ids() -> set[str]:
    """The algorithm and preparation-step ids that come from plugins installed from another
    distribution (pip or the user plugin folder): they run in a worker process by default."""
    out: set[str] = set()
    for info in get_host().plugins.values():
        if info.distribution and not info.builtin:
            out.update(info.algorithms)
            out.update(info.preprocessors)
    return out


def estimator_ids(est) -> list[str]:
    """The ids of the parts of an estimator: its algorithm, or a pipeline's steps and algorithm."""
    if getattr(est, "id", "") == PIPELINE_ID:
        return [str(getattr(step, "id", "")) for _, step in est.steps]
    return [str(getattr(est, "id", ""))]


def third_party_parts(ids) -> list[str]:
    """Those of ``ids`` (algorithms, steps) that are third-party (see :func:`third_party_ids`)."""
    theirs = third_party_ids()
    return [i for i in ids if i in theirs]


def run_supervised(target, args: tuple, progress, name: str, process_name: str, *,
                   cancel_grace_s: float = CANCEL_GRACE_S, unaffected: str = "", data_errors: bool = False):
    """Run ``target(conn, *args)`` in a spawned worker process that reports with
    :func:`report_outcome`; pass its progress on, and Cancel down (ending it by force after
    ``cancel_grace_s``). Returns the payload of its ``done`` message; raises FitCancelled, or
    PluginProcessError with its error or with how it died (signal or exit code); with
    ``data_errors``, a DataError raised in the worker (a damaged file, bad data) is raised as such."""
    progress = as_progress(progress)
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=target, daemon=True, name=process_name, args=(child, *args))
    progress.checkpoint(0.0, f"Starting a worker process for {name}")
    proc.start()
    child.close()
    died = lambda: PluginProcessError(  # noqa: E731
        f"The worker process of {name} {describe_exit(proc.exitcode)}. {unaffected}".rstrip())
    fraction, message = 0.0, f"{name} in a worker process"
    cancel_at = None
    try:
        while True:
            try:
                ready = parent.poll(0.05)
            except (EOFError, OSError):
                ready = False
            if ready:
                try:
                    msg = parent.recv()
                except (EOFError, OSError):
                    msg = None
                if msg is None:
                    proc.join(5)
                    raise died()
                kind = msg[0]
                if kind == "progress":
                    fraction, message = msg[1], msg[2]
                elif kind == "partial":
                    progress.partial(msg[1])
                elif kind == "done":
                    proc.join(5)
                    return msg[1:]
                elif kind == "cancelled":
                    proc.join(5)
                    raise FitCancelled("Cancelled by the user.")
                elif kind == "error":
                    proc.join(5)
                    if data_errors and msg[3:4] == (True,):
                        raise DataError(msg[1])
                    raise PluginProcessError(msg[1])
            elif not proc.is_alive():
                proc.join()
                if parent.poll(0):  # its last words arrived just now
                    continue
                raise died()
            # after every message or pause: report, and pass Cancel on
            if cancel_at is None:
                try:
                    progress.checkpoint(fraction, message)
                except FitCancelled:
                    cancel_at = time.monotonic()
                    try:
                        parent.send("cancel")
                    except (OSError, BrokenPipeError):
                        pass
            elif time.monotonic() - cancel_at > cancel_grace_s:
                proc.kill()
                proc.join(5)
                raise FitCancelled(f"{name} did not stop within {cancel_grace_s:g} s of Cancel (it never "
                                   "reached a checkpoint): its worker process was ended.")
    finally:
        if proc.is_alive():
            proc.kill()
            proc.join(5)
        parent.close()
