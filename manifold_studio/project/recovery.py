"""Crash recovery: the session is saved now and then to a recovery file, so a crash or a
``kill -9`` costs at most a few minutes of work (Qt-free; the window's timer is in
:mod:`manifold_studio.gui.autosave`).

Each running application writes ``session-<pid>.msproj`` (a normal project file, written
atomically) in the recovery folder — ``MANIFOLD_STUDIO_RECOVERY_DIR``, or the user's data
folder (``%LOCALAPPDATA%\\Manifold Studio\\recovery``, ``~/Library/Application Support/Manifold
Studio/recovery``, ``$XDG_DATA_HOME/manifold-studio/recovery``) — and deletes it when it closes
normally. A recovery file whose process is no longer running is what a crash left behind: the
next start offers to restore the newest one.
"""
from __future__ import annotations

import os
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from manifold_studio.project.project_file import SUFFIX, save_project
from manifold_studio.project.recovery_folder import recovery_dir
from manifold_studio.session.model import Session

PREFIX = "session-"


def recovery_path(pid: int | None = None) -> Path:
    return recovery_dir() / f"{PREFIX}{os.getpid() if pid is None else pid}{SUFFIX}"


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    if sys.platform.startswith("win"):  # pragma: no cover - no signal 0 on Windows
        import ctypes

        handle = ctypes.windll.kernel32.OpenProcess(0x1000, False, pid)
        if handle:
            ctypes.windll.kernel32.CloseHandle(handle)
            return True
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass
class RecoveryFile:
    path: Path
    pid: int
    saved_at: float

    def describe(self) -> str:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(self.saved_at))


def orphaned_recovery_files() -> list[RecoveryFile]:
    """Recovery files left by processes that are no longer running, newest first."""
    folder = recovery_dir()
    if not folder.is_dir():
        return []
    found = []
    for path in folder.glob(f"{PREFIX}*{SUFFIX}"):
        try:
            pid = int(path.name[len(PREFIX):-len(SUFFIX)])
        except ValueError:
            continue
        if not _alive(pid):
            found.append(RecoveryFile(path, pid, path.stat().st_mtime))
    return sorted(found, key=lambda r: r.saved_at, reverse=True)


def snapshot(session: Session) -> Session:
    """A detached copy of the session's contents (shallow: arrays are shared, never modified in
    place), cheap to take in the GUI thread and safe to save on a worker thread."""
    copy = Session(session._host)
    copy.datasets = dict(session.datasets)
    copy.current_dataset_name = session.current_dataset_name
    copy.runs = {rid: run for rid, run in session.runs.items() if run.finished}
    copy.current_run_id = session.current_run_id if session.current_run_id in copy.runs else None
    copy.history = list(session.history)
    copy.report = type(session.report)(list(session.report.items))  # the report too (its own list)
    copy.restore_chain(session.chain)  # the current preparation chain (what the next run fits)
    copy.restore_view_settings(session.view_settings(), announce=False)  # what the views show
    copy._selection = dict(session._selection)  # the selection (masks are replaced, never edited)
    copy._saved_selections = dict(session._saved_selections)
    return copy


def write_recovery(snap: Session, view_settings: dict | None = None, progress=None,
                   analyses: dict | None = None, form_values: dict | None = None) -> Path:
    """Save a snapshot to this process's recovery file (atomically), with the ``analyses``
    records and the forms' ``form_values`` of :func:`~manifold_studio.project.project_file.save_project`."""
    folder = recovery_dir()
    folder.mkdir(parents=True, exist_ok=True)
    return save_project(snap, recovery_path(), view_settings, analyses, form_values)


def discard_recovery(path: Path | None = None) -> None:
    """Delete this process's recovery file (a clean exit), or ``path`` (restored or declined)."""
    try:
        (path or recovery_path()).unlink()
    except FileNotFoundError:
        pass
