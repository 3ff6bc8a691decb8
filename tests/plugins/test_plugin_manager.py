"""Plugin manager (issue 8): the template's wheel installs into a temporary per-user plugin
folder, is discovered by the host and fits; every bad wheel is refused with a message naming
the problem and leaves the folder unchanged; disable/enable persist; a hanging import is
time-boxed (by the import probe: such plugins are quarantined)."""
import os
import shutil
import subprocess
import sys
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import wheels as plugin_wheels
from manifold_studio.plugins import host as plugins
from manifold_studio.plugins.manager import PluginInstallError
from manifold_studio.plugins.selfcheck import build_pure_wheel, check_plugin_wheel, template_dir

TEMPLATE = template_dir()
TEMPLATE_DIST = "manifold-studio-example-plugin"
TEMPLATE_ALGO = "example_random_projection"


def make_project(root: Path, name: str, module: str, code: str, *, entry_point=True, version="1.0") -> Path:
    proj = root / name
    pkg = proj / "src" / module
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "plugin.py").write_text(textwrap.dedent(code))
    eps = (f'[project.entry-points."manifold_studio.plugins"]\n{module} = "{module}.plugin"\n'
           if entry_point else '[project.entry-points."console_scripts"]\nx = "a:b"\n')
    (proj / "pyproject.toml").write_text(
        f'[project]\nname = "{name}"\nversion = "{version}"\ndependencies = ["numpy"]\n\n{eps}\n'
        '[tool.setuptools.packages.find]\nwhere = ["src"]\n')
    return proj


CLASH = '''
from manifold_studio.algorithms import EmbeddingAlgorithm
from manifold_studio.hookspecs import hookimpl

class FakePCA(EmbeddingAlgorithm):
    id = "pca"
    name = "Fake PCA"
    help = "Claims the id of the built-in PCA, which the plugin manager must refuse."
    params = ()
    def _fit(self, X, y, progress):
        self.embedding_ = X[:, :2].copy()
    def _extend(self, X):
        return X[:, :2]

@hookimpl
def register_algorithms():
    return [FakePCA]
'''

HANG = '''
import threading
threading.Event().wait()  # never returns
'''


def contents(d: Path) -> list[str]:
    return sorted(p.name for p in d.iterdir() if not p.name.startswith(".")) if d.exists() else []


def test_template_wheel_installs_is_listed_and_fits(folder, tmp_path):
    wheel = build_pure_wheel(TEMPLATE, tmp_path / "dist")
    res = pm.install_wheel(wheel)
    assert (res.name, res.version, res.algorithms) == (TEMPLATE_DIST, "0.1.0", [TEMPLATE_ALGO])
    assert res.replaced is None and "installed" in res.message
    assert contents(folder) == [TEMPLATE_DIST]
    host = plugins.reload_host()
    rec = next(r for r in pm.list_plugins(host) if r.distribution == TEMPLATE_DIST)
    assert (rec.origin, rec.version, rec.status, rec.algorithms) == (pm.USER, "0.1.0", "loaded", [TEMPLATE_ALGO])
    X = np.random.default_rng(0).normal(size=(40, 5))
    est = host.algorithm_class(TEMPLATE_ALGO)(n_components=3, random_state=1).fit(X)
    np.testing.assert_allclose(est.embedding_, (X - X.mean(0)) @ est.components_.T)
    np.testing.assert_allclose(est.extend(X[:4]), est.embedding_[:4])
    # the built-ins are listed too, with their origin and version
    builtin = next(r for r in pm.list_plugins(host) if r.name == "builtin_pca")
    assert builtin.origin == pm.BUILTIN and builtin.algorithms == ["pca"] and builtin.version


def test_installed_plugin_passes_the_conformance_kit(folder, tmp_path, monkeypatch):
    from manifold_studio.algorithms.conformance import CHECKS, check_algorithm

    res = pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "dist"))
    # the kit's no-Qt check imports the module in a subprocess, which needs the folder on its path
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(res.folder), os.environ.get("PYTHONPATH", "")]))
    cls = plugins.reload_host().algorithm_class(TEMPLATE_ALGO)
    assert str(folder) in sys.modules[cls.__module__].__file__  # imported from the plugin folder
    assert check_algorithm(cls) == list(CHECKS)


