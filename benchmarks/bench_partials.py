"""What one intermediate map of a running fit costs the window's thread (issue 33, item 9).

    .venv/bin/python benchmarks/bench_partials.py            # 20,000 points, 40 maps
    .venv/bin/python benchmarks/bench_partials.py --n 100000

The window is real (offscreen), its plot 1000×700 as in ``bench_ui.py``'s fits, showing the PCA
map of n points (10 blobs in 10-D); a t-SNE run is started on them and intermediate maps (each
the last one grown by a few percent and jittered, so the view's range changes now and then) are
handed to the window's partial-result router, each followed by the event loop's turn that paints
it. Measured: the window's thread CPU time per map (drawing it + the paint), once with the
preview item (:mod:`manifold_studio.gui.views.preview_points`) and once with pyqtgraph's
ScatterPlotItem (the preview threshold raised above n), and the functions that take the time.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import sys
import time

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import numpy as np  # noqa: E402


def measure(window, bench, name: str, count: int, seed: int = 0):
    from stall_meter import spin_until
    from manifold_studio.gui.fit_partials import route_partial, router_for

    session = window.session
    window.run_algorithm("pca", {})
    spin_until(lambda: not window.busy, 60)
    bench.settle(0.5)
    run = session.create_run("tsne", {"max_iter": 300}, name)
    session.start_run(run.id)
    rng = np.random.default_rng(seed)
    Y = rng.normal(size=(session.dataset(name).n_samples, 2))
    route_partial(window, run.id, Y)
    bench.settle(0.3)
    item = type(window.map_view._item).__name__
    router = router_for(window)
    profile = cProfile.Profile()
    cpu = []
    for _ in range(count):
        Y = Y * 1.05 + rng.normal(scale=0.01, size=Y.shape)
        router.pending[(run.id, False)] = Y
        router.timer.stop()
        c0 = time.thread_time()
        profile.enable()
        router.flush()
        bench.app.processEvents()   # the paint
        profile.disable()
        cpu.append(1000.0 * (time.thread_time() - c0))
        bench.settle(0.06)   # the render thread's image arrives and is painted
    session.fail_run(run.id, "benchmark over")
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats("tottime").print_stats(8)
    return item, np.asarray(cpu), out.getvalue()


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=20_000)
    parser.add_argument("--count", type=int, default=40)
    args = parser.parse_args(argv)

    from PySide6.QtWidgets import QApplication

    app = QApplication.instance() or QApplication([])
    import bench_ui
    from manifold_studio.data import Dataset
    from manifold_studio.gui.main_window import MainWindow
    from manifold_studio.gui.views import map_preview
    from manifold_studio.plugins.host import PluginHost

    window = MainWindow(host=PluginHost().discover(), initial_algorithm=None, dialogs=False)
    window.show()
    bench = bench_ui.Bench(app, window, print)
    X, y = bench_ui.blobs(args.n, 10, seed=2)
    name = window.session.add_dataset(Dataset("blobs", np.abs(X), y))
    bench.size_plot(1000, 700)
    for dock in ("data", "algorithm", "runs"):
        if dock in window.docks:
            window.docks[dock].show()
    print(f"{args.n:,} points, {args.count} intermediate maps, load average "
          f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    threshold = map_preview.PREVIEW_RASTER_ABOVE
    try:
        for label, limit in (("preview item", threshold), ("pyqtgraph ScatterPlotItem", 10 ** 12)):
            map_preview.PREVIEW_RASTER_ABOVE = limit
            item, cpu, top = measure(window, bench, name, args.count)
            print(f"\n{label} ({item}): window's thread CPU per intermediate map median {np.median(cpu):.1f} ms, "
                  f"p90 {np.percentile(cpu, 90):.1f} ms, max {cpu.max():.1f} ms")
            print("\n".join(line for line in top.splitlines()[6:] if line.strip()))
    finally:
        map_preview.PREVIEW_RASTER_ABOVE = threshold
        window.shutdown()


if __name__ == "__main__":
    main()
