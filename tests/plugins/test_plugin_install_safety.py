"""Plugin installs stay inside the plugin folder (issue 18, part 1): a wheel whose METADATA
names an absolute path, a ``..`` path or a path with a separator is refused before anything is
touched; a symbolic link in the plugin folder is never followed; a folder the plugin manager did
not create is never replaced or removed; a zip bomb is refused by its declared and its actual
size; the staging folder is cleaned on every failure."""
import os
import sys
import zipfile
from pathlib import Path

import pytest

from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import host as plugins
from manifold_studio.plugins.manager import PluginInstallError
from manifold_studio.plugins.selfcheck import build_pure_wheel, template_dir

TEMPLATE_DIST = "manifold-studio-example-plugin"


def victim(tmp_path: Path) -> Path:
    """A user's folder with a file in it, which no install may touch."""
    docs = tmp_path / "Documents"
    docs.mkdir()
    (docs / "thesis.tex").write_text("years of work")
    return docs


def assert_untouched(docs: Path) -> None:
    assert sorted(p.name for p in docs.iterdir()) == ["thesis.tex"]
    assert (docs / "thesis.tex").read_text() == "years of work"


def hostile_wheel(path: Path, name: str, extra: dict[str, bytes] | None = None) -> Path:
    """A wheel with a plugin entry point whose METADATA says ``Name: <name>``."""
    di = "evil-1.0.dist-info"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        zf.writestr(f"{di}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
        zf.writestr(f"{di}/WHEEL", "Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        zf.writestr(f"{di}/entry_points.txt", "[manifold_studio.plugins]\nevil = evil_mod\n")
        zf.writestr("evil_mod.py", "x = 1\n")
        for member, data in (extra or {}).items():
            zf.writestr(member, data)
    return path


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.startswith((".staging-", ".old-"))) \
        if folder.exists() else []


@pytest.mark.parametrize("name_of", [
    lambda docs: str(docs),                     # absolute: Name: /home/user/Documents
    lambda docs: "../Documents",                # climbs out of the plugin folder
    lambda docs: "../../" + docs.name,
    lambda docs: "sub/Documents",               # a path separator
    lambda docs: "sub\\Documents",
    lambda docs: "..",
    lambda docs: "C:Documents",
    lambda docs: "-leading-dash",
])
def test_a_name_that_is_not_a_distribution_name_is_refused(folder, tmp_path, name_of):
    docs = victim(tmp_path)
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", name_of(docs))
    with pytest.raises(PluginInstallError, match="is not a valid name"):
        pm.install_wheel(wheel)
    assert_untouched(docs)
    assert leftovers(folder) == []


def test_a_symlink_in_the_plugin_folder_is_not_followed(folder, tmp_path):
    docs = victim(tmp_path)
    folder.mkdir(parents=True)
    (folder / "evil").symlink_to(docs, target_is_directory=True)
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil")
    with pytest.raises(PluginInstallError, match="not a plain folder inside the plugin folder"):
        pm.install_wheel(wheel)
    assert_untouched(docs)
    with pytest.raises(PluginInstallError, match="not installed by the plugin manager"):
        pm.uninstall("evil")
    assert_untouched(docs)
    assert leftovers(folder) == []


def test_a_symlinked_plugin_folder_itself_works(tmp_path, monkeypatch):
    """A plugin folder that is itself a link (a user's choice) is fine: paths are compared resolved."""
    real = tmp_path / "real-plugins"
    real.mkdir()
    link = tmp_path / "linked-plugins"
    link.symlink_to(real, target_is_directory=True)
    monkeypatch.setenv(pm.PLUGIN_DIR_ENV, str(link))
    plugins.reset_host(None)
    try:
        res = pm.install_wheel(build_pure_wheel(template_dir(), tmp_path / "dist"))
        assert (real / TEMPLATE_DIST).is_dir() and res.name == TEMPLATE_DIST
        assert pm.uninstall(TEMPLATE_DIST).startswith("uninstalled")
    finally:
        pm.forget_modules(real)
        sys.path[:] = [p for p in sys.path if not p.startswith((str(real) + os.sep, str(link) + os.sep))]
        plugins.reset_host(None)


def test_a_folder_the_manager_did_not_create_is_never_replaced(folder, tmp_path):
    (folder / "evil").mkdir(parents=True)
    (folder / "evil" / "mine.txt").write_text("the user's")
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil")
    with pytest.raises(PluginInstallError, match="was not created by the plugin manager"):
        pm.install_wheel(wheel)
    assert (folder / "evil" / "mine.txt").read_text() == "the user's"
    with pytest.raises(PluginInstallError, match="not installed by the plugin manager"):
        pm.uninstall("evil")
    assert (folder / "evil" / "mine.txt").exists()


def test_zip_bomb_by_declared_size(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(pm.MAX_BYTES_ENV, str(1_000_000))
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil",
                          {"evil_data/zeros.bin": bytes(5_000_000)})  # 5 MB of zeros deflate to ~5 kB
    assert wheel.stat().st_size < 100_000
    with pytest.raises(PluginInstallError, match=r"unpacks to 5,000,\d+ bytes, more than the limit of 1,000,000"):
        pm.install_wheel(wheel)
    assert leftovers(folder) == [] and not (folder / "evil").exists()


def test_zip_bomb_that_lies_about_its_size(folder, tmp_path, monkeypatch):
    """A member whose header declares a small size but inflates to more is cut off by the
    running count (zipfile stops at the declared size and then fails the CRC)."""
    monkeypatch.setenv(pm.MAX_BYTES_ENV, str(1_000_000))
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil", {"evil_data/zeros.bin": bytes(3_000_000)})
    data = bytearray(wheel.read_bytes())
    # rewrite the declared uncompressed size (local header and central directory) to 10 bytes
    with zipfile.ZipFile(wheel) as zf:
        info = zf.getinfo("evil_data/zeros.bin")
    for sig in (b"PK\x03\x04", b"PK\x01\x02"):
        start = 0
        while (pos := data.find(sig, start)) >= 0:
            start = pos + 4
            off_name = 30 if sig == b"PK\x03\x04" else 46
            off_size = 22 if sig == b"PK\x03\x04" else 24
            n = int.from_bytes(data[pos + (26 if sig == b"PK\x03\x04" else 28):][:2], "little")
            if bytes(data[pos + off_name:pos + off_name + n]) == info.filename.encode():
                data[pos + off_size:pos + off_size + 4] = (10).to_bytes(4, "little")
    wheel.write_bytes(bytes(data))
    with pytest.raises(PluginInstallError):
        pm.install_wheel(wheel)
    assert leftovers(folder) == [] and not (folder / "evil").exists()


def test_too_many_members(folder, tmp_path, monkeypatch):
    monkeypatch.setenv(pm.MAX_FILES_ENV, "50")
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil",
                          {f"evil_data/f{i}.txt": b"x" for i in range(100)})
    with pytest.raises(PluginInstallError, match="has 104 files, more than the limit of 50"):
        pm.install_wheel(wheel)
    assert leftovers(folder) == []