def test_self_check_function_for_the_installer_self_test(folder):
    lines = check_plugin_wheel(log=None)
    assert lines[-1].startswith(f"plugin algorithm {TEMPLATE_ALGO} from {TEMPLATE_DIST} 0.1.0: fitted")
    assert contents(folder) == []  # it used its own temporary folder
    assert os.environ[pm.PLUGIN_DIR_ENV] == str(folder)


@pytest.mark.skipif(shutil.which("pip") is None, reason="pip not available")
def test_pip_built_wheel_installs_too(folder, tmp_path):
    pytest.importorskip("wheel", reason="the 'wheel' package is needed by setuptools' bdist_wheel")
    out = tmp_path / "pipdist"
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "--no-index",
                    "-q", "-w", str(out), str(TEMPLATE)], check=True, timeout=120)
    (wheel,) = out.glob("*.whl")
    assert pm.install_wheel(wheel).algorithms == [TEMPLATE_ALGO]


def test_not_a_zip(folder, tmp_path):
    bad = tmp_path / "plugin-1.0-py3-none-any.whl"
    bad.write_text("this is not a zip")
    with pytest.raises(PluginInstallError, match="is not a plugin wheel: it is not a zip archive"):
        pm.install_wheel(bad)
    assert contents(folder) == []


def test_unsafe_member_path_is_refused(folder, tmp_path):
    bad = tmp_path / "evil-1.0-py3-none-any.whl"
    with zipfile.ZipFile(bad, "w") as zf:
        zf.writestr("../escape.py", "x = 1")
        zf.writestr("evil-1.0.dist-info/METADATA", "Name: evil\nVersion: 1.0\n")
    with pytest.raises(PluginInstallError, match="not a safe wheel.*escape.py"):
        pm.install_wheel(bad)
    assert not (tmp_path / "escape.py").exists() and contents(folder) == []


def test_no_entry_point_in_the_group(folder, tmp_path):
    proj = make_project(tmp_path, "not-a-plugin", "not_a_plugin", "x = 1\n", entry_point=False)
    with pytest.raises(PluginInstallError, match="no entry point in the group 'manifold_studio.plugins'"):
        pm.install_wheel(build_pure_wheel(proj, tmp_path / "dist"))
    assert contents(folder) == []


@pytest.mark.parametrize("tag", ["cp27-cp27mu-linux_x86_64", "py3-none-win_amd64", "cp311-cp311-macosx_11_0_arm64"])
def test_wheel_for_another_python_or_platform(folder, tmp_path, tag):
    wheel = build_pure_wheel(TEMPLATE, tmp_path / "dist", tag=tag)
    with pytest.raises(PluginInstallError, match=f"built for {tag}, which this application"):
        pm.install_wheel(wheel)
    assert contents(folder) == []


def test_wheel_requiring_another_python(folder, tmp_path):
    wheel = build_pure_wheel(TEMPLATE, tmp_path / "dist")
    with zipfile.ZipFile(wheel) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    meta = next(n for n in members if n.endswith("METADATA"))
    members[meta] = members[meta].replace(b"Requires-Python: >=3.11", b"Requires-Python: <3")
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    with pytest.raises(PluginInstallError, match="requires Python <3; this application runs Python 3"):
        pm.install_wheel(wheel)
    assert contents(folder) == []


def test_compatible_tags_are_accepted():
    supported = plugin_wheels._interpreter_tags()
    major, minor = sys.version_info[:2]
    assert plugin_wheels._tag_ok("py3-none-any", supported)
    assert plugin_wheels._tag_ok(f"py2.py3-none-any", supported)
    assert plugin_wheels._tag_ok(f"cp{major}{minor}-cp{major}{minor}-any", supported)
    assert not plugin_wheels._tag_ok(f"cp{major}{minor + 1}-cp{major}{minor + 1}-any", supported)


def test_replacing_a_builtin_id_is_refused(folder, tmp_path):
    proj = make_project(tmp_path, "fake-pca", "fake_pca_plugin", CLASH)
    with pytest.raises(PluginInstallError, match="would replace the built-in algorithm 'pca'; nothing was installed"):
        pm.install_wheel(build_pure_wheel(proj, tmp_path / "dist"))
    assert contents(folder) == []
    assert plugins.get_host().algorithms["pca"].__module__ == "manifold_studio_builtins.pca"
    assert "fake_pca_plugin" not in sys.modules


