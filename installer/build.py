"""Build the installed application: ``python installer/build.py``.

One command, on the platform the installer is for (PyInstaller does not cross-compile):

- every platform: a PyInstaller *onedir* bundle in ``dist/manifold-studio/`` from
  ``installer/manifold-studio.spec`` (built-in plugins collected with their distribution's
  metadata, so their entry points are found; scikit-learn, tests and unused Qt modules left out);
- Linux: ``dist/manifold-studio-VERSION-linux-ARCH.tar.gz`` and ``dist/manifold-studio_VERSION_ARCH.deb``
  (``/opt/manifold-studio``, the launcher ``/usr/bin/manifold-studio``, a desktop entry and the
  icon), made with ``dpkg-deb``;
- Windows: also ``manifold-studio-cli.exe`` (console twin for the command line and
  ``--self-test``), and with ``--installer`` the Inno Setup installer from
  ``installer/windows/manifold-studio.iss`` (needs ``iscc`` on PATH);
- macOS: ``dist/Manifold Studio.app``, and with ``--installer`` a ``.dmg`` made by
  ``installer/macos/build_dmg.sh``.

Options: ``--check`` runs the bundle's ``--self-test`` after building; ``--skip-bundle`` reuses
an existing bundle (packaging only); ``--with-plugin DIST`` bundles a third-party plugin
distribution installed in the build environment; ``--no-tar`` / ``--no-deb``. Needs
``pip install -e ".[installer]"`` (PyInstaller >= 6; Pillow too on Windows/macOS for the icon).
"""
from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import stat
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPEC = ROOT / "installer" / "manifold-studio.spec"
ICON = ROOT / "resources" / "icon.png"
NAME = "manifold-studio"
DISPLAY_NAME = "Manifold Studio"
INSTALL_DIR = f"/opt/{NAME}"
SUMMARY = "Point-and-click manifold learning, clustering and classification"
DESCRIPTION = ("Manifold Studio is a desktop application for point-and-click analysis of numeric data:\n"
               "dimensionality reduction and manifold learning, clustering and classification, where\n"
               "every method extends a fitted model to new points.")
MAINTAINER = "Manifold Studio developers <maintainers@manifold-studio.invalid>"
HOMEPAGE = "https://github.com/manifold-studio/manifold-studio"
#: system libraries Qt's platform plugins load (present on any desktop; listed for servers)
DEB_DEPENDS = "libc6, libegl1, libgl1, libfontconfig1, libxkbcommon0, libdbus-1-3"
DEB_RECOMMENDS = ("libxcb-cursor0, libxkbcommon-x11-0, libxcb-icccm4, libxcb-keysyms1, libxcb-shape0, "
                  "libxcb-randr0, libxcb-render-util0, libxcb-image0, libxcb-xinerama0")


def version() -> str:
    from importlib import metadata

    try:
        return metadata.version(NAME)
    except metadata.PackageNotFoundError:
        import tomllib

        return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def log(text: str) -> None:
    print(f"[build] {text}", flush=True)


def folder_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def mib(n: int) -> str:
    return f"{n / 2**20:.1f} MiB"


# -- the bundle ---------------------------------------------------------------------------------

def check_metadata() -> None:
    """The installed distribution's entry points must be pyproject.toml's: the bundle gets the
    installed metadata, and a stale install would silently drop (or break) plugins."""
    import tomllib
    from importlib import metadata

    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"].get("entry-points", {})
    declared = {name: value for name, value in declared.get("manifold_studio.plugins", {}).items()}
    try:
        dist = metadata.distribution(NAME)
    except metadata.PackageNotFoundError:
        raise SystemExit(f"{NAME} is not installed in this Python: run pip install -e \".[installer]\" first")
    installed = {ep.name: ep.value for ep in dist.entry_points if ep.group == "manifold_studio.plugins"}
    if installed != declared:
        diff = sorted(set(installed.items()) ^ set(declared.items()))
        raise SystemExit("the installed manifold-studio's plugin entry points differ from pyproject.toml "
                         f"({', '.join(f'{k}={v}' for k, v in diff)}): run pip install -e \".[installer]\" again")
    log(f"{len(installed)} plugin entry points of {NAME} {dist.version} will be bundled")


