"""The plugin manager (Qt-free): install plugin wheels into a per-user plugin folder, uninstall,
enable/disable and list plugins. Used by ``manifold-studio plugins ...`` and Tools ▸ Plugins.

The plugin folder and the settings are :mod:`manifold_studio.plugins.folder`. Every installed
wheel is unpacked into its own sub-folder ``<plugin folder>/<normalised distribution name>/``
(which the plugin host puts on ``sys.path`` and reads with ``importlib.metadata.distributions(
path=[...])``), so uninstalling is removing that one folder, and it works the same from pip and
inside the frozen application. Only folders recorded in the manifest ``.installed.json`` (the ones
this manager created) are ever replaced or removed.

Installing a wheel (:func:`install_wheel`) validates it first (reading and checking the wheel
itself is :mod:`manifold_studio.plugins.wheels`) and changes nothing when it is
refused (:class:`PluginInstallError`, with a message naming the problem): not a zip; no
``.dist-info``; no entry point in the group ``manifold_studio.plugins``; a Python, ABI or
platform tag this interpreter cannot run (the message names the tags); a ``Requires-Dist`` the
application does not have (named); an algorithm/loader/sample id that a built-in plugin (or
another installed plugin) already provides, or an import that crashes, hangs or raises (the
plugin is imported from a staging folder by a time-boxed probe process, to learn its ids:
:mod:`manifold_studio.plugins.probe`); the plugin folder not writable. **Two versions**: installing
a wheel of a plugin that is already in the plugin folder *replaces* it (whatever the versions)
and the result's message says "replaced X 1.0 by 1.1"; a distribution of the same name installed
with pip is refused (upgrade it with pip).
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import zipfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from manifold_studio.plugins.folder import (  # noqa: F401 - the manager's public names
    APP_NAME,
    APP_TITLE,
    BUILTIN,
    DEFAULT_IMPORT_TIMEOUT,
    IMPORT_TIMEOUT_ENV,
    PIP,
    PLUGIN_DIR_ENV,
    SETTINGS_ENV,
    USER,
    _imported_from,
    disabled_names,
    forget_modules,
    import_timeout,
    is_disabled,
    plugin_dir,
    read_settings,
    settings_path,
    write_settings,
)
from manifold_studio.plugins import quarantine
from manifold_studio.plugins.host import current_host, ensure_plugin_path
from manifold_studio.plugins.probe import run_probe
from manifold_studio.plugins.wheels import (  # noqa: F401 - re-exported
    GROUP,
    OWN_DISTRIBUTION,
    PluginInstallError,
    WheelInfo,
    check_wheel,
    normalise,
    read_wheel,
    valid_distribution_name,
)

MAX_BYTES_ENV = "MANIFOLD_STUDIO_PLUGIN_MAX_BYTES"
MAX_FILES_ENV = "MANIFOLD_STUDIO_PLUGIN_MAX_FILES"
DEFAULT_MAX_BYTES = 512 * 2**20   # unpacked size of one wheel
DEFAULT_MAX_FILES = 20_000        # members of one wheel
MANIFEST = ".installed.json"      # the folders this manager created: the only ones it replaces or removes
# --------------------------------------------------------------------------------------
# folders and settings
# --------------------------------------------------------------------------------------
def _known_names() -> dict[str, tuple[str, str | None]]:
    """Every entry point of the group (and user-folder ones): normalised name -> (name, dist)."""
    ensure_plugin_path()
    names = {}
    for ep in metadata.entry_points(group=GROUP):
        dist = getattr(ep, "dist", None)
        dname = dist.metadata["Name"] if dist is not None else None
        names[normalise(ep.name)] = (ep.name, dname)
        if dname:
            names.setdefault(normalise(dname), (dname, dname))
    return names


def set_enabled(name: str, enabled: bool) -> str:
    """Enable or disable a plugin by entry-point name or distribution name (persisted).
    Disabling a distribution disables all its entry points; enabling an entry point enables
    its distribution too.

    Enabling also forgets the import probe's verdict on it (a quarantined plugin is probed again
    at the next discovery). Returns a message; raises :class:`PluginInstallError` for an unknown name or for disabling
    Manifold Studio itself (disable its plugins one by one instead)."""
    key = normalise(name)
    known = _known_names()
    disabled = disabled_names()
    if key not in known and key not in disabled:
        raise PluginInstallError(f"no plugin named '{name}' (see 'manifold-studio plugins list')")
    if key == OWN_DISTRIBUTION and not enabled:
        raise PluginInstallError("Manifold Studio itself cannot be disabled; disable its plugins "
                                 "one by one (e.g. builtin_kmeans)")
    data = read_settings()
    current = {normalise(n) for n in data.get("disabled", []) if isinstance(n, str)}
    if enabled:  # enabling an entry point also lifts a ban on its whole distribution
        current.discard(key)
        if key in known and known[key][1]:
            current.discard(normalise(known[key][1]))
        # and forgets a quarantine: the next discovery probes it again
        quarantine.forget(name, *(known[key][1:] if key in known else ()))
    else:
        current.add(key)
    data["disabled"] = sorted(current)
    write_settings(data)
    shown = known.get(key, (name,))[0]
    return f"{shown} {'enabled' if enabled else 'disabled'}"


# --------------------------------------------------------------------------------------
# install / uninstall
# --------------------------------------------------------------------------------------
@dataclass
class InstallResult:
    name: str
    version: str
    folder: Path
    entry_points: list[str]
    algorithms: list[str] = field(default_factory=list)
    loaders: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    preprocessors: list[str] = field(default_factory=list)
    replaced: str | None = None  # the version replaced, if any
    restart_needed: bool = False
    message: str = ""


def _writable_dir(folder: Path) -> Path:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = tempfile.NamedTemporaryFile(dir=folder, prefix=".write-test-", delete=True)
        probe.close()
    except OSError as exc:
        raise PluginInstallError(f"the plugin folder {folder} is not writable ({exc.strerror or exc}); "
                                 f"set {PLUGIN_DIR_ENV} to a folder you can write to") from None
    return folder


def _limit(env: str, default: int) -> int:
    try:
        return max(1, int(os.environ.get(env, default)))
    except ValueError:
        return default


def _inside(root: Path, name: str) -> Path:
    """``root / name`` for a validated distribution name, after proving that it stays inside the
    plugin folder: not a symbolic link, and its resolved parent is the resolved plugin folder."""
    key = normalise(valid_distribution_name(name))
    target = root / key
    real_root = root.resolve()
    if target.is_symlink() or target.resolve().parent != real_root or target.resolve().name != key:
        raise PluginInstallError(
            f"{target} is not a plain folder inside the plugin folder {real_root} (a link?); "
            f"nothing was changed")
    return target


def _read_manifest(root: Path) -> dict[str, dict]:
    try:
        data = json.loads((root / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    entries = data.get("installed") if isinstance(data, dict) else None
    return {k: v for k, v in entries.items() if isinstance(k, str) and isinstance(v, dict)} \
        if isinstance(entries, dict) else {}


def _write_manifest(root: Path, entries: dict[str, dict]) -> None:
    tmp = root / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps({"installed": entries}, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(tmp, root / MANIFEST)


def _owned(root: Path, folder: Path) -> bool:
    """True if the plugin manager created ``folder`` (it is in the manifest under its name)."""
    entry = _read_manifest(root).get(folder.name)
    return entry is not None and entry.get("folder") == folder.name


def _unpack(wheel: Path, dest: Path) -> None:
    """Extract a wheel member by member into ``dest``, refusing more than the member and size
    limits (checked on the declared sizes before anything is written, and again while copying,
    so a member that inflates past its declared size is cut off) and anything that would land
    outside ``dest``."""
    max_bytes, max_files = _limit(MAX_BYTES_ENV, DEFAULT_MAX_BYTES), _limit(MAX_FILES_ENV, DEFAULT_MAX_FILES)
    real = dest.resolve()
    with zipfile.ZipFile(wheel) as zf:
        members = zf.infolist()
        if len(members) > max_files:
            raise PluginInstallError(
                f"{wheel.name} has {len(members):,} files, more than the limit of {max_files:,} "
                f"(set {MAX_FILES_ENV} to raise it); nothing was installed")
        declared = sum(m.file_size for m in members)
        if declared > max_bytes:
            raise PluginInstallError(
                f"{wheel.name} unpacks to {declared:,} bytes, more than the limit of {max_bytes:,} "
                f"(set {MAX_BYTES_ENV} to raise it); nothing was installed")
        written = 0
        for m in members:
            out = (dest / m.filename).resolve()
            if real not in out.parents and out != real:
                raise PluginInstallError(f"{wheel.name}: the member {m.filename!r} would be written outside "
                                         f"the plugin's folder; nothing was installed")
            if m.is_dir():
                out.mkdir(parents=True, exist_ok=True)
                continue
            out.parent.mkdir(parents=True, exist_ok=True)
            with zf.open(m) as src, open(out, "wb") as dst:
                while chunk := src.read(1 << 20):
                    written += len(chunk)
                    if written > max_bytes:
                        raise PluginInstallError(
                            f"{wheel.name}: the member {m.filename!r} inflates past the limit of "
                            f"{max_bytes:,} bytes; nothing was installed")
                    dst.write(chunk)


def installed_folder(name: str) -> Path:
    """The sub-folder of the plugin folder holding distribution ``name`` (normally its normalised
    name; a folder copied by hand is found by the distribution it holds)."""
    target = plugin_dir() / normalise(name)
    if not target.is_dir() and plugin_dir().is_dir():
        for sub in sorted(plugin_dir().iterdir()):
            dist = _dist_in(sub) if sub.is_dir() and not sub.name.startswith(".") else None
            if dist is not None and normalise(dist.metadata["Name"]) == normalise(name):
                return sub
    return target


def _dist_in(folder: Path):
    return next(iter(metadata.distributions(path=[str(folder)])), None)


def _pip_distribution(name: str):
    """A distribution called ``name`` installed outside the plugin folder, or None."""
    root = plugin_dir().resolve()
    for dist in metadata.distributions():
        if normalise(dist.metadata["Name"]) != normalise(name):
            continue
        try:
            where = Path(dist.locate_file("")).resolve()
        except Exception:  # noqa: BLE001
            where = None
        if where is None or root not in (where, *where.parents):
            return dist
    return None


def _probe(staging: Path, info: WheelInfo, replacing: str | None) -> dict:
    """Import the staged plugin in a probe process (:mod:`manifold_studio.plugins.probe`: a crash,
    a hang or an exception there cannot touch this process); refuse failures and id clashes.
    Returns the verdicts by entry-point name."""
    host = current_host()
    owner = {}
    for pname, pinfo in host.plugins.items():
        if replacing and pinfo.distribution and normalise(pinfo.distribution) == normalise(replacing):
            continue
        for kind, ids in (("algorithm", pinfo.algorithms), ("loader", pinfo.loaders), ("sample", pinfo.samples),
                          ("preparation step", pinfo.preprocessors)):
            for i in ids:
                owner[(kind, i)] = (pname, pinfo.builtin)
    dist = _dist_in(staging)
    eps = sorted((ep.name, ep.value) for ep in dist.entry_points.select(group=GROUP))
    # the staged code comes first, before any installed version of it
    found = run_probe(eps, [str(staging)] + [p for p in sys.path if p != str(staging)], info.name)
    for name, _ in eps:
        verdict = found[name]
        if not verdict.ok:
            raise PluginInstallError(f"{info.name} {info.version} cannot be loaded, nothing was installed: "
                                     f"plugin '{name}': {verdict.reason}")
        for kind, ids in (("algorithm", verdict.algorithms), ("loader", verdict.loaders), ("sample", verdict.samples),
                          ("preparation step", verdict.preprocessors)):
            for i in ids:
                if (kind, i) in owner:
                    who, builtin = owner[(kind, i)]
                    what = f"the built-in {kind} '{i}'" if builtin else f"the {kind} '{i}' of the plugin {who}"
                    raise PluginInstallError(
                        f"{info.name} {info.version} would replace {what}; nothing was installed "
                        f"(a plugin must use its own ids)")
    return found


def install_wheel(path) -> InstallResult:
    """Validate and install a plugin wheel into the plugin folder (see the module docstring).

    Raises :class:`PluginInstallError` (nothing changed) when the wheel is refused. The running
    process's host is not touched: call :func:`manifold_studio.plugins.host.reload_host` to load it."""
    info = read_wheel(path)
    check_wheel(info)
    pip_dist = _pip_distribution(info.name)
    if pip_dist is not None:
        raise PluginInstallError(
            f"{info.name} {pip_dist.version} is already installed with pip; upgrade it with pip "
            f"(pip install --upgrade {info.name}) or uninstall it first")
    root = _writable_dir(plugin_dir())
    target = _inside(root, info.name)
    if target.exists() and not _owned(root, target):
        raise PluginInstallError(
            f"{target} exists but was not created by the plugin manager; nothing was changed "
            f"(move or remove that folder yourself to install {info.name} here)")
    old_dist = _dist_in(target) if target.is_dir() else None
    old = old_dist.version if old_dist is not None else None  # read now: the folder is replaced below
    staging = Path(tempfile.mkdtemp(prefix=".staging-", dir=root))
    trash = None
    try:
        try:
            _unpack(info.path, staging)
        except (OSError, zipfile.BadZipFile, EOFError, NotImplementedError) as exc:
            raise PluginInstallError(f"cannot unpack {info.path.name} into {root}: {exc}") from None
        found = _probe(staging, info, info.name if old is not None else None)
        restart = False
        entries = _read_manifest(root)
        if target.exists():
            restart = bool(_imported_from(target))
            trash = Path(tempfile.mkdtemp(prefix=".old-", dir=root))
            os.replace(target, trash / "old")
        os.replace(staging, target)
        entries[target.name] = {"folder": target.name, "name": info.name, "version": info.version}
        _write_manifest(root, entries)
        # the staging folder's verdict is not reused: the next start probes the plugin imported
        # from the plugin folder, where it runs (a plugin may behave differently there)
        quarantine.forget(info.name)
    except OSError as exc:
        raise PluginInstallError(f"cannot install into the plugin folder {root}: {exc.strerror or exc}") from None
    finally:
        for leftover in (staging, trash):
            if leftover is not None and leftover.exists():
                shutil.rmtree(leftover, ignore_errors=True)
    res = InstallResult(info.name, info.version, target, sorted(info.entry_points),
                        replaced=old, restart_needed=restart)
    for verdict in found.values():
        res.algorithms += verdict.algorithms
        res.loaders += verdict.loaders
        res.samples += verdict.samples
        res.preprocessors += verdict.preprocessors
    provided = provided_text(res)
    verb = f"replaced {info.name} {old} by {info.version}" if old is not None else \
        f"installed {info.name} {info.version}"
    res.message = f"{verb} into {root} (provides: {provided})"
    if restart:
        res.message += "; restart Manifold Studio so that every window uses the new version"
    return res


