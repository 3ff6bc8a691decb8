"""Where crash-recovery files live (:mod:`manifold_studio.project.recovery`), without importing
projects or the session: the start-up housekeeping of every command reads it."""
from __future__ import annotations

import os
import sys
from pathlib import Path

__all__ = ["recovery_dir"]


def recovery_dir() -> Path:
    env = os.environ.get("MANIFOLD_STUDIO_RECOVERY_DIR")
    if env:
        return Path(env)
    if sys.platform.startswith("win"):
        base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "Manifold Studio"
    elif sys.platform == "darwin":
        base = Path.home() / "Library" / "Application Support" / "Manifold Studio"
    else:
        base = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share") / "manifold-studio"
    return base / "recovery"
