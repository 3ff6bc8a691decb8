"""Removing the application's own stale temporary files (Qt-free).

A write that is killed (``kill -9``, a power cut) can leave its temporary behind: an atomic
write's ``.NAME.XXXXXXXX.tmp`` (:mod:`manifold_studio.fileio.atomic`), a streamed result's
``.NAME.XXXXXXXX.partial``, a plugin install's ``.staging-*`` / ``.old-*`` folders, a settings
file's ``*.json.tmp``. Only names that follow these patterns, in the folders the application
owns or next to a file it is about to write, and only when they are older than a day (their
modification time against ``time.time()``) are removed: a write still in progress in another
process is never touched, and nothing of the user's is.
"""
from __future__ import annotations

import fnmatch
import glob
import os
import shutil
import stat
import time
from pathlib import Path

DAY_S = 24 * 3600.0
FILE, FOLDER = "file", "folder"

#: the plugin folder: install staging and replaced copies, write tests, settings and manifests
PLUGIN_FOLDER_PATTERNS = ((".staging-*", FOLDER), (".old-*", FOLDER), (".write-test-*", FILE),
                          (".*.tmp", FILE), ("*.json.tmp", FILE))
#: the settings folder (plugin settings and the import probe's verdicts)
SETTINGS_PATTERNS = ((".*.tmp", FILE), ("*.json.tmp", FILE))
#: the recovery folder: atomic temporaries of the recovery files
RECOVERY_PATTERNS = ((".*.tmp", FILE), (".*.partial", FILE))


def output_patterns(path) -> tuple[tuple[str, str], ...]:
    """The temporaries that writing ``path`` makes next to it (atomic writes, streamed results)."""
    name = glob.escape(Path(path).name)
    return ((f".{name}.*.tmp", FILE), (f".{name}.*.partial", FILE))


def remove_stale(folder, patterns, max_age_s: float = DAY_S, now: float | None = None) -> list[Path]:
    """Remove the entries of ``folder`` (not its sub-folders) that match one of ``patterns``
    (``(glob, "file" | "folder")``) and were last modified more than ``max_age_s`` seconds
    ago. Links are never followed or removed. Returns what was removed; never raises."""
    now = time.time() if now is None else now
    removed = []
    try:
        entries = list(os.scandir(folder))
    except OSError:
        return removed
    for entry in entries:
        kinds = {kind for pattern, kind in patterns if fnmatch.fnmatchcase(entry.name, pattern)}
        if not kinds:
            continue
        try:
            st = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if now - st.st_mtime <= max_age_s:
            continue
        path = Path(entry.path)
        try:
            if FOLDER in kinds and stat.S_ISDIR(st.st_mode):
                shutil.rmtree(path)
            elif FILE in kinds and stat.S_ISREG(st.st_mode):
                path.unlink()
            else:
                continue
        except OSError:
            continue
        removed.append(path)
    return removed