def provided_text(res) -> str:
    """What a plugin provides, by kind: ``algorithms: a, b; preparation steps: c`` (or a sentence
    saying it registers nothing)."""
    kinds = (("algorithm", res.algorithms), ("preparation step", res.preprocessors), ("loader", res.loaders),
             ("sample data set", res.samples))
    parts = [f"{noun}{'s' if len(ids) > 1 else ''}: {', '.join(ids)}" for noun, ids in kinds if ids]
    return "; ".join(parts) or "no algorithm, preparation step, loader or sample data set"


def uninstall(name: str) -> str:
    """Remove a plugin installed in the plugin folder by the plugin manager; returns a message.
    ``name`` is the distribution name or the entry-point name that ``plugins list`` shows."""
    name = _distribution_for(name)
    target = installed_folder(name)
    if not target.is_dir():
        if _pip_distribution(name) is not None:
            raise PluginInstallError(f"{name} was installed with pip, not in the plugin folder: "
                                     f"uninstall it with 'pip uninstall {name}'")
        raise PluginInstallError(f"no plugin named '{name}' in the plugin folder {plugin_dir()}")
    root = plugin_dir()
    if target.is_symlink() or target.resolve().parent != root.resolve() or not _owned(root, target):
        raise PluginInstallError(
            f"{target} was not installed by the plugin manager (copied by hand?): nothing was removed; "
            f"remove that folder yourself")
    dist = _dist_in(target)
    label = f"{dist.metadata['Name']} {dist.version}" if dist is not None else name  # before removal
    try:
        shutil.rmtree(target)
    except OSError as exc:
        raise PluginInstallError(f"cannot remove {target}: {exc.strerror or exc}") from None
    entries = _read_manifest(root)
    entries.pop(target.name, None)
    try:
        _write_manifest(root, entries)
    except OSError:
        pass  # the folder is gone; a stale manifest entry names nothing
    forget_modules(target)
    return f"uninstalled {label}"


