"""Reading and validating plugin wheels (``.whl``) before the plugin manager installs them.

A wheel is a zip archive with one ``<name>-<version>.dist-info`` folder. :func:`read_wheel`
reads its metadata without importing anything and refuses what is not a wheel (not a zip, no or
several ``.dist-info``, an unsafe member path); :func:`check_wheel` refuses a wheel with no entry
point in the group ``manifold_studio.plugins``, tagged for another Python or platform (the
message names the tags), requiring another Python version, or needing a package (``Requires-Dist``)
the application does not have (named). Uses ``packaging`` when it is importable (exact platform
tags, markers, version specifiers), else a compact fallback.
"""
from __future__ import annotations

import configparser
import importlib.util
import re
import sys
import sysconfig
import zipfile
from dataclasses import dataclass
from email.parser import Parser
from importlib import metadata
from pathlib import Path

from manifold_studio.errors import PluginError
from manifold_studio.version import __version__

GROUP = "manifold_studio.plugins"
OWN_DISTRIBUTION = "manifold-studio"


class PluginInstallError(PluginError):
    """A wheel could not be installed (or a plugin uninstalled/enabled); nothing was changed."""


def normalise(name: str | None) -> str:
    """PEP 503 normalisation (``My_Plugin`` -> ``my-plugin``)."""
    return re.sub(r"[-_.]+", "-", (name or "").strip()).lower()


# The distribution-name grammar of the core metadata specification (PEP 508): letters, digits and
# ``. _ -``, starting and ending with a letter or digit. Nothing else (no path separator, no ``..``,
# no drive letter) can reach a folder name built from it.
_DIST_NAME = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)
MAX_NAME_LENGTH = 200


def valid_distribution_name(name: str | None, where: str = "") -> str:
    """``name`` if it follows the distribution-name grammar, else :class:`PluginInstallError`
    (``where`` says which file or field the name came from)."""
    text = name if isinstance(name, str) else ""
    if not _DIST_NAME.match(text) or len(text) > MAX_NAME_LENGTH:
        shown = text if len(text) <= 60 else text[:57] + "..."
        raise PluginInstallError(
            f"{where + ': ' if where else ''}the distribution name {shown!r} is not a valid name (letters, "
            f"digits and . _ -, starting and ending with a letter or digit, at most {MAX_NAME_LENGTH} "
            f"characters); nothing was installed")
    return text


@dataclass
class WheelInfo:
    path: Path
    name: str
    version: str
    tags: list[str]
    entry_points: dict[str, str]
    requires: list[str]
    dist_info: str
    requires_python: str | None = None


_WHEEL_NAME = re.compile(r"^(?P<name>[^-]+)-(?P<ver>[^-]+)(-(?P<build>\d[^-]*))?-(?P<py>[^-]+)-(?P<abi>[^-]+)"
                         r"-(?P<plat>[^-]+)\.whl$", re.IGNORECASE)


def _interpreter_tags() -> tuple[set[str], set[str], set[str]]:
    """(python tags, abi tags, platform tags) this interpreter can run (a compact version of
    packaging.tags: enough for pure-Python plugins and CPython binary wheels)."""
    major, minor = sys.version_info[:2]
    impl = "cp" if sys.implementation.name == "cpython" else sys.implementation.name[:2]
    pys = {f"py{major}", f"{impl}{major}{minor}", f"{impl}{major}"}
    pys |= {f"py{major}{m}" for m in range(minor + 1)}
    pys |= {f"{impl}{major}{m}" for m in range(2, minor + 1)}  # abi3 wheels built for older CPythons
    abis = {"none", "abi3", f"{impl}{major}{minor}"}
    plats = {"any"}
    try:
        from packaging import (
            tags as ptags,  # exact platform tags when packaging is present
        )

        for t in ptags.sys_tags():
            plats.add(t.platform)
    except ImportError:
        plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        plats.add(plat)
        if plat.startswith("linux_"):
            arch = plat[len("linux_"):]
            plats |= {f"manylinux1_{arch}", f"manylinux2010_{arch}", f"manylinux2014_{arch}"}
            plats |= {f"manylinux_2_{m}_{arch}" for m in range(5, 40)}
    return pys, abis, plats


def _tag_ok(tag: str, supported: tuple[set[str], set[str], set[str]]) -> bool:
    py, abi, plat = tag.split("-")
    pys, abis, plats = supported
    if not any(p in pys for p in py.split(".")) or not any(a in abis for a in abi.split(".")):
        return False
    return any(p in plats for p in plat.split("."))


def _requirement_missing(req: str) -> str | None:
    """The requirement text if ``req`` (a Requires-Dist line) is not satisfied, else None."""
    try:
        from packaging.requirements import Requirement
    except ImportError:  # frozen application without packaging: name only, markers with extra skipped
        if ";" in req and "extra" in req.split(";", 1)[1]:
            return None
        name = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", req)
        return None if not name or _have(name.group(1), None) else req.strip()
    r = Requirement(req)
    if r.marker is not None and not r.marker.evaluate({"extra": ""}):
        return None
    return None if _have(r.name, r.specifier) else req.strip()


def _have(name: str, specifier) -> bool:
    if normalise(name) == OWN_DISTRIBUTION:
        version = _own_version()
    else:
        try:
            version = metadata.version(name)
        except metadata.PackageNotFoundError:
            # the frozen application may have the module without its metadata
            mod = normalise(name).replace("-", "_")
            try:
                found = importlib.util.find_spec(mod) is not None
            except (ImportError, ValueError):
                found = False
            return found and (specifier is None or not str(specifier))
    return specifier is None or not str(specifier) or specifier.contains(version, prereleases=True)


def _own_version() -> str:
    return __version__


