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


def score_in_window(qtbot, window, learners, folds=3, timeout=120_000):
    """Test & Score in the window: check each learner of ``learners`` ({algorithm: parameters}),
    asserting its seed is shown at its default 0, on ``folds`` stratified folds of seed 0; the
    comparison."""
    panel = window.test_score
    for algo, params in learners.items():
        panel.check(algo)
        assert panel.form(algo).editor("random_state").value() == 0   # the default seed, untouched
        panel.form(algo).set_values(params)
    panel.set_scheme("kfold", folds=folds, seed=0)
    job = panel.run()
    assert job is not None, panel.status.text()
    qtbot.waitUntil(lambda: job.finished, timeout=timeout)
    wait_idle(qtbot, window)
    assert panel.comparison is not None, panel.status.text()
    return panel.comparison


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



def warm_numba(host, algorithm, **params):
    """numba's one-off start (loading LLVM and the algorithm's compiled loops, with the GIL held
    for a few hundred ms) happens once per process, off a measured animation: a tiny fit first."""
    from manifold_studio.session.model import Session

    session = Session(host)
    session.load("sample:iris")
    session.run(algorithm, **params)
    return True


#: animations measured at most: a stall the code causes recurs in each; a busy shared machine
#: (other processes on the 2 cores stretch the wall time of the main thread's work several
#: times) rarely stalls two runs in a row
ANIMATION_ATTEMPTS = 3


def animation_stalls(qtbot, window, algorithm, params, check, attempts=ANIMATION_ATTEMPTS):
    """Fit ``algorithm`` with ``params`` in the window (up to ``attempts`` times) while
    :class:`DrawnMaps` records the maps drawn; ``check(run, drawn)`` asserts on each attempt.
    The stall of an attempt is the event loop's longest during the animation, up to the result's
    arrival in the session, leaving out the 200 ms after the first map (drawn in full: points,
    colours, legend, axes; the next ones only move the points); drawing the result in every view
    is measured by tests/gui/test_gui_responsiveness.py and benchmarks/bench_ui.py. Stops at the
    first attempt within 100 ms; returns [(stall ms, worst three)] of the attempts made."""
    import time

    arrived = []  # when each result reached the session (the animation's end, the views' turn)
    session = window.session
    complete_run = session.complete_run
    session.complete_run = lambda *a, **k: (arrived.append(time.perf_counter()), complete_run(*a, **k))[1]
    stalls = []
    try:
        for _attempt in range(attempts):
            drawn = DrawnMaps(window.map_view)
            run = drawn.run = window.run_algorithm(algorithm, dict(params))
            qtbot.waitUntil(lambda: run.status == DONE, timeout=60_000)
            drawn.stop()
            wait_idle(qtbot, window)
            assert len(drawn.maps) >= 3, len(drawn.maps)
            # the drawn maps are successive stages of the optimisation
            assert not drawn._np.allclose(drawn.maps[0], drawn.maps[-1])
            assert len({m.tobytes() for m in drawn.maps}) == len(drawn.maps)
            check(run, drawn)
            end = arrived[-1]
            stall = drawn.meter.max_stall_ms(skip_s=0.2, until=end)
            stalls.append((round(stall), drawn.meter.worst(3, until=end)))
            print(f"longest event-loop stall during the {algorithm} animation: {stall:.0f} ms "
                  f"[{drawn.meter.worst(3, until=end)}] over {len(drawn.meter.ticks)} ticks, "
                  f"{len(drawn.maps)} maps drawn; drawing the result: {drawn.meter.max_stall_ms(since=end):.0f} ms")
            if stall <= 100:
                break
    finally:
        del session.complete_run   # the bound method again
    return stalls


def cancel_mid_animation(qtbot, window, algorithm, params):
    """Start ``algorithm`` in the window, click Cancel once two maps were drawn; the run."""
    from PySide6.QtCore import Qt

    drawn = DrawnMaps(window.map_view)
    run = drawn.run = window.run_algorithm(algorithm, dict(params))
    qtbot.waitUntil(lambda: len(drawn.maps) >= 2, timeout=30_000)
    qtbot.mouseClick(window.run_controls.cancel_button, Qt.MouseButton.LeftButton)
    qtbot.waitUntil(lambda: run.status == DONE, timeout=5000)
    drawn.stop()
    return run


def legend_room(view, span):
    """How much wider than the points' extent the map may be on a side (per axis): 10 % of margins,
    plus, when no corner was free, the room render.legend_corner.make_room gave the legend (the
    legend's share of the plot, whose entries may have changed since: at most 0.6 of the span)."""
    vb = view.plot_item.getViewBox()
    legend = view.legend.boundingRect()
    room = [min((legend.width() + 10) / max(vb.width(), 1), 0.9), min((legend.height() + 10) / max(vb.height(), 1), 0.9)]
    return [0.1 * span[i] + max(room[i] / (1 - room[i]) * 1.2, 0.6) * span[i] for i in (0, 1)]


def tsne_started_on_a_pca_map(make_window, host, n, seed=0):
    """A window showing the PCA map of n labelled random points, and a t-SNE run on them started
    (its intermediate maps arrive while the test runs): (window, run, rng)."""
    import numpy as np

    from benchmarks.stall_meter import spin_until
    from manifold_studio.data import Dataset

    w = make_window(host, initial_algorithm=None)
    rng = np.random.default_rng(seed)
    w.session.add_dataset(Dataset("pts", rng.normal(size=(n, 5)), rng.integers(0, 4, n)))
    w.run_algorithm("pca", {})
    spin_until(lambda: not w.busy, 20)
    run = w.session.create_run("tsne", {"max_iter": 300}, "pts")
    w.session.start_run(run.id)
    return w, run, rng


def shown_map_view(qtbot, width, height):
    """A bare map view (no window) of ``width`` × ``height``, shown, and its random generator."""
    import numpy as np

    from manifold_studio.gui.views.map_view import MapView

    view = MapView()
    qtbot.addWidget(view)
    view.resize(width, height)
    view.show()
    return view, np.random.default_rng(0)