def test_staging_is_cleaned_when_the_import_fails(folder, tmp_path):
    wheel = hostile_wheel(tmp_path / "evil-1.0-py3-none-any.whl", "evil")
    with zipfile.ZipFile(wheel, "a") as zf:
        zf.writestr("evil_mod2.py", "raise RuntimeError('no')\n")
    with zipfile.ZipFile(wheel) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    members["evil-1.0.dist-info/entry_points.txt"] = b"[manifold_studio.plugins]\nevil = evil_mod2\n"
    with zipfile.ZipFile(wheel, "w") as zf:
        for n, d in members.items():
            zf.writestr(n, d)
    with pytest.raises(PluginInstallError, match="cannot be loaded"):
        pm.install_wheel(wheel)
    assert leftovers(folder) == [] and not (folder / "evil").exists()


def test_uninstall_refuses_a_path_as_name(folder, tmp_path):
    docs = victim(tmp_path)
    for name in (str(docs), "../Documents", "a/b"):
        with pytest.raises(PluginInstallError, match="no plugin named"):
            pm.uninstall(name)
    assert_untouched(docs)


def test_the_manifest_records_installs_and_uninstalls(folder, tmp_path):
    import json

    pm.install_wheel(build_pure_wheel(template_dir(), tmp_path / "dist"))
    manifest = json.loads((folder / pm.MANIFEST).read_text())
    assert manifest["installed"][TEMPLATE_DIST]["version"] == "0.1.0"
    # uninstall by the entry-point name that 'plugins list' shows
    ep_name = next(r.name for r in pm.list_plugins(plugins.reload_host()) if r.distribution == TEMPLATE_DIST)
    assert pm.uninstall(ep_name) == f"uninstalled {TEMPLATE_DIST} 0.1.0"
    assert json.loads((folder / pm.MANIFEST).read_text())["installed"] == {}
