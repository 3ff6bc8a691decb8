"""A bare machine (issue 33): when a library Qt needs is missing, the window's start prints one
line with the apt-get command instead of Qt's abort; the window's options are accepted first
(`manifold-studio --screenshot X`, as the README writes it)."""
import sys

import pytest

from manifold_studio.cli import main as cli_main
from manifold_studio.cli import qt_libraries
from manifold_studio.cli.qt_libraries import APT_PACKAGES, missing_message, missing_qt_libraries, qt_platform

linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the library check is Linux's")


def test_platform_follows_the_environment():
    assert qt_platform({"QT_QPA_PLATFORM": "offscreen", "DISPLAY": ":0"}) == "offscreen"
    if sys.platform.startswith("linux"):
        assert qt_platform({"DISPLAY": ":0"}) == "xcb"
        assert qt_platform({"WAYLAND_DISPLAY": "wayland-0"}) == "wayland"
        assert qt_platform({}) == ""


@linux
def test_the_needed_libraries_load_here():
    # CI installs what the README lists: nothing Qt needs offscreen is missing
    assert missing_qt_libraries("offscreen") == []


@linux
def test_a_missing_library_gives_one_line_with_the_apt_get_command(monkeypatch, capsys):
    gone = {"libxcb-icccm.so.4", "libxcb-keysyms.so.1"}
    real = qt_libraries._loads
    monkeypatch.setattr(qt_libraries, "_loads", lambda soname: soname not in gone and real(soname))
    monkeypatch.setattr(cli_main, "missing_qt_libraries",
                        lambda platform: missing_qt_libraries(platform, qt_libraries._loads))
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    monkeypatch.setenv("DISPLAY", ":99")
    imported = []
    monkeypatch.setattr(cli_main.importlib, "import_module", lambda name: imported.append(name))
    code = cli_main.main(["--screenshot", "shot.png"])
    err = capsys.readouterr().err.strip()
    assert code == 1 and not imported                       # Qt was never imported
    assert len(err.splitlines()) == 1
    assert "sudo apt-get install libxcb-icccm4 libxcb-keysyms1" in err
    assert "libxcb-icccm.so.4" in err and "X11" in err


def test_message_names_each_package_once():
    text = missing_message([("libEGL.so.1", "libegl1"), ("libGL.so.1", "libgl1")], "offscreen")
    assert "apt-get install libegl1 libgl1" in text and "offscreen" in text
    assert len(APT_PACKAGES) == len(set(APT_PACKAGES)) and "libxcb-cursor0" in APT_PACKAGES


def test_window_options_first_start_the_window(monkeypatch):
    seen = []
    monkeypatch.setattr(cli_main, "start_gui", lambda argv: seen.append(argv) or 0)
    assert cli_main.main(["--screenshot", "x.png", "--size", "1366x768"]) == 0
    assert cli_main.main(["--screenshot=x.png"]) == 0
    assert seen == [["--screenshot", "x.png", "--size", "1366x768"], ["--screenshot=x.png"]]