def _distribution_for(name: str) -> str:
    """The distribution name for ``name``: itself, or the distribution of the entry point so
    named in the plugin folder (``plugins list`` shows entry-point names)."""
    if not isinstance(name, str) or not name.strip():
        raise PluginInstallError("no plugin name given")
    root = plugin_dir()
    if root.is_dir() and not (root / normalise(name)).is_dir():
        for sub in sorted(root.iterdir()):
            dist = _dist_in(sub) if sub.is_dir() and not sub.name.startswith(".") else None
            if dist is not None and any(normalise(ep.name) == normalise(name)
                                        for ep in dist.entry_points.select(group=GROUP)):
                return dist.metadata["Name"]
    if not _is_valid_name(name):
        raise PluginInstallError(f"no plugin named {name[:60]!r}: not a valid plugin name")
    return name


def _is_valid_name(name: str) -> bool:
    try:
        valid_distribution_name(name)
    except PluginInstallError:
        return False
    return True


# --------------------------------------------------------------------------------------
# listing
# --------------------------------------------------------------------------------------
@dataclass
class PluginRecord:
    name: str  # entry-point name
    distribution: str | None
    version: str | None
    origin: str  # BUILTIN, USER or PIP
    status: str  # "loaded", "disabled", "failed", "quarantined" (its import probe failed: not imported)
    algorithms: list[str] = field(default_factory=list)
    loaders: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    preprocessors: list[str] = field(default_factory=list)
    error: str = ""
    traceback: str = ""

    def as_dict(self) -> dict:
        return dict(self.__dict__)


def list_plugins(host=None) -> list[PluginRecord]:
    """Every plugin the host saw: loaded, disabled and failed, with origin and version."""
    host = current_host() if host is None else host
    records = []
    for name, src in sorted(host.sources.items()):
        rec = PluginRecord(name, src.distribution, src.version, src.origin, "loaded")
        pinfo = host.plugins.get(name)
        if pinfo is not None:
            rec.algorithms, rec.loaders, rec.samples = list(pinfo.algorithms), list(pinfo.loaders), list(pinfo.samples)
            rec.preprocessors = list(pinfo.preprocessors)
        if name in host.disabled:
            rec.status = "disabled"
        fails = [f for f in host.failures if f.plugin == name]
        if fails:
            rec.status = "quarantined" if any(f.quarantined for f in fails) else \
                "failed" if pinfo is None else "loaded"
            rec.error = "; ".join(f.error for f in fails)
            rec.traceback = "\n\n".join(f.detail or str(f) for f in fails)
        records.append(rec)
    return records