def test_new_version_is_probed_not_the_loaded_one(folder, tmp_path):
    ok = make_project(tmp_path / "v1", "shifty", "shifty_plugin", CLASH.replace('"pca"', '"shifty_ok"'), version="1.0")
    pm.install_wheel(build_pure_wheel(ok, tmp_path / "d1"))
    assert "shifty_ok" in plugins.reload_host().algorithms  # v1's module is now imported
    bad = make_project(tmp_path / "v2", "shifty", "shifty_plugin", CLASH, version="2.0")
    with pytest.raises(PluginInstallError, match="shifty 2.0 would replace the built-in algorithm 'pca'"):
        pm.install_wheel(build_pure_wheel(bad, tmp_path / "d2"))
    assert "shifty_ok" in plugins.reload_host().algorithms  # v1 still installed and working
    assert next(r for r in pm.list_plugins() if r.distribution == "shifty").version == "1.0"


def test_missing_requirement_is_named(folder, tmp_path):
    wheel = build_pure_wheel(TEMPLATE, tmp_path / "dist",
                             requires=["numpy", "surely-not-installed-package>=1.0", "pytest; extra == 'test'"])
    with pytest.raises(PluginInstallError, match="needs 'surely-not-installed-package>=1.0', which this application"):
        pm.install_wheel(wheel)
    assert contents(folder) == []
    too_new = build_pure_wheel(TEMPLATE, tmp_path / "dist2", requires=["numpy>=999"])
    with pytest.raises(PluginInstallError, match="needs 'numpy>=999'"):
        pm.install_wheel(too_new)


def test_plugin_folder_not_writable(tmp_path, monkeypatch):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv(pm.PLUGIN_DIR_ENV, str(blocker / "plugins"))
    wheel = build_pure_wheel(TEMPLATE, tmp_path / "dist")
    with pytest.raises(PluginInstallError, match=r"the plugin folder .*a-file/plugins is not writable"):
        pm.install_wheel(wheel)
    assert blocker.read_text() == "not a folder"


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_plugin_folder(folder, tmp_path):
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(PluginInstallError, match="is not writable"):
            pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "dist"))
    finally:
        folder.chmod(0o700)


def test_second_version_replaces_the_first(folder, tmp_path):
    pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "d1", version="0.1.0"))
    host = plugins.reload_host()
    old_cls = host.algorithm_class(TEMPLATE_ALGO)
    res = pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "d2", version="0.2.0"))
    assert res.replaced == "0.1.0" and f"replaced {TEMPLATE_DIST} 0.1.0 by 0.2.0" in res.message
    assert res.restart_needed  # its modules were imported by this process
    assert contents(folder) == [TEMPLATE_DIST]  # one copy, the new one
    host = plugins.reload_host()
    rec = next(r for r in pm.list_plugins(host) if r.distribution == TEMPLATE_DIST)
    assert rec.version == "0.2.0" and rec.status == "loaded"
    assert host.algorithm_class(TEMPLATE_ALGO) is not old_cls  # reloaded without restarting


def test_uninstall(folder, tmp_path):
    pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "dist"))
    assert TEMPLATE_ALGO in plugins.reload_host().algorithms
    assert pm.uninstall(TEMPLATE_DIST) == f"uninstalled {TEMPLATE_DIST} 0.1.0"
    assert contents(folder) == []
    assert TEMPLATE_ALGO not in plugins.reload_host().algorithms
    with pytest.raises(PluginInstallError, match="no plugin named 'nothing-here'"):
        pm.uninstall("nothing-here")
    with pytest.raises(PluginInstallError, match="installed with pip"):
        pm.uninstall("numpy")


