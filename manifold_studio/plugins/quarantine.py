"""Quarantine of third-party plugins whose import probe failed (Qt-free).

Before a third-party plugin (user plugin folder or pip; never a built-in one) is imported into
the application, :func:`verdicts` makes sure the import probe (:mod:`manifold_studio.plugins.probe`)
has passed on its files as they are now, imported from where they are imported at start-up (the
plugin folder: a plugin probed only in the installer's staging folder is probed again from the
plugin folder). The probe's verdicts are remembered in a JSON file next to the plugin settings
(:func:`cache_path`), keyed by a fingerprint of what the import depends on: the plugin's files
(their paths, sizes and modification times, ``__pycache__`` left out) and their location, the
entry points probed, and the probe's inputs — the application's version, the interpreter and its
version, and the versions of the installed distributions (:func:`environment_key`; the plugin
folder's own plugins left out). As long as the fingerprint is unchanged no probe runs again, so
start-up stays fast; a new Python, a new version of the application or of any installed
dependency probes every plugin again. A plugin whose probe crashed, hung or raised is *quarantined*: it
is not imported, and stays so until its files change (a new version, an edit) or the user
re-enables it (``manifold-studio plugins enable NAME``, or its tick in Tools ▸ Plugins), which
forgets the verdict (:func:`forget`) so that the next start probes it again.
"""
from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from importlib import metadata
from pathlib import Path

from manifold_studio.plugins.folder import plugin_dir, settings_path
from manifold_studio.plugins.probe import EntryVerdict, run_probe
from manifold_studio.plugins.wheels import normalise
from manifold_studio.version import __version__

MAX_FILES = 20_000  # files looked at for one fingerprint
RETRY_HINT = ("fix or update the plugin (a changed plugin is probed again at the next start), or "
              "retry with 'manifold-studio plugins enable {name}'")


def cache_path() -> Path:
    """The probe verdicts: a hidden file next to the plugin settings (``settings.json`` ->
    ``.settings-probes.json``)."""
    settings = settings_path()
    return settings.with_name(f".{settings.stem}-probes.json")


def read_cache() -> dict[str, dict]:
    try:
        data = json.loads(cache_path().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {k: v for k, v in data.items() if isinstance(k, str) and isinstance(v, dict)} \
        if isinstance(data, dict) else {}


def write_cache(entries: dict[str, dict]) -> None:
    """Save the verdicts (atomically; a folder that cannot be written only costs a probe at the
    next start)."""
    path = cache_path()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(entries, indent=1, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)
    except OSError:
        pass


def _files_of(dist, folder: Path | None):
    """The files that make up a distribution: every file of its own plugin sub-folder, or the
    files its RECORD lists (pip)."""
    if folder is not None:
        count = 0
        for base, dirs, files in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(files):
                if not name.endswith(".pyc"):
                    count += 1
                    if count > MAX_FILES:
                        return
                    yield Path(base) / name
        return
    for rel in (getattr(dist, "files", None) or [])[:MAX_FILES]:
        if "__pycache__" not in rel.parts and rel.suffix != ".pyc":
            yield Path(dist.locate_file(rel))


_ENVIRONMENT: dict[str, str] = {}


def environment_key() -> str:
    """A hash of the installed distributions' names and versions, the plugin folder's own plugins
    left out (each has its own fingerprint): computed once per process and plugin folder."""
    root = os.path.realpath(str(plugin_dir()))
    if root not in _ENVIRONMENT:
        items = set()
        for dist in metadata.distributions():
            try:
                where = os.path.realpath(str(dist.locate_file("")))
                name = dist.metadata["Name"]
            except Exception:  # noqa: BLE001 - a damaged distribution only leaves itself out
                continue
            if where == root or where.startswith(root + os.sep):
                continue
            items.add(f"{normalise(name or '')}=={dist.version}")
        _ENVIRONMENT[root] = hashlib.sha256("\n".join(sorted(items)).encode("utf-8", "replace")).hexdigest()
    return _ENVIRONMENT[root]


def fingerprint(dist, entry_points: list[tuple[str, str]], folder: Path | None = None) -> str:
    """A hash of what the probe's verdict depends on (see the module docstring)."""
    h = hashlib.sha256()
    where = os.path.realpath(str(folder)) if folder is not None else ""
    h.update(json.dumps([__version__, sys.executable, sys.version, sorted(entry_points), environment_key(),
                         where]).encode("utf-8", "surrogateescape"))
    if dist is not None:
        h.update(f"{dist.metadata['Name']}\0{dist.version}\0".encode())
    root = folder
    for path in _files_of(dist, folder) if dist is not None or folder is not None else ():
        try:
            st = path.stat()
        except OSError:
            continue
        rel = os.path.relpath(path, root) if root is not None else str(path)
        h.update(f"{rel}\0{st.st_size}\0{st.st_mtime_ns}\n".encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def verdicts(key: str, dist, entry_points: list[tuple[str, str]], folder: Path | None = None,
             sys_path: list[str] | None = None) -> dict[str, EntryVerdict]:
    """The probe's verdict on each entry point of one distribution (``key``: its normalised
    name): remembered ones while the fingerprint holds, else a new probe (remembered)."""
    fp = fingerprint(dist, entry_points, folder)
    cache = read_cache()
    entry = cache.get(key)
    if entry and entry.get("fingerprint") == fp and isinstance(entry.get("entry_points"), dict):
        known = {n: EntryVerdict.from_dict(n, d) for n, d in entry["entry_points"].items() if isinstance(d, dict)}
        if all(n in known for n, _ in entry_points):
            return known
    name = dist.metadata["Name"] if dist is not None else None
    found = run_probe(entry_points, sys_path, name)
    remember(key, fp, found)
    return found


def remember(key: str, fp: str, found: dict[str, EntryVerdict]) -> None:
    """Record the verdicts on one distribution (not when the probe itself could not run)."""
    if any(v.transient for v in found.values()):
        return
    cache = read_cache()
    cache[key] = {"fingerprint": fp, "probed_at": time.time(),
                  "entry_points": {n: v.as_dict() for n, v in found.items()}}
    write_cache(cache)


def forget(*names: str) -> bool:
    """Forget the verdicts on a distribution or entry point (so that it is probed again);
    True if there was one."""
    keys = {normalise(n) for n in names if n}
    cache = read_cache()
    drop = [k for k, v in cache.items() if k in keys or
            any(normalise(ep) in keys for ep in (v.get("entry_points") or {}))]
    for k in drop:
        del cache[k]
    if drop:
        write_cache(cache)
    return bool(drop)


def quarantined_names() -> set[str]:
    """Entry-point names (normalised) quarantined by the remembered verdicts."""
    return {normalise(n) for v in read_cache().values() for n, d in (v.get("entry_points") or {}).items()
            if isinstance(d, dict) and d.get("ok") is not True}


def retry_hint(name: str) -> str:
    return RETRY_HINT.format(name=name)
