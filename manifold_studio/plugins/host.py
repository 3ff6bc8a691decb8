"""The pluggy plugin host: discovery, registration and isolation of broken plugins.

Plugins arrive through the entry-point group ``manifold_studio.plugins`` — the built-in
ones too, from this project's own ``pyproject.toml``. Each entry point is loaded and each
hook implementation is called on its own, so a plugin that fails to import, raises in its
hook, or returns something invalid is recorded in :attr:`PluginHost.failures` and skipped
while every other plugin still loads.

Set ``MANIFOLD_STUDIO_DISABLE_PLUGINS=1`` to load only the plugins shipped with
Manifold Studio itself (third-party plugins are then skipped and listed as disabled).

The per-user plugin folder of :mod:`manifold_studio.plugins.manager` (wheels installed with
Tools ▸ Plugins or ``manifold-studio plugins install``) is added to ``sys.path`` before
discovery (:func:`ensure_plugin_path`), so its entry points are found like pip-installed ones.
Plugins the user disabled are skipped (listed in :attr:`PluginHost.disabled`). A third-party
plugin (user folder or pip) is imported here only once its import probe has passed
(:mod:`manifold_studio.plugins.quarantine`: a short-lived process imports it first, again whenever
its files change): one whose probe crashed, hung (``MANIFOLD_STUDIO_PLUGIN_IMPORT_TIMEOUT``
seconds, default 10) or raised is recorded as a *quarantined* failure, with the reason and how to
retry, and the application starts without it. The import itself is still time-boxed in a thread.
:func:`reload_host` rediscovers without restarting.
"""
from __future__ import annotations

import difflib
import importlib
import os
import sys
import threading
import traceback
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Callable

import pluggy

from manifold_studio import hookspecs
from manifold_studio.algorithms.base import Algorithm
from manifold_studio.algorithms.class_contract import validate_algorithm_class
from manifold_studio.algorithms.pipeline import register_step_source
from manifold_studio.algorithms.preprocessing import Preprocessor, validate_preprocessor_class
from manifold_studio.data import Loader, Sample
from manifold_studio.errors import DataError, PluginError, UnknownAlgorithmError
from manifold_studio.plugins import folder as plugin_folder
from manifold_studio.plugins import quarantine
from manifold_studio.plugins.wheels import normalise

DISABLE_ENV = "MANIFOLD_STUDIO_DISABLE_PLUGINS"
OWN_DISTRIBUTION = "manifold-studio"


@dataclass
class PluginFailure:
    plugin: str
    stage: str  # "import", "hook", "invalid"
    error: str
    detail: str = ""
    #: its import probe crashed, hung or raised: it was not imported into this process
    quarantined: bool = False

    def __str__(self):
        if self.quarantined:
            return f"plugin '{self.plugin}' quarantined ({self.stage}): {self.error}"
        return f"plugin '{self.plugin}' ({self.stage}): {self.error}"


@dataclass
class PluginInfo:
    name: str
    distribution: str | None
    builtin: bool
    algorithms: list[str] = field(default_factory=list)
    loaders: list[str] = field(default_factory=list)
    samples: list[str] = field(default_factory=list)
    preprocessors: list[str] = field(default_factory=list)


@dataclass
class PluginSource:
    """Where an entry point came from: its distribution, version and origin
    (``"built-in"``, ``"user folder"`` or ``"pip"``)."""
    distribution: str | None
    version: str | None
    origin: str


_ON_PATH: set[str] = set()   # the plugin folders ensure_plugin_path put on sys.path


def ensure_plugin_path() -> list[str]:
    """Put every sub-folder of the user plugin folder on ``sys.path`` (and drop the ones that
    were uninstalled); returns the folders."""
    root = plugin_folder.plugin_dir()
    try:
        folders = sorted(str(p) for p in root.iterdir() if p.is_dir() and not p.name.startswith("."))
    except OSError:
        folders = []
    prefix = str(root) + os.sep
    # drop uninstalled folders, and the folders of an earlier plugin folder (its setting changed)
    sys.path[:] = [p for p in sys.path if p in folders or not (p.startswith(prefix) or p in _ON_PATH)]
    for folder in folders:
        if folder not in sys.path:
            sys.path.append(folder)
    _ON_PATH.clear()
    _ON_PATH.update(folders)
    importlib.invalidate_caches()
    return folders


def _origin(dist, builtin: bool) -> str:
    if builtin:
        return plugin_folder.BUILTIN
    try:
        where = os.path.realpath(str(dist.locate_file("")))
        root = os.path.realpath(str(plugin_folder.plugin_dir()))
        if where == root or where.startswith(root + os.sep):
            return plugin_folder.USER
    except Exception:  # noqa: BLE001 - odd distribution objects: call it pip
        pass
    return plugin_folder.PIP


