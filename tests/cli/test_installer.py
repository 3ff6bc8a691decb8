"""The installer recipes: the packaging code run on a small fake bundle (a real .deb built,
inspected and unpacked with dpkg-deb), the Windows/macOS recipes and the CI workflow parsed.

The full build (PyInstaller bundle, its self-test, .deb installed and removed) runs only with
MANIFOLD_STUDIO_BUILD_INSTALLER=1: ``MANIFOLD_STUDIO_BUILD_INSTALLER=1 pytest tests/cli/test_installer.py``
(.ci/run runs the same steps through installer/ci_build_and_test.sh).
"""
import importlib.util
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALLER = ROOT / "installer"


def load_build():
    spec = importlib.util.spec_from_file_location("installer_build", INSTALLER / "build.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


build = load_build()


# -- Linux packages from a fake bundle --------------------------------------------------------

@pytest.fixture
def fake_bundle(tmp_path):
    bundle = tmp_path / "dist" / "manifold-studio"
    (bundle / "_internal" / "lib").mkdir(parents=True)
    exe = bundle / "manifold-studio"
    exe.write_text("#!/bin/sh\necho fake manifold-studio \"$@\"\n")
    exe.chmod(0o700)  # the package must still make it executable for everyone
    (bundle / "_internal" / "lib" / "data.bin").write_bytes(b"\0" * 1000)
    (bundle / "_internal" / "lib" / "data.bin").chmod(0o600)
    (bundle / "_internal" / "link.so").symlink_to("lib/data.bin")
    return bundle


def test_desktop_entry_and_launcher():
    entry = build.desktop_entry()
    lines = entry.splitlines()
    assert lines[0] == "[Desktop Entry]"
    fields = dict(line.split("=", 1) for line in lines[1:] if line)
    assert fields["Type"] == "Application" and fields["Name"] == "Manifold Studio"
    assert fields["Exec"].split()[0] == "manifold-studio"  # the launcher in /usr/bin
    assert fields["Icon"] == "manifold-studio" and fields["Terminal"] == "false"
    assert fields["Categories"].endswith(";")
    assert "%" not in fields["Exec"]  # the window takes no file arguments


@pytest.mark.skipif(shutil.which("desktop-file-validate") is None, reason="desktop-file-utils not installed")
def test_desktop_entry_validates(tmp_path):
    path = tmp_path / "manifold-studio.desktop"
    path.write_text(build.desktop_entry())
    proc = subprocess.run(["desktop-file-validate", str(path)], capture_output=True, text=True)
    assert proc.returncode == 0 and not proc.stdout.strip(), proc.stdout + proc.stderr


def test_launcher_script():
    launcher = build.launcher_script()
    assert launcher.startswith("#!/bin/sh\n")
    assert 'exec /opt/manifold-studio/manifold-studio "$@"' in launcher


def test_deb_control_fields():
    control = build.deb_control("1.2.3", "amd64", 4242)
    fields = {}
    for line in control.splitlines():
        if not line.startswith(" "):
            key, value = line.split(": ", 1)
            fields[key] = value
    assert fields["Package"] == "manifold-studio" and fields["Version"] == "1.2.3"
    assert fields["Architecture"] == "amd64" and fields["Installed-Size"] == "4242"
    assert "libegl1" in fields["Depends"] and "@" in fields["Maintainer"]
    # the long description: continuation lines start with a space, none is empty
    continuation = [line for line in control.splitlines() if line.startswith(" ")]
    assert continuation and all(line.strip() for line in continuation)
    assert control.endswith("\n")


def test_the_warmed_numba_cache_is_shipped_in_the_bundle(fake_bundle, tmp_path):
    """build.py runs the bundle's self-test with NUMBA_CACHE_DIR in the work folder (never in the
    bundle) and ships what it compiled as _internal/numba_cache; the frozen entry script points
    numba at the user's folder before anything imports it (issue 32)."""
    (fake_bundle / "_internal" / "base_library.zip").write_bytes(b"")
    exe = fake_bundle / "manifold-studio"
    exe.write_text('#!/bin/sh\ncase "$NUMBA_CACHE_DIR" in */_internal*) exit 3;; esac\n'
                   '[ "$1 $2" = "--self-test --no-window" ] || exit 4\n'
                   'mkdir -p "$NUMBA_CACHE_DIR/manifold_studio/algorithms"\n'
                   'echo compiled > "$NUMBA_CACHE_DIR/manifold_studio/algorithms/smo_steps.smo_slice-9.py311.nbc"\n')
    exe.chmod(0o755)
    build.warm_jit_cache(fake_bundle, tmp_path / "work")
    shipped = fake_bundle / "_internal" / "numba_cache" / "manifold_studio" / "algorithms"
    assert (shipped / "smo_steps.smo_slice-9.py311.nbc").read_text() == "compiled\n"
    launcher = (INSTALLER / "launcher.py").read_text()
    assert launcher.index("configure_jit_cache()") < launcher.index("from manifold_studio.cli.main import main")


def test_staged_package_tree(fake_bundle, tmp_path):
    stage = build.stage_deb(fake_bundle, tmp_path / "stage", "0.1.0", "amd64")
    opt = stage / "opt" / "manifold-studio"
    assert (opt / "manifold-studio").stat().st_mode & 0o777 == 0o755
    assert (opt / "_internal" / "lib" / "data.bin").stat().st_mode & 0o777 == 0o644
    assert (opt / "_internal" / "link.so").is_symlink()
    assert (stage / "usr" / "bin" / "manifold-studio").stat().st_mode & 0o777 == 0o755
    assert (stage / "usr" / "share" / "applications" / "manifold-studio.desktop").is_file()
    icon = stage / "usr" / "share" / "icons" / "hicolor" / "256x256" / "apps" / "manifold-studio.png"
    assert icon.read_bytes() == (ROOT / "resources" / "icon.png").read_bytes()
    control = (stage / "DEBIAN" / "control").read_text()
    assert "Installed-Size: " in control
    for script in ("postinst", "postrm"):
        path = stage / "DEBIAN" / script
        assert path.stat().st_mode & 0o111
        assert subprocess.run(["sh", "-n", str(path)]).returncode == 0


@pytest.mark.skipif(shutil.which("dpkg-deb") is None, reason="dpkg-deb is not installed")
def test_deb_builds_and_unpacks(fake_bundle, tmp_path):
    dist = tmp_path / "out"
    dist.mkdir()
    deb = build.make_deb(fake_bundle, dist, tmp_path / "work", "0.1.0", "gzip")
    info = subprocess.run(["dpkg-deb", "--field", str(deb), "Package", "Version"],
                          capture_output=True, text=True, check=True).stdout
    assert "Package: manifold-studio" in info and "Version: 0.1.0" in info
    contents = subprocess.run(["dpkg-deb", "--contents", str(deb)], capture_output=True, text=True,
                              check=True).stdout
    owners = {line.split()[1] for line in contents.splitlines()}
    assert owners == {"root/root"}  # --root-owner-group
    root = tmp_path / "root"
    subprocess.run(["dpkg-deb", "-x", str(deb), str(root)], check=True)
    out = subprocess.run([str(root / "opt" / "manifold-studio" / "manifold-studio"), "--self-test"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "fake manifold-studio --self-test"
    assert not (tmp_path / "work" / "deb-root").exists()  # the staging tree is cleaned up


def test_tarball_has_the_bundle_under_a_versioned_folder(fake_bundle, tmp_path):
    import tarfile

    out = build.make_tarball(fake_bundle, tmp_path, "0.1.0")
    with tarfile.open(out) as tar:
        names = tar.getnames()
        exe = tar.getmember("manifold-studio-0.1.0/manifold-studio")
    assert "manifold-studio-0.1.0/_internal/lib/data.bin" in names
    assert exe.mode & 0o100


def test_installed_metadata_matches_pyproject():
    """The bundle copies the installed metadata: it must declare pyproject's plugins."""
    build.check_metadata()


def test_icon_is_a_256_pixel_png():
    data = (ROOT / "resources" / "icon.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (256, 256)
    assert data[25] == 6  # RGBA: transparent rounded corners
    assert len(data) > 20_000  # a drawn picture, not a flat square


# -- the PyInstaller spec ---------------------------------------------------------------------

def test_spec_collects_plugins_and_excludes_the_unneeded():
    text = (INSTALLER / "manifold-studio.spec").read_text()
    compile(text, "manifold-studio.spec", "exec")
    assert 'copy_metadata("manifold-studio")' in text
    assert "collect_submodules(package)" in text and "collect_submodules(\"manifold_studio\")" in text
    excludes = re.search(r"EXCLUDES = \[(.*?)\]", text, re.S).group(1)
    for name in ("sklearn", "pytest", "dask", "PySide6.QtWebEngineCore", "PySide6.Qt3DCore", "PySide6.QtQuick",
                 "PySide6.QtMultimedia", "numba.np.ufunc.tbbpool"):
        assert f'"{name}"' in excludes
    for reader in ("pandas", "pyarrow", "openpyxl"):  # the table readers (CSV, Parquet, Excel) are bundled
        assert f'"{reader}"' not in excludes


# -- Windows, macOS and the workflow ----------------------------------------------------------

def iss_sections(text):
    sections, current = {}, None
    for raw in text.splitlines():
        line = raw.strip()
        if not line or line.startswith(";") or line.startswith("#"):
            continue
        m = re.fullmatch(r"\[(\w+)\]", line)
        if m:
            current = m.group(1)
            sections.setdefault(current, [])
        else:
            assert current is not None, f"entry outside a section: {line}"
            sections[current].append(line)
    return sections


def iss_params(entry):
    """'Name: "x"; Filename: "y"; Flags: a b' -> dict (values unquoted)."""
    out = {}
    for part in re.findall(r'(\w+):\s*("(?:[^"]|"")*"|[^;]*)', entry):
        key, value = part
        out[key] = value.strip().strip('"')
    return out


def test_inno_setup_script():
    text = (INSTALLER / "windows" / "manifold-studio.iss").read_text()
    directives = re.findall(r"^#(\w+)", text, re.M)
    assert directives.count("ifndef") == directives.count("endif")
    defined = set(re.findall(r"^\s*#define (\w+)", text, re.M))
    used = set(re.findall(r"\{#(\w+)\}", text))
    assert used <= defined, used - defined
    sections = iss_sections(text)
    assert {"Setup", "Files", "Icons", "Run", "Tasks"} <= set(sections)
    setup = dict(line.split("=", 1) for line in sections["Setup"])
    for key in ("AppId", "AppName", "AppVersion", "DefaultDirName", "OutputBaseFilename", "UninstallDisplayIcon",
                "SetupIconFile", "PrivilegesRequired"):
        assert key in setup, key
    assert setup["OutputBaseFilename"] == "manifold-studio-{#AppVersion}-windows-setup"  # build.py expects it
    files = [iss_params(e) for e in sections["Files"]]
    assert any(f["Source"] == r"{#SourceDir}\*" and "recursesubdirs" in f["Flags"] for f in files)
    icons = [iss_params(e) for e in sections["Icons"]]
    assert any(i["Name"].startswith("{group}") and i["Filename"] == r"{app}\{#AppExe}" for i in icons)  # Start menu
    assert any(i["Filename"] == "{uninstallexe}" for i in icons)  # uninstaller in the Start menu


def test_dmg_script_syntax_and_refusal(tmp_path):
    script = INSTALLER / "macos" / "build_dmg.sh"
    assert subprocess.run(["bash", "-n", str(script)]).returncode == 0
    text = script.read_text()
    for word in ("hdiutil create", "codesign", "notarytool", "stapler", "/Applications",
                 "com.apple.security.cs.allow-jit"):
        assert word in text, word
    proc = subprocess.run(["bash", str(script), str(tmp_path / "missing.app"), str(tmp_path / "x.dmg")],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "is not an app bundle" in proc.stderr


def test_ci_script_syntax():
    for script in ("ci_build_and_test.sh",):
        assert subprocess.run(["bash", "-n", str(INSTALLER / script)]).returncode == 0
    ci = (ROOT / ".ci" / "run").read_text()
    assert "installer/ci_build_and_test.sh" in ci and ".[installer]" in ci


def workflow():
    text = (ROOT / ".github" / "workflows" / "installers.yml").read_text()
    try:
        import yaml
    except ImportError:
        return text, None
    return text, yaml.safe_load(text)


def test_workflow_builds_and_self_tests_on_three_platforms():
    text, doc = workflow()
    assert "\t" not in text
    if doc is not None:
        job = doc["jobs"]["installer"]
        oses = job["strategy"]["matrix"]["os"]
        steps = job["steps"]
        runs = "\n".join(s.get("run", "") for s in steps)
    else:  # no PyYAML here: check the structure textually
        oses = re.search(r"os: \[(.*?)\]", text).group(1).split(", ")
        assert re.search(r"^jobs:\n  installer:\n", text, re.M)
        runs = text
        for line in text.splitlines():  # consistent two-space indentation, no tabs
            assert (len(line) - len(line.lstrip(" "))) % 2 == 0, line
    assert {o.split("-")[0] for o in oses} == {"ubuntu", "windows", "macos"}
    assert "installer/ci_build_and_test.sh" in runs
    assert runs.count("python installer/build.py --check --installer") == 2  # Windows, macOS
    assert runs.count("--self-test") >= 4  # pip install, .deb, Windows installer, .dmg


# -- the real thing (slow): bundle, .deb, install, self-test, remove ---------------------------

@pytest.mark.slow
@pytest.mark.skipif(os.environ.get("MANIFOLD_STUDIO_BUILD_INSTALLER") != "1",
                    reason="builds the PyInstaller bundle (about 2 minutes): set MANIFOLD_STUDIO_BUILD_INSTALLER=1")
@pytest.mark.timeout(1200)
def test_full_build_install_self_test_remove():
    env = dict(os.environ, PYTHON=sys.executable)
    proc = subprocess.run(["bash", str(INSTALLER / "ci_build_and_test.sh")], env=env, cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout[-5000:] + proc.stderr[-5000:]
    assert "installed application" in proc.stdout and "self-test" in proc.stdout
