"""Checks shared by every export (window and command line): the file name's extension, the
folder being writable, the image size — each refused with a message that says what is allowed —
and the atomic write that replaces the target only when everything was written. Qt-free.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import IO, Callable

from manifold_studio.errors import ManifoldStudioError, WriteError
from manifold_studio.fileio.atomic import atomic_write

IMAGE_EXTENSIONS = (".png", ".svg")
TABLE_EXTENSIONS = (".csv",)
#: allowed width and height of an exported image, in pixels
MIN_SIDE, MAX_SIDE = 32, 8000


class ExportError(ManifoldStudioError, ValueError):
    """An export was refused (bad file name, folder, or size); nothing was written."""


def folder_of(path) -> Path:
    parent = Path(path).parent
    return parent if str(parent) else Path(".")


def check_output_path(path, allowed: tuple[str, ...], what: str = "the image") -> str:
    """Refuse a file name whose extension is not in ``allowed``, a folder, a missing or
    unwritable folder; return the (lower-case) extension."""
    target = Path(path)
    ext = target.suffix.lower()
    if ext not in allowed:
        shown = f"'{target.suffix}'" if target.suffix else "none"
        raise ExportError(f"Cannot export {what} to {target.name or path}: unknown file extension "
                          f"({shown}); allowed: {', '.join(allowed)}.")
    if target.is_dir():
        raise ExportError(f"Cannot write {target}: it is a folder; give a file name.")
    folder = folder_of(target)
    if not folder.is_dir():
        raise ExportError(f"Cannot write to {folder}: the folder does not exist.")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ExportError(f"Cannot write to {folder}: permission denied.")
    return ext


def same_file(a, b) -> bool:
    """Whether paths ``a`` and ``b`` name the same file: the same path in another spelling or
    through a symbolic link (compared resolved), or a hard link of it (same device and inode,
    when both exist)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet)
        return False


def check_image_size(width, height) -> tuple[int, int]:
    """(width, height) as ints, or an error giving the allowed range."""
    try:
        w, h = int(width), int(height)
        ok = w == width and h == height
    except (TypeError, ValueError, OverflowError):
        ok = False
    if not ok or not (MIN_SIDE <= w <= MAX_SIDE and MIN_SIDE <= h <= MAX_SIDE):
        raise ExportError(f"Image size {width} × {height} px is not allowed: width and height must be "
                          f"whole numbers from {MIN_SIDE} to {MAX_SIDE:,} px.")
    return w, h


_SIZE = re.compile(r"^\s*(-?\d+)\s*[x×X*,]\s*(-?\d+)\s*$")


def parse_size(text: str) -> tuple[int, int]:
    """``"1200x900"`` (also ``×``) -> (1200, 900), checked with :func:`check_image_size`."""
    m = _SIZE.match(str(text))
    if m is None:
        raise ExportError(f"Image size '{text}' is not WIDTHxHEIGHT (e.g. 1200x900); width and height "
                          f"from {MIN_SIDE} to {MAX_SIDE:,} px.")
    return check_image_size(int(m.group(1)), int(m.group(2)))


def write_file(path, write: Callable[[IO], None], *, binary: bool = True) -> Path:
    """Write ``path`` atomically (:func:`manifold_studio.fileio.atomic.atomic_write`); a permission
    problem becomes "Cannot write to FOLDER: permission denied" and the old file stays."""

    folder = folder_of(path)
    try:
        return atomic_write(path, write, binary=binary)
    except PermissionError:
        raise ExportError(f"Cannot write to {folder}: permission denied.") from None
    except WriteError as exc:
        if "permission" in str(exc).lower():
            raise ExportError(f"Cannot write to {folder}: permission denied.") from None
        raise