def _name_version(dist, read: dict) -> tuple[str | None, str | None]:
    """A distribution's (Name, Version), its metadata parsed once per distribution folder
    (``read`` keeps them: every entry point of one distribution names the same metadata, and
    parsing it is a good part of discovery's time)."""
    if dist is None:
        return None, None
    key = str(getattr(dist, "_path", "")) or id(dist)
    if key not in read:
        md = dist.metadata
        read[key] = (md["Name"], md["Version"])
    return read[key]


def _dist_folder(dist):
    """The plugin sub-folder holding a user-folder distribution (where its files are)."""
    return Path(os.path.realpath(str(dist.locate_file(""))))


class PluginImportTimeout(PluginError, TimeoutError):
    """A plugin's import did not finish within the time limit."""


def load_timeboxed(ep, timeout: float):
    """``ep.load()`` in a daemon thread; raises PluginImportTimeout after ``timeout`` seconds
    (the thread is left behind: a hanging import cannot be killed)."""
    box: dict = {}

    def run():
        try:
            box["obj"] = ep.load()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller
            box["exc"] = exc

    thread = threading.Thread(target=run, name=f"plugin-import-{ep.name}", daemon=True)
    thread.start()
    thread.join(timeout)
    if thread.is_alive():
        raise PluginImportTimeout(f"did not finish importing within {timeout:g} s (skipped; "
                                  "the plugin may be waiting for something forever)")
    if "exc" in box:
        raise box["exc"]
    return box["obj"]


def _normalise(dist_name: str | None) -> str:
    return (dist_name or "").lower().replace("_", "-")


def third_party_disabled() -> bool:
    return os.environ.get(DISABLE_ENV, "").strip().lower() in {"1", "true", "yes", "on"}


