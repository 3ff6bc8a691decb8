"""Which system libraries Qt needs to open a window, and a one-line message naming the Debian /
Ubuntu packages when one is missing (Qt-free: it runs before PySide6 is imported).

On a bare Debian or Ubuntu machine ``pip install`` brings Qt itself but not the X11 (xcb) and
OpenGL libraries its platform plugins load; Qt then aborts with a long "could not load the Qt
platform plugin" text. :func:`missing_qt_libraries` tries to load each library the way the
dynamic linker will (``ctypes.CDLL`` by its soname) and :func:`missing_message` gives the
``apt-get install`` line instead.
"""
from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["BASE_LIBRARIES", "XCB_LIBRARIES", "APT_PACKAGES", "qt_platform", "missing_qt_libraries",
           "missing_message"]

#: what QtGui itself links (every platform, offscreen included): soname → Debian package
BASE_LIBRARIES = {
    "libEGL.so.1": "libegl1",
    "libGL.so.1": "libgl1",
    "libfontconfig.so.1": "libfontconfig1",
    "libxkbcommon.so.0": "libxkbcommon0",
    "libdbus-1.so.3": "libdbus-1-3",
}
#: what the X11 platform plugin (xcb, a real window) loads on top: soname → Debian package
XCB_LIBRARIES = {
    "libX11-xcb.so.1": "libx11-xcb1",
    "libxcb-cursor.so.0": "libxcb-cursor0",
    "libxcb-icccm.so.4": "libxcb-icccm4",
    "libxcb-image.so.0": "libxcb-image0",
    "libxcb-keysyms.so.1": "libxcb-keysyms1",
    "libxcb-randr.so.0": "libxcb-randr0",
    "libxcb-render-util.so.0": "libxcb-render-util0",
    "libxcb-shape.so.0": "libxcb-shape0",
    "libxcb-xkb.so.1": "libxcb-xkb1",
    "libxkbcommon-x11.so.0": "libxkbcommon-x11-0",
}
#: every package, in the order the README lists them
APT_PACKAGES = tuple(dict.fromkeys([*BASE_LIBRARIES.values(), *XCB_LIBRARIES.values()]))


def qt_platform(environ=None) -> str:
    """The Qt platform the window will use: ``QT_QPA_PLATFORM`` when set, else ``xcb`` on Linux
    with an X display, ``wayland`` with a Wayland one, else ``""`` (not Linux, or no display)."""
    env = os.environ if environ is None else environ
    chosen = (env.get("QT_QPA_PLATFORM") or "").split(":")[0].strip()
    if chosen:
        return chosen
    if not sys.platform.startswith("linux"):
        return ""
    if env.get("DISPLAY"):
        return "xcb"
    return "wayland" if env.get("WAYLAND_DISPLAY") else ""


def _loads(soname: str) -> bool:
    try:
        ctypes.CDLL(soname)
    except OSError:
        return False
    return True


def missing_qt_libraries(platform: str, loads=_loads) -> list[tuple[str, str]]:
    """``[(soname, package), ...]`` of the libraries Qt needs for ``platform`` that cannot be
    loaded (Linux only; empty elsewhere). ``loads(soname) -> bool`` is the probe (tests replace it)."""
    if not sys.platform.startswith("linux") or not platform:
        return []
    needed = dict(BASE_LIBRARIES)
    if platform == "xcb":
        needed.update(XCB_LIBRARIES)
    return [(soname, package) for soname, package in needed.items() if not loads(soname)]


def missing_message(missing: list[tuple[str, str]], platform: str) -> str:
    """One line: what is missing and the ``apt-get install`` line that brings it."""
    names = ", ".join(soname for soname, _ in missing)
    packages = " ".join(dict.fromkeys(package for _, package in missing))
    where = "an X11 window (Qt's xcb platform)" if platform == "xcb" else f"Qt's {platform} platform"
    return (f"the window cannot open: {where} needs {names}, not installed on this machine; install "
            f"with: sudo apt-get install {packages} (Debian/Ubuntu; the command line works without them)")
