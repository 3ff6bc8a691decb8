"""Start-up housekeeping of the command line and the window (Qt-free): remove the application's
own stale temporary files (older than a day, its own naming patterns only: see
:mod:`manifold_studio.files.stale`) from the folders it owns — the plugin folder, the plugin
settings folder and the recovery folder — and, before a command writes a file, next to that file."""
from __future__ import annotations

from pathlib import Path

from manifold_studio.files.stale import (
    PLUGIN_FOLDER_PATTERNS,
    RECOVERY_PATTERNS,
    SETTINGS_PATTERNS,
    output_patterns,
    remove_stale,
)
from manifold_studio.plugins.folder import plugin_dir, settings_path
from manifold_studio.project.recovery_folder import recovery_dir


def clean_own_folders(now: float | None = None) -> list[Path]:
    """Remove stale temporaries from the plugin, settings and recovery folders; returns them."""
    removed = remove_stale(plugin_dir(), PLUGIN_FOLDER_PATTERNS, now=now)
    if settings_path().parent != plugin_dir():
        removed += remove_stale(settings_path().parent, SETTINGS_PATTERNS, now=now)
    return removed + remove_stale(recovery_dir(), RECOVERY_PATTERNS, now=now)


def clean_next_to(path, now: float | None = None) -> list[Path]:
    """Remove the stale temporaries that earlier, killed writes of ``path`` left beside it."""
    target = Path(path)
    return remove_stale(target.parent if str(target.parent) else Path("."), output_patterns(target), now=now)