class PluginHost:
    """Owns a pluggy PluginManager and the algorithms, loaders and samples it provides."""

    def __init__(self):
        self.pm = pluggy.PluginManager(hookspecs.PROJECT_NAME)
        self.pm.add_hookspecs(hookspecs)
        self.algorithms: dict[str, type[Algorithm]] = {}
        self.loaders: dict[str, Loader] = {}
        self.samples: dict[str, Sample] = {}
        self.preprocessors: dict[str, type[Preprocessor]] = {}
        self.failures: list[PluginFailure] = []
        self.plugins: dict[str, PluginInfo] = {}
        self.disabled: list[str] = []
        #: every entry point seen (loaded, failed or disabled): name -> PluginSource
        self.sources: dict[str, PluginSource] = {}

    # -- discovery ----------------------------------------------------------------
    def discover(self, group: str = hookspecs.ENTRY_POINT_GROUP) -> "PluginHost":
        """Load every entry point of ``group`` (user plugin folder included), isolating failures."""
        only_builtin = third_party_disabled()
        ensure_plugin_path()
        disabled = plugin_folder.disabled_names()
        timeout = plugin_folder.import_timeout()
        seen = set()
        chosen = []
        read: dict = {}   # a distribution's (name, version), its metadata file parsed once
        for ep in sorted(metadata.entry_points(group=group), key=lambda e: e.name):
            dist = getattr(ep, "dist", None)
            dist_name, version = _name_version(dist, read)
            builtin = _normalise(dist_name) == OWN_DISTRIBUTION
            if ep.name in seen:  # same distribution visible twice on sys.path
                continue
            seen.add(ep.name)
            self.sources[ep.name] = PluginSource(dist_name, version,
                                                 _origin(dist, builtin) if dist is not None else plugin_folder.PIP)
            if (only_builtin and not builtin) or plugin_folder.is_disabled(ep.name, dist_name, disabled):
                self.disabled.append(ep.name)
                continue
            chosen.append((ep, dist, dist_name, builtin))
        passed = self._probe_third_party([c for c in chosen if not c[3]])
        for ep, _dist, dist_name, builtin in chosen:
            if builtin or ep.name in passed:
                self.load_entry_point(ep, dist_name, builtin, None if builtin else timeout)
        return self

    def _probe_third_party(self, chosen: list) -> set[str]:
        """Run the import probe (:mod:`manifold_studio.plugins.quarantine`) on the third-party
        entry points, one distribution at a time; record the quarantined ones as failures and
        return the names of those that passed."""
        by_dist: dict[str, list] = {}
        for ep, dist, dist_name, _ in chosen:
            key = normalise(dist_name) if dist_name else f"entry-point:{ep.name}"
            by_dist.setdefault(key, []).append((ep, dist))
        passed = set()
        for key, items in by_dist.items():
            dist = items[0][1]
            folder = None
            if dist is not None and self.sources[items[0][0].name].origin == plugin_folder.USER:
                folder = _dist_folder(dist)
            found = quarantine.verdicts(key, dist, [(ep.name, ep.value) for ep, _ in items], folder)
            for ep, _ in items:
                verdict = found.get(ep.name)
                if verdict is not None and verdict.ok:
                    passed.add(ep.name)
                    continue
                reason = verdict.reason if verdict is not None else "its import probe gave no verdict"
                self.failures.append(PluginFailure(
                    ep.name, "import", f"{reason}; {quarantine.retry_hint(ep.name)}",
                    verdict.detail if verdict is not None else "", quarantined=True))
        return passed

    def load_entry_point(self, ep, distribution: str | None, builtin: bool,
                         timeout: float | None = None) -> PluginInfo | None:
        """Import one entry point (time-boxed when ``timeout`` is given) and register it."""
        if ep.name not in self.sources:
            self.sources[ep.name] = PluginSource(distribution, None, plugin_folder.BUILTIN if builtin else plugin_folder.PIP)
        try:
            obj = ep.load() if timeout is None else load_timeboxed(ep, timeout)
        except BaseException as exc:  # noqa: BLE001 - a plugin must never take the host down
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(ep.name, "import", exc)
            return None
        return self.register(obj, name=ep.name, distribution=distribution, builtin=builtin)

    def register(self, plugin: Any, name: str | None = None, distribution: str | None = None,
                 builtin: bool = False) -> PluginInfo | None:
        """Register one plugin object (module or instance) and collect what it provides."""
        name = name or getattr(plugin, "__name__", None) or type(plugin).__name__
        try:
            self.pm.register(plugin, name=name)
        except BaseException as exc:  # noqa: BLE001
            if isinstance(exc, KeyboardInterrupt):
                raise
            self._fail(name, "import", exc)
            return None
        if self._refuse_unknown_hooks(plugin, name):
            return None
        info = PluginInfo(name=name, distribution=distribution, builtin=builtin)
        self.plugins[name] = info
        self._collect(plugin, name, "register_algorithms", self._add_algorithm, info.algorithms)
        self._collect(plugin, name, "register_loaders", self._add_loader, info.loaders)
        self._collect(plugin, name, "register_samples", self._add_sample, info.samples)
        self._collect(plugin, name, "register_preprocessors", self._add_preprocessor, info.preprocessors)
        return info

    def _refuse_unknown_hooks(self, plugin, name: str) -> bool:
        """pluggy's ``check_pending()`` after registering ``plugin``: a hook implementation whose
        name matches no hook specification (a misspelling such as ``register_algorithm``) would
        never be called, so the plugin is unregistered and recorded as a failure naming each such
        hook and the nearest real one. Returns whether it was refused."""
        try:
            self.pm.check_pending()
            return False
        except pluggy.PluginValidationError:
            pass   # this plugin's unknown hooks, or another's registered around the host: see below
        specs = sorted(n for n, h in vars(self.pm.hook).items() if not n.startswith("_") and h.has_spec())
        unknown = sorted(n for n, h in vars(self.pm.hook).items() if not n.startswith("_") and not h.has_spec()
                         and any(i.plugin is plugin and not i.optionalhook for i in h.get_hookimpls()))
        if not unknown:
            return False
        self.pm.unregister(plugin)
        notes = []
        for hook in unknown:
            near = difflib.get_close_matches(hook, specs, n=1)
            notes.append(f"'{hook}'" + (f" (did you mean '{near[0]}'?)" if near else ""))
        self.failures.append(PluginFailure(
            name, "import", f"unknown hook {', '.join(notes)}: no such hook specification, so it would never "
            f"be called; the plugin was not loaded. Hooks are: {', '.join(specs)}.", quarantined=True))
        return True

    def _collect(self, plugin, name: str, hook_name: str, add: Callable, record: list) -> None:
        hook = getattr(self.pm.hook, hook_name)
        for impl in hook.get_hookimpls():
            if impl.plugin is not plugin:
                continue
            try:
                items = impl.function()
            except BaseException as exc:  # noqa: BLE001
                if isinstance(exc, KeyboardInterrupt):
                    raise
                self._fail(name, "hook", exc, f"{hook_name}() raised")
                continue
            if items is None:
                continue
            if not isinstance(items, (list, tuple)):
                self._fail(name, "invalid", TypeError(
                    f"{hook_name}() must return a list, got {type(items).__name__}"))
                continue
            for item in items:
                try:
                    record.append(add(item, name))
                except Exception as exc:  # noqa: BLE001
                    self._fail(name, "invalid", exc)

    def _add_algorithm(self, cls, plugin: str) -> str:
        validate_algorithm_class(cls)
        if cls.id in self.algorithms:
            raise PluginError(f"algorithm id '{cls.id}' is already provided by "
                              f"{self.algorithms[cls.id].__module__}")
        self.algorithms[cls.id] = cls
        return cls.id

    def _add_preprocessor(self, cls, plugin: str) -> str:
        validate_preprocessor_class(cls)
        if cls.id in self.preprocessors:
            raise PluginError(f"preparation step id '{cls.id}' is already provided by "
                              f"{self.preprocessors[cls.id].__module__}")
        self.preprocessors[cls.id] = cls
        return cls.id

    def _add_loader(self, loader, plugin: str) -> str:
        # a loader declares its extensions, or decides itself (a folder loader overrides can_load)
        if not isinstance(loader, Loader) or not loader.id or not (
                loader.extensions or type(loader).can_load is not Loader.can_load):
            raise TypeError(f"{loader!r} is not a Loader instance with an id and extensions")
        if loader.id in self.loaders:
            raise PluginError(f"loader id '{loader.id}' is already registered")
        self.loaders[loader.id] = loader
        return loader.id

    def _add_sample(self, sample, plugin: str) -> str:
        if not isinstance(sample, Sample) or not sample.id:
            raise TypeError(f"{sample!r} is not a Sample instance with an id")
        if sample.id in self.samples:
            raise PluginError(f"sample id '{sample.id}' is already registered")
        self.samples[sample.id] = sample
        return sample.id

    def _fail(self, plugin: str, stage: str, exc: BaseException, context: str = "") -> None:
        msg = f"{context}: {type(exc).__name__}: {exc}" if context else f"{type(exc).__name__}: {exc}"
        detail = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
        self.failures.append(PluginFailure(plugin, stage, msg, detail))

    # -- lookup ---------------------------------------------------------------------
    def is_third_party(self, algorithm_id: str) -> bool:
        """Whether the algorithm (or preparation step) comes from a plugin installed from another
        distribution (pip or the user plugin folder): its fits run in a worker process by default.
        Built-in plugins, and plugins registered by code already running in this process (a
        script, a test), do not."""
        for info in self.plugins.values():
            if algorithm_id in info.algorithms or algorithm_id in info.preprocessors:
                return bool(info.distribution) and not info.builtin
        return False

    def algorithm_class(self, algorithm_id: str) -> type[Algorithm]:
        try:
            return self.algorithms[algorithm_id]
        except KeyError:
            raise UnknownAlgorithmError(
                f"Unknown algorithm '{algorithm_id}': available are "
                f"{', '.join(sorted(self.algorithms)) or 'none (no plugin loaded)'}.") from None

    def preprocessor_class(self, step_id: str) -> type[Preprocessor]:
        try:
            return self.preprocessors[step_id]
        except KeyError:
            raise UnknownAlgorithmError(
                f"Unknown preparation step '{step_id}': available are "
                f"{', '.join(sorted(self.preprocessors)) or 'none (no plugin loaded)'}.") from None

    def get_preprocessor(self, step_id: str, **params) -> Preprocessor:
        """A new, validated preparation step ``step_id`` with ``params``."""
        step = self.preprocessor_class(step_id)()
        step.set_params(**params)
        step.validate_params()
        return step

    def loader_for(self, path) -> Loader:
        suffix = Path(path).suffix.lower()
        for loader in self.loaders.values():
            if loader.can_load(Path(path)):
                return loader
        known = sorted({e for l in self.loaders.values() for e in l.extensions})

        raise DataError(f"No loader reads '{suffix or Path(path).name}' files ({Path(path).name}); "
                        f"known extensions: {', '.join(known) or 'none'}.")


_host: PluginHost | None = None
_lock = threading.Lock()


def get_host() -> PluginHost:
    """The process-wide plugin host, discovered on first use."""
    global _host
    with _lock:
        if _host is None:
            _host = PluginHost().discover()
        return _host


def reset_host(host: PluginHost | None = None) -> PluginHost | None:
    """Replace (or drop, with None) the process-wide host; used by tests and the GUI."""
    global _host
    with _lock:
        _host = host
    return host


def current_host() -> PluginHost:
    """The process-wide host (alias of :func:`get_host`)."""
    return get_host()


def reload_host() -> PluginHost:
    """Rediscover every plugin without restarting (after install, uninstall, enable, disable):
    modules imported from the user plugin folder are forgotten first so that a replaced plugin
    is imported again. Objects already created from old classes keep them."""
    root = plugin_folder.plugin_dir()
    if root.is_dir():
        plugin_folder.forget_modules(root)
    return reset_host(PluginHost().discover())


# Pipelines resolve step ids through this host: ``algorithms`` sits below ``plugins`` in the
# layer contract, so the host registers itself instead of being imported from below.
register_step_source(get_host)