#: PyInstaller warnings known to be harmless (installer/README.md says why); they are counted,
#: not printed, so that a warning that matters stands out
HARMLESS_WARNINGS = (
    re.compile(r"Failed to collect submodules for 'pyqtgraph\.jupyter'.*jupyter_rfb"),
    re.compile(r'Hidden import "scipy\.special\._cdflib" not found'),
    re.compile(r"Timed out while waiting for the child process to exit"),
    re.compile(r"Library not found: could not resolve 'libtbb\.so"),
    re.compile(r"Library (user32|msvcrt|kernel32|advapi32|ole32|shell32) required via ctypes not found"),
)


def run_quietly(cmd: list[str], env: dict, cwd: Path) -> None:
    """Run PyInstaller, printing its output except the known harmless warnings (counted)."""
    proc = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True, errors="replace")
    hidden = 0
    for line in proc.stdout.splitlines():
        if any(p.search(line) for p in HARMLESS_WARNINGS):
            hidden += 1
            continue
        print(line, flush=True)
    if hidden:
        log(f"{hidden} known harmless PyInstaller warning(s) not shown (see installer/README.md)")
    if proc.returncode:
        raise subprocess.CalledProcessError(proc.returncode, cmd)


def build_bundle(dist: Path, work: Path, plugins: list[str], installer_icon: Path | None) -> Path:
    check_metadata()
    env = dict(os.environ)
    env["MANIFOLD_STUDIO_EXTRA_PLUGINS"] = ",".join(plugins)
    env["MANIFOLD_STUDIO_CONSOLE_EXE"] = "1" if sys.platform == "win32" else "0"
    env["MANIFOLD_STUDIO_MACOS_APP"] = "1" if sys.platform == "darwin" else "0"
    if installer_icon is not None:
        env["MANIFOLD_STUDIO_ICON"] = str(installer_icon)
    cmd = [sys.executable, "-m", "PyInstaller", str(SPEC), "--noconfirm", "--log-level", "WARN",
           "--distpath", str(dist), "--workpath", str(work)]
    log("PyInstaller: " + " ".join(cmd[3:]))
    start = time.perf_counter()
    # run from the work folder: from the source folder, a stale ``manifold_studio.egg-info`` there
    # could be the metadata PyInstaller copies instead of the installed distribution's
    run_quietly(cmd, env, work)
    bundle = dist / NAME
    prune(bundle)
    strip_binaries(bundle)
    log(f"bundle {bundle} built in {time.perf_counter() - start:.0f} s: {mib(folder_size(bundle))}")
    return bundle


#: files in the bundle that the application never uses (found by measuring the bundle)
PRUNE_GLOBS = [
    "**/PySide6/Qt/translations/qtwebengine*", "**/PySide6/Qt/translations/assistant*",
    "**/PySide6/Qt/translations/designer*", "**/PySide6/Qt/translations/linguist*",
    "**/PySide6/Qt/plugins/platforms/libqvnc*", "**/PySide6/Qt/plugins/platforms/libqvkkhrdisplay*",
    "**/PySide6/Qt/plugins/platforms/libqminimalegl*", "**/PySide6/Qt/plugins/platforms/libqlinuxfb*",
    # embedded-device back ends (EGLFS, evdev input without a window system)
    "**/PySide6/Qt/plugins/platforms/libqeglfs*", "**/PySide6/Qt/plugins/egldeviceintegrations/*",
    "**/PySide6/Qt/plugins/generic/libqevdev*", "**/libQt6EglF*",
]


def prune(bundle: Path) -> None:
    removed = 0
    for pattern in PRUNE_GLOBS:
        for path in bundle.glob(pattern):
            if path.is_symlink():
                path.unlink()
            elif path.is_file():
                removed += path.stat().st_size
                path.unlink()
    if removed:
        log(f"pruned {mib(removed)} of unused Qt files")


#: libraries repaired by auditwheel (in ``*.libs/`` or with a hash in the name) break when stripped
_REPAIRED = re.compile(r"\.libs/|-[0-9a-f]{8}(\.so|-)")


def strip_binaries(bundle: Path) -> None:
    """Linux: ``strip --strip-unneeded`` the shared libraries (symbols nobody uses at run time:
    about 55 MiB here), except auditwheel-repaired ones, which stop loading when stripped."""
    if not sys.platform.startswith("linux") or shutil.which("strip") is None:
        return
    files = [p for p in bundle.rglob("*.so*") if p.is_file() and not p.is_symlink()
             and not _REPAIRED.search(p.relative_to(bundle).as_posix())]
    before = sum(p.stat().st_size for p in files)
    for i in range(0, len(files), 100):
        subprocess.run(["strip", "--strip-unneeded", *map(str, files[i:i + 100])], check=False,
                       stderr=subprocess.DEVNULL)
    saved = before - sum(p.stat().st_size for p in files)
    log(f"stripped {len(files)} shared libraries: {mib(saved)} saved")


