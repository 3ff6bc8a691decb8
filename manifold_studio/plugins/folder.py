"""The per-user plugin folder and the plugin settings (Qt-free): where plugins are installed,
which ones the user disabled, how long an import may take, and forgetting the modules imported
from a folder. Shared by the plugin host (discovery) and the plugin manager (install, enable).

Folders
-------
- **Plugin folder**: ``MANIFOLD_STUDIO_PLUGIN_DIR`` if set, else ``platformdirs.user_data_dir(
  "manifold-studio") / "plugins"`` when platformdirs is importable, else ``%LOCALAPPDATA%\\Manifold
  Studio\\plugins`` (Windows), ``~/Library/Application Support/Manifold Studio/plugins`` (macOS),
  ``$XDG_DATA_HOME/manifold-studio/plugins`` (others, default ``~/.local/share``).
- **Settings** (the disabled plugins, JSON): ``MANIFOLD_STUDIO_PLUGIN_SETTINGS`` if set; else,
  when ``MANIFOLD_STUDIO_PLUGIN_DIR`` is set, ``<plugin folder>/settings.json``; else
  ``plugins.json`` in the user config folder.
"""
from __future__ import annotations

import importlib
import json
import os
import sys
from pathlib import Path

from manifold_studio.plugins.wheels import PluginInstallError, normalise

PLUGIN_DIR_ENV = "MANIFOLD_STUDIO_PLUGIN_DIR"
SETTINGS_ENV = "MANIFOLD_STUDIO_PLUGIN_SETTINGS"
IMPORT_TIMEOUT_ENV = "MANIFOLD_STUDIO_PLUGIN_IMPORT_TIMEOUT"
DEFAULT_IMPORT_TIMEOUT = 10.0
APP_NAME = "manifold-studio"
APP_TITLE = "Manifold Studio"

BUILTIN, USER, PIP = "built-in", "user folder", "pip"






def _platformdirs():
    try:
        import platformdirs
    except ImportError:
        return None
    return platformdirs


def _fallback_base(config: bool) -> Path:
    if sys.platform.startswith("win"):
        var = "APPDATA" if config else "LOCALAPPDATA"
        sub = "Roaming" if config else "Local"
        return Path(os.environ.get(var) or Path.home() / "AppData" / sub) / APP_TITLE
    if sys.platform == "darwin":
        lib = "Preferences" if config else "Application Support"
        return Path.home() / "Library" / lib / APP_TITLE
    var, default = ("XDG_CONFIG_HOME", ".config") if config else ("XDG_DATA_HOME", ".local/share")
    return Path(os.environ.get(var) or Path.home() / default) / APP_NAME


def plugin_dir() -> Path:
    """The per-user plugin folder (see the module docstring); not created here."""
    env = os.environ.get(PLUGIN_DIR_ENV)
    if env:
        return Path(env).expanduser()
    pd = _platformdirs()
    base = Path(pd.user_data_dir(APP_NAME, appauthor=False)) if pd else _fallback_base(False)
    return base / "plugins"


def settings_path() -> Path:
    env = os.environ.get(SETTINGS_ENV)
    if env:
        return Path(env).expanduser()
    if os.environ.get(PLUGIN_DIR_ENV):
        return plugin_dir() / "settings.json"
    pd = _platformdirs()
    base = Path(pd.user_config_dir(APP_NAME, appauthor=False)) if pd else _fallback_base(True)
    return base / "plugins.json"


def import_timeout() -> float:
    try:
        return max(0.01, float(os.environ.get(IMPORT_TIMEOUT_ENV, DEFAULT_IMPORT_TIMEOUT)))
    except ValueError:
        return DEFAULT_IMPORT_TIMEOUT


def read_settings() -> dict:
    try:
        data = json.loads(settings_path().read_text(encoding="utf-8"))
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def disabled_names() -> set[str]:
    """Names (entry-point names or normalised distribution names) the user disabled."""
    return {normalise(n) for n in read_settings().get("disabled", []) if isinstance(n, str)}


def is_disabled(entry_point: str, distribution: str | None, disabled: set[str] | None = None) -> bool:
    disabled = disabled_names() if disabled is None else disabled
    return normalise(entry_point) in disabled or (distribution is not None and normalise(distribution) in disabled)


def write_settings(data: dict) -> None:
    path = settings_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError as exc:
        raise PluginInstallError(f"cannot save the plugin settings to {path}: {exc.strerror or exc}") from None


def _imported_from(folder: Path) -> list[str]:
    # both spellings: a module imported through a linked plugin folder keeps the link's path
    prefixes = tuple({str(folder.absolute()) + os.sep, str(folder.resolve()) + os.sep})
    return [name for name, mod in list(sys.modules.items())
            if (getattr(mod, "__file__", None) or "").startswith(prefixes)]


def forget_modules(folder: Path) -> bool:
    """Drop the modules imported from ``folder`` from sys.modules (for reloading); True if any."""
    names = _imported_from(folder)
    for name in names:
        sys.modules.pop(name, None)
    importlib.invalidate_caches()
    return bool(names)
