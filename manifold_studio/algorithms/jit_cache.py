"""numba's disk cache in the installed (frozen) application: compiled loops are kept in a
per-user folder, seeded from the warmed cache the installer ships, never written into the
installation folder.

A PyInstaller bundle has no ``.py`` sources, so numba's own cache locators find no file to key
the cache on and every start compiled every loop again (``jit`` fell back to ``cache=False``).
:func:`configure` — called by the frozen entry script before anything imports numba — sets

- ``NUMBA_CACHE_DIR`` to the per-user cache folder (:func:`user_cache_dir`: ``~/.cache/
  manifold-studio/numba/VERSION``, ``%LOCALAPPDATA%\\Manifold Studio\\Cache\\numba\\VERSION``,
  ``~/Library/Caches/Manifold Studio/numba/VERSION``), unless it is set already to a folder outside
  the installation;
- ``NUMBA_CACHE_LOCATOR_CLASSES`` to :class:`~manifold_studio.algorithms.jit_locator.FrozenCacheLocator`,
  which keys a loop's cache on its module name and the application's version (not on a source
  path): the cache stays valid wherever the application is unpacked;

and copies the shipped cache (``numba_cache/`` beside the bundle's modules, made by
``installer/build.py`` by running the self-test once) into the per-user folder the first time.
numba still checks each entry (numba version, CPU, the function's bytecode): a stale or foreign
entry is compiled again, never used. Outside a frozen application nothing changes (numba caches
next to the sources, ``__pycache__``). Importing this module does not import numba.
"""
from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

from manifold_studio.version import __version__

__all__ = ["configure", "user_cache_dir", "SHIPPED_FOLDER", "LOCATOR"]

#: the warmed cache inside the bundle (``sys._MEIPASS``), read-only at run time
SHIPPED_FOLDER = "numba_cache"
LOCATOR = "manifold_studio.algorithms.jit_locator.FrozenCacheLocator"
_SEEDED = ".seeded"


def _version() -> str:
    return __version__


def user_cache_dir() -> Path:
    """The per-user folder of compiled loops for this version of the application."""
    try:
        import platformdirs

        base = Path(platformdirs.user_cache_dir("Manifold Studio" if sys.platform in ("win32", "darwin")
                                                else "manifold-studio", appauthor=False))
    except ImportError:
        if sys.platform == "win32":
            base = Path(os.environ.get("LOCALAPPDATA") or Path.home() / "AppData" / "Local") / "Manifold Studio" / "Cache"
        elif sys.platform == "darwin":
            base = Path.home() / "Library" / "Caches" / "Manifold Studio"
        else:
            base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "manifold-studio"
    return base / "numba" / _version()


def install_folders() -> list[Path]:
    """The folders of the installed application (the bundle's modules and the executable's)."""
    folders = [Path(sys.executable).resolve().parent]
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        folders.append(Path(meipass).resolve())
    return folders


def _inside(path: Path, folders: list[Path]) -> bool:
    path = path.expanduser().resolve()
    return any(path == f or f in path.parents for f in folders)


def configure(environ=None) -> Path | None:
    """In a frozen application: point numba's cache at the per-user folder, seeded from the
    shipped cache, and install the frozen locator (see the module docstring). Returns the cache
    folder, or None when not frozen (nothing is changed)."""
    if not getattr(sys, "frozen", False):
        return None
    environ = os.environ if environ is None else environ
    given = environ.get("NUMBA_CACHE_DIR")
    folder = Path(given) if given and not _inside(Path(given), install_folders()) else user_cache_dir()
    environ["NUMBA_CACHE_DIR"] = str(folder)
    environ.setdefault("NUMBA_CACHE_LOCATOR_CLASSES", LOCATOR)
    meipass = getattr(sys, "_MEIPASS", None)
    if meipass:
        seed(Path(meipass) / SHIPPED_FOLDER, folder)
    return folder


def seed(shipped: Path, folder: Path) -> bool:
    """Copy the shipped cache into ``folder`` once (a marker file says it was); a folder that
    cannot be written is left alone (the loops are then compiled as they are used)."""
    marker = folder / _SEEDED
    if not shipped.is_dir() or marker.exists():
        return False
    try:
        shutil.copytree(shipped, folder, dirs_exist_ok=True)
        for path in [folder, *folder.rglob("*")]:  # the shipped files may be read-only
            path.chmod(path.stat().st_mode | 0o200)
        marker.write_text(_version(), encoding="utf-8")
    except OSError:
        return False
    return True
