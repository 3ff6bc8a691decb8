"""The import probe probes what runs (issue 29, case plg11): a plugin installed from a wheel is
probed again at start-up, imported from the plugin folder — a plugin that imports cleanly from
the installer's staging folder but segfaults from the plugin folder is quarantined with a note
naming the signal, and ``list``, ``run`` and ``plugins list`` keep working. The verdict is keyed
by the plugin's files and location and by the probe's inputs (Python, the application, the
installed distributions). A wheel of preparation steps only says what it provides."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from manifold_studio.plugins import host as plugin_host
from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import quarantine
from manifold_studio.plugins.selfcheck import build_pure_wheel

# imports cleanly from the staging folder (.staging-*), crashes from anywhere else
PLG11 = '''
import ctypes
import os

if ".staging-" not in os.path.abspath(__file__):
    ctypes.string_at(0)

from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class Halve(Preprocessor):
    id, name, help = "plg11_halve", "Halves every value", "A preparation step of the plg11 case."
    params = ()

    def _fit(self, X):
        self.done_ = True

    def _transform(self, X):
        return X / 2.0


@hookimpl
def register_preprocessors():
    return [Halve]
'''

STEPS_ONLY = PLG11.replace('if ".staging-" not in os.path.abspath(__file__):\n    ctypes.string_at(0)\n', "")


def _wheel(tmp_path: Path, name: str, code: str) -> Path:
    module = name.replace("-", "_")
    proj = tmp_path / f"src-{name}"
    pkg = proj / "src" / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(code)
    (proj / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "1.0"\n\n'
        f'[project.entry-points."manifold_studio.plugins"]\n{module} = "{module}.plugin"\n\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    return build_pure_wheel(proj, tmp_path / f"dist-{name}")


def test_a_plugin_crashing_only_from_the_plugin_folder_is_quarantined_at_start_up(folder, tmp_path):
    res = pm.install_wheel(_wheel(tmp_path, "plg11-plugin", PLG11))   # the staging probe passes
    assert "preparation step: plg11_halve" in res.message, res.message
    host = plugin_host.PluginHost().discover()     # start-up: probed again, from the plugin folder
    fail = next(f for f in host.failures if f.plugin == "plg11_plugin")
    assert fail.quarantined and "ended by SIGSEGV" in fail.error and "plugins enable plg11_plugin" in fail.error
    assert "plg11_halve" not in host.preprocessors and "pca" in host.algorithms
    # remembered: the next start does not probe it again
    cache = json.loads(quarantine.cache_path().read_text())
    assert cache["plg11-plugin"]["entry_points"]["plg11_plugin"]["ok"] is False


def test_a_wheel_of_preparation_steps_only_says_what_it_provides(folder, tmp_path):
    res = pm.install_wheel(_wheel(tmp_path, "steps-only-plugin", STEPS_ONLY))
    assert res.preprocessors == ["plg11_halve"] and "provides: preparation step: plg11_halve" in res.message
    assert "nothing" not in res.message
    host = plugin_host.PluginHost().discover()
    assert "plg11_halve" in host.preprocessors
    rec = next(r for r in pm.list_plugins(host) if r.name == "steps_only_plugin")
    assert rec.status == "loaded" and rec.preprocessors == ["plg11_halve"]


def test_the_verdict_is_keyed_by_location_and_the_probe_inputs(folder, tmp_path, monkeypatch):
    d = tmp_path / "p"
    d.mkdir()
    (d / "m.py").write_text("x = 1\n")
    eps = [("m", "m")]
    base = quarantine.fingerprint(None, eps, d)
    assert quarantine.fingerprint(None, eps, d) == base
    other = tmp_path / "q"
    other.mkdir()
    (other / "m.py").write_text("x = 1\n")
    os.utime(other / "m.py", ns=((d / "m.py").stat().st_atime_ns, (d / "m.py").stat().st_mtime_ns))
    assert quarantine.fingerprint(None, eps, other) != base       # the same files elsewhere
    monkeypatch.setattr(quarantine, "environment_key", lambda: "another set of installed versions")
    assert quarantine.fingerprint(None, eps, d) != base           # a dependency changed
    monkeypatch.undo()
    monkeypatch.setattr(quarantine, "__version__", "0.0.0-other")
    assert quarantine.fingerprint(None, eps, d) != base           # another version of the application


def test_environment_key_names_installed_versions_but_not_the_plugin_folder(folder, tmp_path):
    quarantine._ENVIRONMENT.clear()
    key = quarantine.environment_key()
    assert len(key) == 64 and quarantine.environment_key() == key
    pm.install_wheel(_wheel(tmp_path, "steps-only-plugin", STEPS_ONLY))
    plugin_host.ensure_plugin_path()
    quarantine._ENVIRONMENT.clear()
    assert quarantine.environment_key() == key    # a plugin of the folder has its own fingerprint


@pytest.mark.slow
def test_plg11_commands_keep_working(tmp_path):
    env = dict(os.environ)
    env.update({"MANIFOLD_STUDIO_PLUGIN_DIR": str(tmp_path / "plugins"),
                "MANIFOLD_STUDIO_RECOVERY_DIR": str(tmp_path / "recovery")})
    for var in ("MANIFOLD_STUDIO_PLUGIN_SETTINGS", "MANIFOLD_STUDIO_DISABLE_PLUGINS"):
        env.pop(var, None)

    def cli(*args):
        return subprocess.run([sys.executable, "-m", "manifold_studio", *args], env=env, capture_output=True,
                              text=True, timeout=300)

    res = cli("plugins", "install", str(_wheel(tmp_path, "plg11-plugin", PLG11)))
    assert res.returncode == 0 and "preparation step: plg11_halve" in res.stdout, res.stdout + res.stderr
    res = cli("list")
    assert res.returncode == 0, res.stderr
    line = next(x for x in res.stdout.splitlines() if "plg11_plugin (quarantined)" in x)
    assert "SIGSEGV" in line
    res = cli("run", "pca", "--data", "sample:iris", "--out", "-", "-q")
    assert res.returncode == 0 and len(res.stdout.splitlines()) == 151, res.stderr
    res = cli("plugins", "list")
    assert res.returncode == 0 and "quarantined" in res.stdout and "SIGSEGV" in res.stdout
