"""Build the plugin template's wheel without pip, install it into a temporary plugin folder and
fit with it — the check the tests and ``manifold-studio --self-test`` run (Qt-free).

:func:`build_pure_wheel` writes a ``py3-none-any`` wheel from a pure-Python project laid out like
``examples/plugin-template`` (``pyproject.toml`` with ``[project]`` and its entry points, packages
under ``src/`` or the project folder). It needs neither pip nor setuptools nor network, so it
works inside the frozen application. :func:`check_plugin_wheel` is the self-test step.
"""
from __future__ import annotations

import base64
import hashlib
import os
import re
import sys
import tempfile
import tomllib
import zipfile
from contextlib import contextmanager
from pathlib import Path

from manifold_studio.algorithms.conformance import default_data
from manifold_studio.plugins import manager
from manifold_studio.plugins.host import PluginHost

TEMPLATE_NAME = "plugin-template"


def template_dir() -> Path | None:
    """``examples/plugin-template`` of a source checkout (or next to a frozen executable)."""
    here = Path(__file__).resolve()
    candidates = [here.parents[2] / "examples" / TEMPLATE_NAME]
    if getattr(sys, "frozen", False):
        base = Path(getattr(sys, "_MEIPASS", Path(sys.executable).parent))
        candidates.insert(0, base / "examples" / TEMPLATE_NAME)
    return next((c for c in candidates if (c / "pyproject.toml").is_file()), None)


def _record_hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def build_pure_wheel(project: Path, out_dir: Path, *, version: str | None = None,
                     tag: str = "py3-none-any", requires: list[str] | None = None) -> Path:
    """Write ``<name>-<version>-<tag>.whl`` for a pure-Python project; returns its path.
    ``version``, ``tag`` and ``requires`` override the project's (tests use them to make a
    second version, a wheel for another platform or one needing a missing package)."""
    project = Path(project)
    conf = tomllib.loads((project / "pyproject.toml").read_text(encoding="utf-8"))
    meta = conf["project"]
    name, version = meta["name"], version or meta["version"]
    requires = meta.get("dependencies", []) if requires is None else requires
    where = conf.get("tool", {}).get("setuptools", {}).get("packages", {}).get("find", {}).get("where", ["."])
    roots = [project / w for w in where]
    dist = re.sub(r"[-_.]+", "_", name)
    di = f"{dist}-{version}.dist-info"
    files: dict[str, bytes] = {}
    for root in roots:
        for init in sorted(root.glob("*/__init__.py")):
            pkg = init.parent
            if pkg.name in ("tests", "build") or pkg.name.endswith(".egg-info"):
                continue
            for f in sorted(pkg.rglob("*")):
                if f.is_file() and "__pycache__" not in f.parts and f.suffix not in (".pyc", ".pyo"):
                    files[f.relative_to(root).as_posix()] = f.read_bytes()
    lines = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    if meta.get("description"):
        lines.append(f"Summary: {meta['description']}")
    if meta.get("requires-python"):
        lines.append(f"Requires-Python: {meta['requires-python']}")
    lines += [f"Requires-Dist: {r}" for r in requires]
    files[f"{di}/METADATA"] = ("\n".join(lines) + "\n").encode()
    files[f"{di}/WHEEL"] = (f"Wheel-Version: 1.0\nGenerator: manifold_studio.plugins.selfcheck\n"
                            f"Root-Is-Purelib: true\nTag: {tag}\n").encode()
    eps = meta.get("entry-points", {})
    if eps:
        text = "".join(f"[{group}]\n" + "".join(f"{k} = {v}\n" for k, v in items.items()) + "\n"
                       for group, items in eps.items())
        files[f"{di}/entry_points.txt"] = text.encode()
    record = [f"{n},{_record_hash(d)},{len(d)}" for n, d in files.items()] + [f"{di}/RECORD,,"]
    files[f"{di}/RECORD"] = ("\n".join(record) + "\n").encode()
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{dist}-{version}-{tag}.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for n, d in files.items():
            zf.writestr(n, d)
    return path


@contextmanager
def temporary_plugin_dir(folder: Path | None = None):
    """Point the plugin manager at ``folder`` (default: a new temporary folder) for the block."""
    saved = {k: os.environ.get(k) for k in (manager.PLUGIN_DIR_ENV, manager.SETTINGS_ENV)}
    with tempfile.TemporaryDirectory(prefix="ms-plugins-") as tmp:
        os.environ[manager.PLUGIN_DIR_ENV] = str(folder or Path(tmp) / "plugins")
        os.environ.pop(manager.SETTINGS_ENV, None)
        try:
            yield Path(os.environ[manager.PLUGIN_DIR_ENV])
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def check_plugin_wheel(wheel: Path | None = None, *, log=print) -> list[str]:
    """Self-test step: install a plugin wheel (default: the template's, built here without pip)
    into a temporary plugin folder through the plugin manager's API, discover it in a fresh
    plugin host, fit every algorithm it provides on a small data set and extend it to new points.
    Prints (``log``) and returns one line per step; raises on the first failure. The process-wide
    host and the user's real plugin folder are left untouched."""
    import numpy as np


    lines = []

    def say(text):
        lines.append(text)
        if log:
            log(text)

    with tempfile.TemporaryDirectory(prefix="ms-wheel-") as build, temporary_plugin_dir() as folder:
        if wheel is None:
            src = template_dir()
            if src is None:
                raise FileNotFoundError(f"the plugin template ({TEMPLATE_NAME}) is not in this installation")
            wheel = build_pure_wheel(src, Path(build))
            say(f"built {Path(wheel).name} from {src}")
        try:
            res = manager.install_wheel(wheel)
            say(res.message)
            host = PluginHost().discover()
            if not res.algorithms:
                raise AssertionError(f"{res.name} provides no algorithm")
            X, y = default_data(60, 4)
            for algo_id in res.algorithms:
                cls = host.algorithm_class(algo_id)
                est = cls().fit(X, y)
                out = est.extend(X[:5])
                if not np.all(np.isfinite(np.asarray(out, dtype=float))):
                    raise AssertionError(f"{algo_id}: extend gave non-finite values")
                say(f"plugin algorithm {algo_id} from {res.name} {res.version}: fitted on 60 points, "
                    f"extended to 5")
        finally:
            manager.forget_modules(folder)
            prefix = str(folder) + os.sep
            sys.path[:] = [p for p in sys.path if not p.startswith(prefix)]
    return lines