def read_wheel(path) -> WheelInfo:
    """Read and validate a wheel's metadata (no import). Raises PluginInstallError."""
    path = Path(path)
    if not path.is_file():
        raise PluginInstallError(f"{path}: no such file")
    if not zipfile.is_zipfile(path):
        raise PluginInstallError(f"{path.name} is not a plugin wheel: it is not a zip archive "
                                 "(a .whl file is a zip made by 'pip wheel' or 'python -m build')")
    try:
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
            bad = [n for n in names if n.startswith(("/", "\\")) or ".." in Path(n).parts or ":" in n]
            if bad:
                raise PluginInstallError(f"{path.name} is not a safe wheel: it has the path {bad[0]!r}")
            infos = sorted({n.split("/")[0] for n in names if n.split("/")[0].endswith(".dist-info")})
            if len(infos) != 1:
                raise PluginInstallError(f"{path.name} is not a plugin wheel: it has "
                                         f"{'no' if not infos else len(infos)} .dist-info folder(s)")
            di = infos[0]

            def text(member: str) -> str | None:
                try:
                    return zf.read(f"{di}/{member}").decode("utf-8")
                except KeyError:
                    return None

            meta_text, wheel_text, ep_text = text("METADATA"), text("WHEEL"), text("entry_points.txt")
    except zipfile.BadZipFile as exc:
        raise PluginInstallError(f"{path.name} is not a plugin wheel: damaged zip archive ({exc})") from None
    if meta_text is None:
        raise PluginInstallError(f"{path.name} is not a plugin wheel: {di}/METADATA is missing")
    meta = Parser().parsestr(meta_text)
    name, version = meta.get("Name"), meta.get("Version")
    if not name or not version:
        raise PluginInstallError(f"{path.name}: {di}/METADATA has no Name or Version")
    valid_distribution_name(name, f"{path.name} ({di}/METADATA, field Name)")
    if len(version) > MAX_NAME_LENGTH or not re.match(r"^[A-Za-z0-9.+!_-]+$", version):
        raise PluginInstallError(f"{path.name} ({di}/METADATA, field Version): {version[:60]!r} is not a version")
    tags = []
    if wheel_text:
        tags = [v.strip() for k, v in Parser().parsestr(wheel_text).items() if k == "Tag"]
    if not tags:
        m = _WHEEL_NAME.match(path.name)
        if m:
            tags = [f"{py}-{abi}-{plat}" for py in m["py"].split(".") for abi in m["abi"].split(".")
                    for plat in m["plat"].split(".")]
    eps: dict[str, str] = {}
    if ep_text:
        cp = configparser.ConfigParser(delimiters=("=",), interpolation=None)
        cp.optionxform = str
        try:
            cp.read_string(ep_text)
        except configparser.Error as exc:
            raise PluginInstallError(f"{path.name}: unreadable entry_points.txt ({exc})") from None
        if cp.has_section(GROUP):
            eps = {k.strip(): v.strip() for k, v in cp.items(GROUP)}
    return WheelInfo(path, name, version, tags, eps, meta.get_all("Requires-Dist") or [], di,
                     meta.get("Requires-Python"))


def _quoted(text: str, width: int = 60) -> str:
    text = " ".join(str(text).split())
    return repr(text if len(text) <= width else text[:width - 3] + "...")


def check_wheel(info: WheelInfo) -> None:
    """Refuse a wheel without plugin entry points, for another interpreter or platform, or
    needing a package the application does not have."""
    if not info.entry_points:
        raise PluginInstallError(
            f"{info.path.name} ({info.name} {info.version}) is not a Manifold Studio plugin: it has no "
            f"entry point in the group '{GROUP}' (add [project.entry-points.\"{GROUP}\"] to its pyproject.toml)")
    if normalise(info.name) == OWN_DISTRIBUTION:
        raise PluginInstallError(f"{info.path.name} is Manifold Studio itself, not a plugin")
    if info.tags:
        supported = _interpreter_tags()
        if not any(_tag_ok(t, supported) for t in info.tags):
            major, minor = sys.version_info[:2]
            raise PluginInstallError(
                f"{info.path.name} was built for {', '.join(info.tags)}, which this application "
                f"(Python {major}.{minor}, {sysconfig.get_platform()}) cannot run: ask the author for a "
                f"wheel tagged py3-none-any (pure Python) or for this Python and platform")
    if info.requires_python:
        try:
            from packaging.specifiers import InvalidSpecifier, SpecifierSet

            ok = SpecifierSet(info.requires_python).contains(".".join(map(str, sys.version_info[:3])))
        except ImportError:
            ok = True
        except InvalidSpecifier:
            raise PluginInstallError(
                f"{info.path.name}: the METADATA field Requires-Python {_quoted(info.requires_python)} is not a "
                "valid version specifier; nothing was installed") from None
        if not ok:
            raise PluginInstallError(
                f"{info.name} {info.version} requires Python {info.requires_python}; this application runs "
                f"Python {'.'.join(map(str, sys.version_info[:3]))}")
    missing = []
    for req in info.requires:
        try:
            problem = _requirement_missing(req)
        except ValueError:  # packaging's InvalidRequirement / InvalidMarker: its parser's text stays out
            raise PluginInstallError(
                f"{info.path.name}: the METADATA field Requires-Dist {_quoted(req)} is not a valid "
                "requirement (expected e.g. 'numpy>=1.24'); nothing was installed") from None
        if problem:
            missing.append(problem)
    if missing:
        shown = ", ".join(_quoted(m) for m in missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        raise PluginInstallError(
            f"{info.name} {info.version} needs {shown}, which this "
            f"application does not have; nothing was installed (a plugin can only use the packages "
            f"that come with Manifold Studio)")


