"""Which file a data set was read from, and whether it is still that file (Qt-free).

When a data set is loaded from a file, :func:`file_record` notes its absolute path, size and
modification time (``Dataset.source_file``): cheap, at load time. When a project is saved,
:func:`with_digest` adds the file's SHA-256, computed once and only while the file still has
the recorded size and time (so the digest is that of the file that was read). A script exported
from the project names the file and checks it against the record (:func:`changed`), so a data
file edited since the analysis is noticed instead of silently giving other numbers.
"""
from __future__ import annotations

import hashlib
import stat
from pathlib import Path

__all__ = ["file_record", "with_digest", "sha256_of", "changed"]

_CHUNK = 1 << 20


def file_record(source) -> dict | None:
    """``{"path", "size", "mtime_ns"}`` of the regular file ``source`` (``{"path"}`` alone for a
    folder); None for a sample (``sample:NAME``) or a path that does not exist."""
    if not source or str(source).startswith("sample:"):
        return None
    try:
        path = Path(source).expanduser().resolve()
        st = path.stat()
    except (OSError, RuntimeError, ValueError):
        return None
    if stat.S_ISDIR(st.st_mode):
        return {"path": str(path)}
    if not stat.S_ISREG(st.st_mode):
        return None
    return {"path": str(path), "size": int(st.st_size), "mtime_ns": int(st.st_mtime_ns)}


def sha256_of(path) -> str:
    """The SHA-256 (hex) of a file, read in chunks."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_CHUNK), b""):
            h.update(block)
    return h.hexdigest()


def changed(record: dict | None) -> str:
    """Why the recorded file is no longer the file that was read ('' when it is, or when nothing
    was recorded to compare): gone, another size, other contents (SHA-256), or, without a
    digest, another modification time."""
    if not record or "size" not in record:
        return ""
    path = Path(record["path"])
    try:
        st = path.stat()
    except OSError:
        return f"{path} is gone"
    if st.st_size != record["size"]:
        return f"{path} has {st.st_size:,} bytes, not the {record['size']:,} it had when it was read"
    if st.st_mtime_ns == record.get("mtime_ns"):
        return ""
    if record.get("sha256"):
        return "" if sha256_of(path) == record["sha256"] else f"{path} has other contents than when it was read"
    return f"{path} was modified after it was read"


def with_digest(record: dict | None) -> dict | None:
    """``record`` with the file's ``sha256`` added when the file is still the one recorded
    (same size and modification time); otherwise ``record`` unchanged."""
    if not record or "size" not in record or record.get("sha256"):
        return record
    try:
        st = Path(record["path"]).stat()
        if st.st_size != record["size"] or st.st_mtime_ns != record.get("mtime_ns"):
            return record
        return {**record, "sha256": sha256_of(record["path"])}
    except OSError:
        return record