def biggest_parts(bundle: Path, depth_dirs=("_internal", "_internal/PySide6", "_internal/PySide6/Qt/lib")) -> list[tuple[str, int]]:
    """(relative path, size) of the largest items at a few levels: what dominates the bundle."""
    parts = []
    for rel in depth_dirs:
        base = bundle / rel
        if not base.is_dir():
            continue
        for child in base.iterdir():
            if child.is_symlink():
                continue
            size = folder_size(child) if child.is_dir() else child.stat().st_size
            parts.append((str(child.relative_to(bundle)), size))
    return sorted(parts, key=lambda p: -p[1])


def executable(bundle: Path, console: bool = True) -> Path:
    if sys.platform == "win32":
        return bundle / (f"{NAME}-cli.exe" if console else f"{NAME}.exe")
    return bundle / NAME


def self_test(bundle: Path) -> None:
    exe = executable(bundle)
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    log(f"{exe} --self-test")
    if subprocess.run([str(exe), "--self-test"], env=env).returncode != 0:
        raise SystemExit(f"the bundle's self-test failed (see above): {exe} --self-test")


def modules_folder(bundle: Path) -> Path | None:
    """The bundle's folder of modules and data (``sys._MEIPASS`` at run time: ``_internal``)."""
    for path in (bundle / "_internal", bundle):
        if (path / "base_library.zip").is_file():
            return path
    return None


def warm_jit_cache(bundle: Path, work: Path) -> None:
    """Ship numba's compiled loops: run the bundle's self-test (every algorithm fitted and
    extended) with ``NUMBA_CACHE_DIR`` in the work folder, then copy that cache into the bundle as
    ``numba_cache/``. At run time the application copies it once into the user's cache folder
    (manifold_studio.algorithms.jit_cache), so a method's first use does not compile; nothing is
    ever written into the installation folder."""
    target = modules_folder(bundle)
    if target is None:
        log("no numba cache shipped: the bundle's module folder (base_library.zip) was not found")
        return
    warm = work / "numba-warm"
    shutil.rmtree(warm, ignore_errors=True)
    warm.mkdir(parents=True)
    env = dict(os.environ, NUMBA_CACHE_DIR=str(warm))
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    start = time.perf_counter()
    proc = subprocess.run([str(executable(bundle)), "--self-test", "--no-window"], env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, errors="replace")
    if proc.returncode != 0:
        print(proc.stdout[-4000:], flush=True)
        raise SystemExit("the bundle's self-test failed while warming numba's cache (see above)")
    shipped = target / "numba_cache"
    shutil.rmtree(shipped, ignore_errors=True)
    shutil.copytree(warm, shipped)
    files = [f for f in shipped.rglob("*") if f.is_file()]
    log(f"numba cache warmed in {time.perf_counter() - start:.0f} s: {len(files)} files, "
        f"{mib(sum(f.stat().st_size for f in files))} shipped in {shipped.relative_to(bundle)}")


# -- Linux packages -------------------------------------------------------------------------------

