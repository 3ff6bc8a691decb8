"""Atomic file writing shared by the CLI, model files and project files (Qt-free).

A file is written to a temporary file in the same folder, flushed to disk, given the mode
of the file it replaces (or the usual umask-based one), then renamed over the target: a
crash or an error while writing never leaves a half-written file behind.
"""
from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import IO, Callable

from manifold_studio.errors import ManifoldStudioError, WriteError


def _mode_for(path: Path) -> int:
    try:
        return path.stat().st_mode & 0o777
    except OSError:
        mask = os.umask(0)
        os.umask(mask)
        return 0o666 & ~mask


def is_special_file(path) -> bool:
    """A device, FIFO or socket (``/dev/null``, ``/dev/stdout``, a named pipe): written in place,
    never replaced by a rename."""
    try:
        return not stat.S_ISREG(os.stat(path).st_mode) and not stat.S_ISDIR(os.stat(path).st_mode)
    except OSError:
        return False


def atomic_write(path, write: Callable[[IO], None], *, binary: bool = True) -> Path:
    """Call ``write(fh)`` on a temporary file next to ``path``, then rename it to ``path``
    (a special file such as ``/dev/null`` is written directly)."""
    path = Path(path)
    if is_special_file(path):
        with (open(path, "wb") if binary else open(path, "w", encoding="utf-8", newline="")) as fh:
            write(fh)
        return path

    def fill(tmp: Path) -> None:
        with (open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8", newline="")) as fh:
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())

    return atomic_replace(path, fill)


def atomic_replace(path, fill: Callable[[Path], None]) -> Path:
    """Call ``fill(tmp)`` with the path of an empty temporary file next to ``path`` (for writers
    that open files by name, such as HDF5), then rename it to ``path``; on any failure the
    temporary file is removed and ``path`` is unchanged."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir():
        raise ManifoldStudioError(f"Cannot write {path}: the folder {folder} does not exist.")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    except OSError as exc:
        raise WriteError(f"Cannot write {path}: {exc.strerror or exc} (in {folder}).") from None
    try:
        os.close(fd)
        fill(Path(tmp))
        try:
            os.chmod(tmp, _mode_for(path))
        except OSError:  # pragma: no cover - a file system without modes
            pass
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):  # a full disk, a quota, an I/O error: say so, nothing was replaced
            kept = "the previous file is unchanged" if path.exists() else "nothing was written"
            reason = str(exc.strerror or exc).rstrip(".")
            raise WriteError(f"Cannot write {path.name}: {reason}; {kept}.") from None
        raise
    return path
