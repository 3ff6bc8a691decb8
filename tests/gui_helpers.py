"""Small helpers shared by the GUI tests."""
import pytest

from manifold_studio.session.records import DONE


def wait_last_run(qtbot, window, status=DONE, timeout=20_000):
    """Wait until the newest run of the window's session has ``status``; return it."""
    qtbot.waitUntil(lambda: bool(window.session.runs)
                    and list(window.session.runs.values())[-1].status == status, timeout=timeout)
    return list(window.session.runs.values())[-1]


def wait_idle(qtbot, window, timeout=20_000):
    """Wait until no foreground job (fit, load, extension, ...) runs in the window."""
    qtbot.waitUntil(lambda: not window.busy, timeout=timeout)


def discovered_host(algorithms=(), samples=()):
    """A freshly discovered plugin host without load failures; the test is skipped when one of
    ``algorithms`` / ``samples`` is not installed. For module fixtures::

        @pytest.fixture(scope="module")
        def host():
            return discovered_host(("pca",), ("iris",))
    """
    from manifold_studio.plugins.host import PluginHost

    host = PluginHost().discover()
    host.failures.clear()
    missing = [a for a in algorithms if a not in host.algorithms] + [s for s in samples if s not in host.samples]
    if missing:
        pytest.skip(f"plugins not installed: {', '.join(missing)}")
    return host


class DrawnMaps:
    """Records the intermediate maps the map view draws while ``run`` is running (the first
    preview through ``show_partial``, the next ones by moving the points: ``redrawn`` either
    way) and the event loop's stalls from the first of them (a 10 ms timer, StallMeter)."""

    def __init__(self, view):
        from benchmarks.stall_meter import StallMeter  # Qt: only GUI tests make one
        import numpy as np

        self._np = np
        self.maps = []
        self.view = view
        self.run = None
        view.redrawn.connect(self._redrawn)
        self.meter = StallMeter().start()

    def _redrawn(self):
        from manifold_studio.session.records import RUNNING

        if self.run is not None and self.run.status == RUNNING:
            if not self.maps:  # the animation starts: measure from here on
                self.meter.reset()
            self.maps.append(self._np.array(self.view.xy))

    def stop(self):
        self.meter.stop()
        self.view.redrawn.disconnect(self._redrawn)