def debian_arch() -> str:
    try:
        return subprocess.run(["dpkg", "--print-architecture"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())


def make_tarball(bundle: Path, dist: Path, ver: str) -> Path:
    out = dist / f"{NAME}-{ver}-linux-{platform.machine()}.tar.gz"
    start = time.perf_counter()
    with tarfile.open(out, "w:gz", compresslevel=6) as tar:
        tar.add(bundle, arcname=f"{NAME}-{ver}")
    log(f"{out.name}: {mib(out.stat().st_size)} in {time.perf_counter() - start:.0f} s")
    return out


def desktop_entry() -> str:
    return "\n".join([
        "[Desktop Entry]",
        "Type=Application",
        f"Name={DISPLAY_NAME}",
        f"GenericName=Manifold learning",
        f"Comment={SUMMARY}",
        f"Exec={NAME}",  # the window takes no file arguments (a file is opened from it)
        f"TryExec={NAME}",
        f"Icon={NAME}",
        "Terminal=false",
        "Categories=Science;DataVisualization;Qt;",
        "Keywords=PCA;Isomap;t-SNE;clustering;SVM;perceptron;embedding;",
        "StartupWMClass=manifold-studio",
        "",
    ])


def launcher_script() -> str:
    return "\n".join([
        "#!/bin/sh",
        f"# {DISPLAY_NAME}: the installed application lives in {INSTALL_DIR}",
        f'exec {INSTALL_DIR}/{NAME} "$@"',
        "",
    ])


def deb_control(ver: str, arch: str, installed_kib: int) -> str:
    lines = [
        f"Package: {NAME}",
        f"Version: {ver}",
        "Section: science",
        "Priority: optional",
        f"Architecture: {arch}",
        f"Maintainer: {MAINTAINER}",
        f"Installed-Size: {installed_kib}",
        f"Depends: {DEB_DEPENDS}",
        f"Recommends: {DEB_RECOMMENDS}",
        f"Homepage: {HOMEPAGE}",
        f"Description: {SUMMARY}",
    ]
    lines += [" " + (line or ".") for line in DESCRIPTION.splitlines()]
    return "\n".join(lines) + "\n"


MAINTAINER_SCRIPT = """#!/bin/sh
set -e
# refresh the menus' caches when the tools are there (desktop machines)
if command -v update-desktop-database >/dev/null 2>&1; then update-desktop-database -q /usr/share/applications || true; fi
if command -v gtk-update-icon-cache >/dev/null 2>&1; then gtk-update-icon-cache -q -t -f /usr/share/icons/hicolor || true; fi
exit 0
"""


def _write(path: Path, text: str, mode: int = 0o644) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)