def test_disable_and_enable_persist(folder, tmp_path):
    pm.install_wheel(build_pure_wheel(TEMPLATE, tmp_path / "dist"))
    assert pm.set_enabled(TEMPLATE_DIST, False) == f"{TEMPLATE_DIST} disabled"
    assert (folder / "settings.json").is_file()
    host = plugins.reload_host()
    assert TEMPLATE_ALGO not in host.algorithms and "example_random_projection" in host.disabled
    rec = next(r for r in pm.list_plugins(host) if r.distribution == TEMPLATE_DIST)
    assert rec.status == "disabled"
    # a built-in plugin can be disabled by its entry-point name
    pm.set_enabled("builtin_kmeans", False)
    assert "kmeans" not in plugins.reload_host().algorithms
    pm.set_enabled("builtin_kmeans", True)
    pm.set_enabled(TEMPLATE_DIST, True)
    host = plugins.reload_host()
    assert TEMPLATE_ALGO in host.algorithms and "kmeans" in host.algorithms
    with pytest.raises(PluginInstallError, match="no plugin named 'unknown-thing'"):
        pm.set_enabled("unknown-thing", False)
    with pytest.raises(PluginInstallError, match="cannot be disabled"):
        pm.set_enabled("manifold-studio", False)


def _unpack_into_folder(folder: Path, wheel: Path, name: str) -> None:
    target = folder / name
    target.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(target)


def test_hanging_import_is_time_boxed(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(pm.IMPORT_TIMEOUT_ENV, "0.5")
    proj = make_project(tmp_path, "hanging-plugin", "hanging_plugin_a", HANG)
    wheel = build_pure_wheel(proj, tmp_path / "dist")
    # refused at installation ...
    t0 = time.monotonic()
    with pytest.raises(PluginInstallError, match="did not finish importing within 0.5 s"):
        pm.install_wheel(wheel)
    assert contents(folder) == [] and time.monotonic() - t0 < 10
    # ... and, when it is in the folder anyway (copied by hand), the host starts without it
    proj2 = make_project(tmp_path / "b", "hanging-plugin", "hanging_plugin_b", HANG)
    _unpack_into_folder(folder, build_pure_wheel(proj2, tmp_path / "dist2"), "hanging-plugin")
    t0 = time.monotonic()
    host = plugins.reload_host()
    assert time.monotonic() - t0 < 30
    (fail,) = [f for f in host.failures if f.plugin == "hanging_plugin_b"]
    assert "did not finish importing within 0.5 s" in fail.error
    assert "pca" in host.algorithms
    rec = next(r for r in pm.list_plugins(host) if r.name == "hanging_plugin_b")
    # its import probe was stopped: quarantined, never imported into this process
    assert rec.status == "quarantined" and rec.origin == pm.USER
    assert "plugins enable hanging_plugin_b" in rec.error and "hanging_plugin_b" not in sys.modules


def test_failed_plugin_is_listed_with_its_traceback(folder, tmp_path):
    proj = make_project(tmp_path, "broken-plugin", "broken_plugin_mod", "raise RuntimeError('broken on purpose')\n")
    wheel = build_pure_wheel(proj, tmp_path / "dist")
    with pytest.raises(PluginInstallError, match="cannot be loaded.*broken on purpose"):
        pm.install_wheel(wheel)
    _unpack_into_folder(folder, wheel, "copied-by-hand")
    rec = next(r for r in pm.list_plugins(plugins.reload_host()) if r.name == "broken_plugin_mod")
    assert rec.status == "quarantined" and "RuntimeError: broken on purpose" in rec.error
    assert "Traceback" in rec.traceback and "plugin.py" in rec.traceback
    assert rec.origin == pm.USER and rec.version == "1.0"
    # found by its metadata, but not removed: the plugin manager did not create that folder
    with pytest.raises(PluginInstallError, match="not installed by the plugin manager"):
        pm.uninstall("broken-plugin")
    assert contents(folder) == ["copied-by-hand"]


def test_default_folders_without_environment(monkeypatch, tmp_path):
    monkeypatch.delenv(pm.PLUGIN_DIR_ENV, raising=False)
    monkeypatch.delenv(pm.SETTINGS_ENV, raising=False)
    from manifold_studio.plugins import folder as plugin_folder

    monkeypatch.setattr(plugin_folder, "_platformdirs", lambda: None)
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert pm.plugin_dir() == tmp_path / "data" / "manifold-studio" / "plugins"
    assert pm.settings_path() == tmp_path / "config" / "manifold-studio" / "plugins.json"
