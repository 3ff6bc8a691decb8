"""Apply a saved model of a third-party plugin in a worker process (Qt-free): the command line's
``apply`` runs :func:`manifold_studio.extend.out_of_core.extend_source` there, so that a plugin
whose extension crashes (a segmentation fault, ``os._exit``, ``SystemExit``) ends only that
process. The worker reads the model file itself and writes the output as the chunks go (to a
hidden ``.partial`` file renamed at the end); when it dies, the partial file it left is removed,
so no output file appears. A damaged model file or bad data is reported as it would be in this
process (a DataError). Progress and Cancel travel as in
:mod:`manifold_studio.session.isolated_fit`.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

from manifold_studio.extend.out_of_core import ExtendReport, extend_source
from manifold_studio.files.model_file import load_model_with_metadata
from manifold_studio.files.stale import output_patterns
from manifold_studio.session.isolated_fit import (
    CANCEL_GRACE_S,
    PluginProcessError,
    PipeProgress,
    report_outcome,
    run_supervised,
)

_REPORT_FIELDS = ("n_rows", "n_chunks", "parts", "seconds", "peak_memory_mb", "notes", "correct")


def _child(conn, sys_path: list[str], model: str, source: str, options: dict, out: str,
           train_feature_names, chunk_rows: int, escape_formulas: bool = True, metas: bool = False) -> None:
    sys.path[:] = sys_path

    def work():
        est, _meta = load_model_with_metadata(model)
        rep = extend_source(est, source, options=options, out=out, train_feature_names=train_feature_names,
                            chunk_rows=chunk_rows, progress=PipeProgress(conn), escape_formulas=escape_formulas,
                            metas=metas)
        return ({k: getattr(rep, k) for k in _REPORT_FIELDS},)

    report_outcome(conn, work, stage="extension")


def apply_in_subprocess(model: str, name: str, source: str, *, options: dict, out: str,
                        train_feature_names=None, chunk_rows: int, progress=None,
                        cancel_grace_s: float = CANCEL_GRACE_S, unaffected: str = "",
                        escape_formulas: bool = True, metas: bool = False) -> ExtendReport:
    """``extend_source`` of the model in ``model`` (a file) in a worker process; returns its report."""
    started = time.time()
    try:
        (fields,) = run_supervised(_child, (list(sys.path), str(model), source, dict(options), out,
                                            train_feature_names, chunk_rows, escape_formulas, metas),
                                   progress, name, f"manifold-studio apply {name}",
                                   cancel_grace_s=cancel_grace_s, unaffected=unaffected, data_errors=True)
    except BaseException:
        _remove_partial(out, started)
        raise
    rep = ExtendReport()
    for key, value in fields.items():
        setattr(rep, key, tuple(value) if key == "correct" and value is not None else value)
    return rep


def model_ids(meta: dict) -> list[str]:
    """The algorithm and preparation-step ids a model file's metadata names (a pipeline's steps)."""
    if meta.get("algorithm") != "pipeline":
        return [str(meta.get("algorithm"))]
    steps = meta.get("steps") if isinstance(meta.get("steps"), list) else []
    return [str(p.get("preprocessor") or p.get("algorithm")) for p in steps if isinstance(p, dict)]


def _remove_partial(out: str, since: float) -> None:
    """The partial output file the dead worker was writing (this run's, by its age)."""
    if out == "-":
        return
    target = Path(out)
    folder = target.parent if str(target.parent) else Path(".")
    for pattern, _ in output_patterns(target):
        for path in folder.glob(pattern):
            try:
                if path.is_file() and not path.is_symlink() and path.stat().st_mtime >= since - 1:
                    path.unlink()
            except OSError:
                pass


__all__ = ["apply_in_subprocess", "model_ids", "PluginProcessError"]