def stage_deb(bundle: Path, stage: Path, ver: str, arch: str) -> Path:
    """The package's file tree: opt/, usr/bin, usr/share/applications, usr/share/icons, DEBIAN/."""
    if stage.exists():
        shutil.rmtree(stage)
    opt = stage / INSTALL_DIR.lstrip("/")
    shutil.copytree(bundle, opt, symlinks=True)
    for path in [opt, *opt.rglob("*")]:  # world-readable, like any package
        if path.is_symlink():
            continue
        mode = path.stat().st_mode
        path.chmod((mode | stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH
                    | (stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH if path.is_dir() or mode & stat.S_IXUSR else 0))
                   & ~(stat.S_IWGRP | stat.S_IWOTH))
    _write(stage / "usr" / "bin" / NAME, launcher_script(), 0o755)
    _write(stage / "usr" / "share" / "applications" / f"{NAME}.desktop", desktop_entry())
    icon_dir = stage / "usr" / "share" / "icons" / "hicolor" / "256x256" / "apps"
    icon_dir.mkdir(parents=True, exist_ok=True)
    shutil.copy2(ICON, icon_dir / f"{NAME}.png")
    (icon_dir / f"{NAME}.png").chmod(0o644)
    installed_kib = (folder_size(stage) + 1023) // 1024
    _write(stage / "DEBIAN" / "control", deb_control(ver, arch, installed_kib))
    _write(stage / "DEBIAN" / "postinst", MAINTAINER_SCRIPT, 0o755)
    _write(stage / "DEBIAN" / "postrm", MAINTAINER_SCRIPT, 0o755)
    for path in [stage, *stage.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    return stage


def make_deb(bundle: Path, dist: Path, work: Path, ver: str, compression: str) -> Path:
    if shutil.which("dpkg-deb") is None:
        raise SystemExit("dpkg-deb is not installed: cannot build the .deb (Debian/Ubuntu: apt-get install dpkg)")
    arch = debian_arch()
    stage = stage_deb(bundle, work / "deb-root", ver, arch)
    out = dist / f"{NAME}_{ver}_{arch}.deb"
    start = time.perf_counter()
    subprocess.run(["dpkg-deb", "--root-owner-group", f"-Z{compression}", "--build", str(stage), str(out)],
                   check=True, stdout=subprocess.DEVNULL)
    shutil.rmtree(stage)
    log(f"{out.name}: {mib(out.stat().st_size)} in {time.perf_counter() - start:.0f} s")
    return out


# -- Windows and macOS --------------------------------------------------------------------------

def platform_icon(work: Path) -> Path | None:
    """The icon in the platform's format (.ico, .icns); PyInstaller converts the PNG with Pillow."""
    if sys.platform in ("win32", "darwin"):
        return ICON
    return None


def make_windows_installer(bundle: Path, dist: Path, ver: str) -> Path:
    iscc = shutil.which("iscc") or shutil.which("ISCC") or r"C:\Program Files (x86)\Inno Setup 6\ISCC.exe"
    if not Path(iscc).exists() and shutil.which(iscc) is None:
        raise SystemExit("Inno Setup's iscc was not found: install Inno Setup 6 (choco install innosetup)")
    iss = ROOT / "installer" / "windows" / "manifold-studio.iss"
    subprocess.run([iscc, f"/DAppVersion={ver}", f"/DSourceDir={bundle}", f"/DOutputDir={dist}",
                    f"/DIconFile={ROOT / 'installer' / 'windows' / 'manifold-studio.ico'}", str(iss)], check=True)
    out = dist / f"{NAME}-{ver}-windows-setup.exe"
    log(f"{out.name}: {mib(out.stat().st_size)}")
    return out


def windows_ico(path: Path) -> None:
    """resources/icon.png as a multi-size .ico for the installer and uninstaller (needs Pillow)."""
    from PIL import Image

    Image.open(ICON).save(path, sizes=[(16, 16), (32, 32), (48, 48), (64, 64), (128, 128), (256, 256)])


def make_dmg(dist: Path, ver: str) -> Path:
    app = dist / f"{DISPLAY_NAME}.app"
    out = dist / f"{NAME}-{ver}-macos-{platform.machine()}.dmg"
    subprocess.run(["bash", str(ROOT / "installer" / "macos" / "build_dmg.sh"), str(app), str(out)], check=True)
    return out


# -- command ------------------------------------------------------------------------------------

def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description="Build Manifold Studio's installed application "
                                 "(PyInstaller onedir bundle and the platform's packages).")
    ap.add_argument("--dist", default=str(ROOT / "dist"), help="output folder (default: dist/)")
    ap.add_argument("--work", default=str(ROOT / "build" / "installer"), help="PyInstaller's work folder")
    ap.add_argument("--skip-bundle", action="store_true", help="reuse dist/manifold-studio (packaging only)")
    ap.add_argument("--check", action="store_true", help="run the bundle's --self-test after building it")
    ap.add_argument("--with-plugin", action="append", default=[], metavar="DIST",
                    help="also bundle this installed third-party plugin distribution")
    ap.add_argument("--no-tar", action="store_true", help="Linux: no .tar.gz")
    ap.add_argument("--no-deb", action="store_true", help="Linux: no .deb")
    ap.add_argument("--deb-compression", default="zstd", choices=["zstd", "xz", "gzip", "none"],
                    help="compression of the .deb (zstd, the default: about 5 s here, dpkg >= 1.21 / "
                    "Debian 12, Ubuntu 21.10; xz for older systems: smaller, minutes; gzip: about 70 s)")
    ap.add_argument("--no-jit-cache", action="store_true",
                    help="do not ship numba's compiled loops (the first use of a method then compiles them)")
    ap.add_argument("--installer", action="store_true",
                    help="Windows: the Inno Setup installer; macOS: the .dmg")
    args = ap.parse_args(argv)

    dist, work = Path(args.dist).resolve(), Path(args.work).resolve()
    dist.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    ver = version()
    bundle = dist / NAME
    if args.skip_bundle:
        if not bundle.is_dir():
            raise SystemExit(f"--skip-bundle: {bundle} does not exist; build it first")
    else:
        bundle = build_bundle(dist, work, args.with_plugin, platform_icon(work))
    if not args.no_jit_cache and not (args.skip_bundle and (bundle / "_internal" / "numba_cache").is_dir()):
        warm_jit_cache(bundle, work)
    log(f"largest parts of the bundle ({mib(folder_size(bundle))} in all):")
    for rel, size in biggest_parts(bundle)[:12]:
        log(f"  {mib(size):>10}  {rel}")
    if args.check:
        self_test(bundle)
    outputs = [bundle]
    if sys.platform.startswith("linux"):
        if not args.no_tar:
            outputs.append(make_tarball(bundle, dist, ver))
        if not args.no_deb:
            outputs.append(make_deb(bundle, dist, work, ver, args.deb_compression))
    elif sys.platform == "win32" and args.installer:
        windows_ico(ROOT / "installer" / "windows" / "manifold-studio.ico")
        outputs.append(make_windows_installer(bundle, dist, ver))
    elif sys.platform == "darwin" and args.installer:
        outputs.append(make_dmg(dist, ver))
    for out in outputs:
        print(out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
