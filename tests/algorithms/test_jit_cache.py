"""numba's cache in the installed (frozen) application (issue 32, item 7): a per-user folder seeded
from the cache the installer ships, never the installation folder; a shipped entry is used
without compiling (manifold_studio.algorithms.jit_cache, jit_locator)."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from manifold_studio.algorithms import jit_cache


@pytest.fixture
def frozen(monkeypatch, tmp_path):
    """A frozen application whose modules are in tmp_path/install, with a shipped cache."""
    install = tmp_path / "install"
    shipped = install / jit_cache.SHIPPED_FOLDER / "pkg" / "mod"
    shipped.mkdir(parents=True)
    (shipped / "mod.f-3.py311.nbi").write_bytes(b"index")
    (shipped / "mod.f-3.py311.nbi").chmod(stat.S_IRUSR)  # read-only, as installed
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    monkeypatch.setattr(sys, "_MEIPASS", str(install), raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    return install


def test_nothing_changes_outside_a_frozen_application(monkeypatch):
    monkeypatch.delattr(sys, "frozen", raising=False)
    env = {}
    assert jit_cache.configure(env) is None and env == {}


def test_the_cache_is_the_users_seeded_once_from_the_shipped_one(frozen, tmp_path):
    env = {}
    folder = jit_cache.configure(env)
    assert env["NUMBA_CACHE_DIR"] == str(folder) and env["NUMBA_CACHE_LOCATOR_CLASSES"] == jit_cache.LOCATOR
    assert tmp_path / "cache" in folder.parents and folder.name == jit_cache._version()
    seeded = folder / "pkg" / "mod" / "mod.f-3.py311.nbi"
    assert seeded.read_bytes() == b"index" and os.access(seeded, os.W_OK)  # numba may rewrite it
    seeded.write_bytes(b"updated by numba")
    jit_cache.configure({})  # a second start does not copy the shipped cache over the user's
    assert seeded.read_bytes() == b"updated by numba"


def test_a_cache_folder_inside_the_installation_is_replaced_by_the_users(frozen, tmp_path):
    env = {"NUMBA_CACHE_DIR": str(frozen / "numba_cache")}
    folder = jit_cache.configure(env)
    assert frozen not in folder.parents and Path(env["NUMBA_CACHE_DIR"]) == folder
    elsewhere = tmp_path / "mine"
    env = {"NUMBA_CACHE_DIR": str(elsewhere)}
    assert jit_cache.configure(env) == elsewhere  # the user's own choice outside it is kept


def test_an_unwritable_cache_folder_is_left_alone(frozen, tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(stat.S_IRUSR | stat.S_IXUSR)
    try:
        if os.access(locked, os.W_OK):
            pytest.skip("running as root: every folder is writable")
        assert not jit_cache.seed(frozen / jit_cache.SHIPPED_FOLDER, locked / "numba")
    finally:
        locked.chmod(stat.S_IRWXU)


CHILD = textwrap.dedent("""
    import json, sys
    sys.frozen = True
    sys._MEIPASS = sys.argv[1]
    sys.path.insert(0, sys.argv[2])
    from manifold_studio.algorithms.jit_cache import configure
    folder = configure()
    import numpy as np
    import kernelmod
    out = kernelmod.total(np.arange(10.0))
    stats = kernelmod.total.stats
    print(json.dumps({"folder": str(folder), "out": out, "hits": sum(stats.cache_hits.values()),
                      "misses": sum(stats.cache_misses.values())}))
""")
KERNEL = textwrap.dedent("""
    import numba

    @numba.njit(cache=True)
    def total(x):
        s = 0.0
        for v in x:
            s += v
        return s
""")


def _frozen_run(install: Path, code_dir: Path, env: dict) -> dict:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(install), str(code_dir)], capture_output=True,
                          text=True, timeout=300, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.mark.slow
def test_a_shipped_cache_is_used_without_compiling_and_the_installation_is_not_written(tmp_path):
    """The build's warm run fills a cache outside the bundle; shipped read-only in the bundle, it
    is copied to a new user's cache folder and the loop loads from it (a cache hit, no miss)."""
    code = tmp_path / "code"
    code.mkdir()
    (code / "kernelmod.py").write_text(KERNEL)
    install = tmp_path / "install"
    install.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    warm = tmp_path / "warm"
    first = _frozen_run(install, code, dict(env, NUMBA_CACHE_DIR=str(warm), XDG_CACHE_HOME=str(tmp_path / "a")))
    assert first == {"folder": str(warm), "out": 45.0, "hits": 0, "misses": 1}
    assert list((warm / "kernelmod").glob("*.nbc")) and not any(install.iterdir())
    shutil.copytree(warm, install / jit_cache.SHIPPED_FOLDER)  # what installer/build.py ships
    for path in install.rglob("*"):
        path.chmod(path.stat().st_mode & ~0o222)
    before = sorted(str(p) for p in install.rglob("*"))
    try:
        user = _frozen_run(install, code, dict(env, XDG_CACHE_HOME=str(tmp_path / "user"), HOME=str(tmp_path)))
        assert user["hits"] == 1 and user["misses"] == 0 and user["out"] == 45.0
        assert Path(user["folder"]).is_relative_to(tmp_path / "user")
        assert sorted(str(p) for p in install.rglob("*")) == before
    finally:
        for path in [install, *install.rglob("*")]:
            path.chmod(path.stat().st_mode | 0o200)
