"""How fluid the window is (issue 11, item 8): a 1,000,000-point map and fits on 20,000 points.

    .venv/bin/python benchmarks/bench_ui.py            # full sizes (several minutes)
    .venv/bin/python benchmarks/bench_ui.py --quick    # 200,000-point map, fits on 3,000 points

The window is real (Qt offscreen platform unless a display is set), with every view installed.
The map shows fixed generated data: 10 Gaussian blobs in 2-D with their labels, loaded as a data
set and shown through a run whose embedding is the points (``session.add_run``). Its plot widget
is sized 1200×900 (the docks hidden) and painted into a QImage of that size
(Format_ARGB32_Premultiplied, the raster format of on-screen backing stores):

- pan / zoom: one frame = moving or scaling the view range by 5 % / 10 % + a full paint (and,
  second, + a synchronous repaint of the plot's viewport into the window's backing store);
- hover: ``map_view.hover_at`` at random positions in the view (its spatial index built first);
- selection: ``window.selection.select`` of 100,000 rows + the highlight refresh (and the
  rectangle / lasso of the map's selection overlay);
- colour change: ``map_view.color_combo`` to another mode + the next frame.

Then every algorithm of ``window.host.algorithms`` is fitted in the window on 20,000 points
(10 blobs in 10-D, non-negative, labelled) while a 10 ms timer in the main thread measures the
event loop's stalls (:func:`benchmarks.stall_meter.measure_fit`): during the fit (until
the result reaches the window) against the 50 ms target, and at completion (recording the run,
every view's ``show_run``, the repaint) for information. Each fit starts from the map of the
data set's PCA (what the window shows after loading data). Each algorithm is first fitted once on
200 points outside the window (numba's one-off start is not a fit's stall). A fit that stalled
the window over 0.5 s is measured again with the Run panel's "run in a separate process". Fits
still running
after ``--cancel-after`` seconds are cancelled (and said so). Results go to
benchmarks/results/bench_ui.txt (or --out).
"""
from __future__ import annotations

import argparse
import faulthandler
import gc
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import limit_threads  # noqa: E402  (sets BLAS threads before numpy loads)

_THREADS = limit_threads(sys.argv[1:])

import numpy as np  # noqa: E402

#: parameters for the fits on 20,000 points (3,000 with --quick): small where a default would
#: take minutes, the same settings a user would pick on that many points
FIT_PARAMS = {
    "autoencoder": {"max_iter": 20, "random_state": 0},
    "gmm": {"n_components": 10, "random_state": 0},
    "hierarchical": {"n_clusters": 10},
    "isomap": {"n_neighbors": 10},
    "kmeans": {"n_clusters": 10, "random_state": 0},
    "laplacian_eigenmaps": {"n_neighbors": 10},
    "linear_classifier": {"max_iter": 50},
    "lle": {"n_neighbors": 10},
    "mlp": {"max_iter": 20, "random_state": 0},
    "nmf": {"max_iter": 100, "random_state": 0},
    "perceptron": {"max_epochs": 50},
    "spectral_clustering": {"n_clusters": 10, "random_state": 0, "n_init": 2},
    "svm": {"max_iter": 20_000},
    "tsne": {"max_iter": 300, "random_state": 0},
}
#: algorithms that refuse 20,000 points (a dense n × n kernel matrix, n² ranking pairs) are
#: fitted on the first rows of the data set instead
FIT_ROWS = {"svm": 10_000, "ranking_svm": 3_000}
#: fits that stalled the window longer than this are measured again in a separate process
ISOLATE_ABOVE_MS = 500.0
TARGETS_MS = {"frame": 50.0, "hover": 10.0, "select": 100.0, "color": 200.0, "stall": 50.0}


def blobs(n: int, d: int, seed: int, scale: float = 6.0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(scale=scale, size=(10, d))
    y = rng.integers(0, 10, n)
    return centers[y] + rng.normal(size=(n, d)), y


def ms(seconds: float) -> float:
    return 1000.0 * seconds


class Bench:
    def __init__(self, app, window, report):
        self.app, self.w, self.report = app, window, report
        self.rows: list[tuple[str, float, float, str]] = []  # operation, measured ms, target ms, detail
        self.isolate_above_ms = ISOLATE_ABOVE_MS
        self.trace = False

    def settle(self, seconds: float = 0.2) -> None:
        from stall_meter import spin_until

        spin_until(lambda: False, seconds)

    def add(self, operation: str, measured: float, target: float, detail: str = "") -> None:
        self.rows.append((operation, measured, target, detail))
        self.report(f"  {operation}: {measured:.1f} ms (target < {target:g} ms) {detail}")

    # -- the map ----------------------------------------------------------------------------
    def size_plot(self, width: int = 1200, height: int = 900) -> None:
        view = self.w.map_view
        for dock in self.w.docks.values():
            dock.hide()
        self.w.resize(width + 100, height + 200)
        self.settle(0.3)
        for _ in range(5):
            got = view.plot.size()
            if (got.width(), got.height()) == (width, height):
                break
            self.w.resize(self.w.width() + width - got.width(), self.w.height() + height - got.height())
            self.settle(0.2)

    def render(self):
        from stall_meter import render_plot

        return render_plot(self.w.map_view)

    def frames(self, step, count: int, on_screen: bool = False) -> np.ndarray:
        """Time ``count`` frames: ``step(i)`` then a full paint into the 1200×900 image, or
        (``on_screen``) a synchronous repaint of the plot's viewport into the window's backing
        store (the path of a real screen; on the offscreen platform its own raster store)."""
        times = []
        for i in range(count):
            t = time.perf_counter()
            step(i)
            if on_screen:
                self.w.map_view.plot.viewport().repaint()
            else:
                self.render()
            times.append(ms(time.perf_counter() - t))
            self.app.processEvents()
        return np.asarray(times)

    def grid_comparison(self, pan, frames: int) -> None:
        """What the map's grid costs per pan frame: pyqtgraph draws it with the axes (replayed and
        re-laid out at every range change); a ``pg.GridItem`` draws the same lines cheaply."""
        import pyqtgraph as pg

        view = self.w.map_view
        view.plot.showGrid(x=False, y=False)
        self.app.processEvents()
        none = self.frames(pan, frames)
        grid = pg.GridItem(textPen=None)
        grid.setPen(pg.mkPen(0, 0, 0, 38))
        view.plot.addItem(grid)
        self.app.processEvents()
        item = self.frames(pan, frames)
        view.plot.removeItem(grid)
        view.plot.showGrid(x=True, y=True, alpha=0.15)
        self.app.processEvents()
        self.report(f"  for comparison, pan frames without the axes' grid: median {np.median(none):.1f} ms, max "
                    f"{none.max():.1f} ms; with the grid drawn by a pg.GridItem instead: median "
                    f"{np.median(item):.1f} ms, max {item.max():.1f} ms")

    def map_benchmarks(self, n: int, frames: int, hovers: int) -> None:
        from manifold_studio.data import Dataset
        from manifold_studio.session.records import DONE, Run

        w, view = self.w, self.w.map_view
        X, y = blobs(n, 2, seed=0, scale=8.0)
        name = w.session.add_dataset(Dataset(f"map{n}", X, y))
        run = Run(10_000, "pca", {}, name, kind="embedding", algorithm_name="given points", status=DONE,
                  embedding=X)
        t = time.perf_counter()
        w.session.add_run(run, make_current=True)
        shown = ms(time.perf_counter() - t)
        self.size_plot()
        self.settle(0.5)
        size = view.plot.size()
        self.report(f"map: {view.point_count():,} points drawn ({'fast path' if view.uses_fast_path else 'scatter'}), "
                    f"plot widget {size.width()}×{size.height()}, showing the run took {shown:.0f} ms")
        assert view.point_count() == n, view.point_count()
        t = time.perf_counter()
        image = self.render()
        first = ms(time.perf_counter() - t)
        self.report(f"  first full paint: {first:.1f} ms ({image.width()}×{image.height()})")

        vb = view.plot_item.getViewBox()

        def pan(i):
            (x0, x1), _ = vb.viewRange()
            vb.translateBy(x=(0.05 if i % 2 == 0 else -0.05) * (x1 - x0))

        def zoom(i):
            f = 0.9 if i % 2 == 0 else 1 / 0.9
            vb.scaleBy((f, f))

        for label, step in (("pan", pan), ("zoom", zoom)):
            times = self.frames(step, frames)
            self.add(f"{label}: redraw per frame, {n:,} points (max over {frames})", float(times.max()),
                     TARGETS_MS["frame"], f"median {np.median(times):.1f} ms")
        for label, step in (("pan", pan), ("zoom", zoom)):
            times = self.frames(step, frames, on_screen=True)
            self.add(f"{label}: window repaint per frame (max over {frames})", float(times.max()),
                     TARGETS_MS["frame"], f"median {np.median(times):.1f} ms")
        self.grid_comparison(pan, frames)
        view.plot_item.autoRange()
        self.settle(0.2)

        # hover: the spatial index is built in the background for large maps; wait for it
        t = time.perf_counter()
        if hasattr(view, "spatial_index"):
            view.spatial_index(wait=True)
        built = ms(time.perf_counter() - t)
        rng = np.random.default_rng(1)
        (x0, x1), (y0, y1) = vb.viewRange()
        times, hits = [], 0
        for _ in range(hovers):
            x, yv = rng.uniform(x0, x1), rng.uniform(y0, y1)
            t = time.perf_counter()
            hits += view.hover_at(x, yv) >= 0
            times.append(ms(time.perf_counter() - t))
        times = np.asarray(times)
        self.add(f"hover at a random position (max over {hovers})", float(times.max()), TARGETS_MS["hover"],
                 f"median {np.median(times):.2f} ms, {hits} on a point; index ready after {built:.0f} ms")

        # selection of 100,000 rows (the data set's selection) and its highlight on the map
        k = min(100_000, n // 2)
        rows = np.sort(rng.choice(n, k, replace=False))
        t = time.perf_counter()
        w.selection.select(name, rows)
        self.app.processEvents()
        sel = ms(time.perf_counter() - t)
        assert w.selection.count(name) == k
        t = time.perf_counter()
        self.render()
        frame = ms(time.perf_counter() - t)
        self.add(f"select {k:,} rows + highlight refresh", sel, TARGETS_MS["select"], f"next frame {frame:.1f} ms")
        overlay = getattr(w, "map_selection", None)
        if overlay is not None:
            # a square and a circle around the middle of the data, sized to hold about k points
            cx, cy = np.median(X, axis=0)
            half = float(np.partition(np.max(np.abs(X - (cx, cy)), axis=1), k - 1)[k - 1])
            t = time.perf_counter()
            hit = overlay.select_rect(cx - half, cy - half, cx + half, cy + half)
            self.app.processEvents()
            rect = ms(time.perf_counter() - t)
            self.add(f"rectangle selection (~{k:,} points) + highlight", rect, TARGETS_MS["select"],
                     f"{len(hit):,} rows, {w.selection.count(name):,} selected")
            angles = np.linspace(0, 2 * np.pi, 60, endpoint=False)
            radius = float(np.partition(np.hypot(X[:, 0] - cx, X[:, 1] - cy), k - 1)[k - 1])
            polygon = np.column_stack([cx + radius * np.cos(angles), cy + radius * np.sin(angles)])
            t = time.perf_counter()
            hit = overlay.select_polygon(polygon)
            self.app.processEvents()
            lasso = ms(time.perf_counter() - t)
            self.add(f"lasso selection (60 vertices, ~{k:,} points) + highlight", lasso, TARGETS_MS["select"],
                     f"{len(hit):,} rows")
        else:
            self.report("  (no selection overlay on the map: rectangle / lasso not measured)")
        w.selection.clear(name)
        self.app.processEvents()

        # colour change: to another mode and back, each with the next frame
        combo = view.color_combo
        start = combo.currentIndex()
        others = [i for i in range(combo.count()) if i != start]
        times, names = [], []
        for i in (others[-1], start) if others else ():
            t = time.perf_counter()
            combo.setCurrentIndex(i)
            self.app.processEvents()
            self.render()
            times.append(ms(time.perf_counter() - t))
            names.append(combo.itemText(i))
        if times:
            self.add("colour change + next frame (max of 2)", max(times), TARGETS_MS["color"],
                     " / ".join(f"{n_}: {v:.0f} ms" for n_, v in zip(names, times)))
        w.session.remove_run(run.id)
        w.session.remove_dataset(name)
        self.app.processEvents()
        gc.collect()

    # -- fits -------------------------------------------------------------------------------
    def fit_benchmarks(self, n: int, cancel_after: float, only=None) -> None:
        from manifold_studio.data import Dataset
        from stall_meter import measure_fit, spin_until
        from manifold_studio.session.model import Session

        host = self.w.host
        algorithms = sorted(a for a in host.algorithms if not only or a in only)
        warm = Session(host)
        Xw, yw = blobs(200, 10, seed=1)
        warm.add_dataset(Dataset("warm", np.abs(Xw), yw))
        for algo in algorithms:
            params = dict(FIT_PARAMS.get(algo, {}))
            for key in ("max_iter", "max_epochs"):
                if key in params:
                    params[key] = 2
            try:
                warm.run(algo, **params)
            except Exception:  # noqa: BLE001 - the measured fit reports it
                pass
        del warm
        X, y = blobs(n, 10, seed=2)
        name = self.w.session.add_dataset(Dataset(f"blobs{n}", np.abs(X), y))
        self.size_plot(1000, 700)
        for dock in ("data", "algorithm", "runs"):
            if dock in self.w.docks:
                self.w.docks[dock].show()
        self.settle(0.5)
        self.report(f"fits on {n:,} points × 10 (10 blobs, labelled); each cancelled after {cancel_after:g} s")
        slow = []
        for algo in algorithms:
            params = FIT_PARAMS.get(algo, {})
            # each fit starts from the map of the data set's PCA, as after loading it
            self.w.run_algorithm("pca", {})
            spin_until(lambda: not self.w.busy, 30)
            self.w.algorithm_panel.select_algorithm(algo)   # picked in the panel, as before pressing Run
            self.settle(0.3)
            m = min(n, FIT_ROWS.get(algo, n))
            extra = {"rows": np.arange(m)} if m < n else {}
            try:
                r = measure_fit(self.w, algo, params, timeout_s=cancel_after + 60, cancel_after_s=cancel_after,
                                trace=self.trace, **extra)
            except Exception as exc:  # noqa: BLE001
                self.report(f"  {algo}: could not run ({exc})")
                continue
            run = self.w.session.current_run if r.status == "done" else None
            state = r.status + (" (cancelled)" if r.cancelled else "")
            if r.status == "failed":
                last = list(self.w.session.runs.values())[-1]
                state += f": {last.error[:90]}"
            detail = (f"{state}, {r.seconds:.1f} s; worst during fit {r.fit_worst or '-'}; "
                      f"at completion {r.completion_ms:.0f} ms [{r.completion_worst}]")
            self.add(f"stall during {algo} fit" + (f" ({m:,} rows)" if m < n else ""), r.fit_ms,
                     TARGETS_MS["stall"], detail)
            if r.fit_ms >= TARGETS_MS["stall"] and r.trace:
                # where the main thread was when stalled, and what held the GIL meanwhile
                lines = r.trace.splitlines()
                picked = [ln for ln in lines if "main:" in ln][:1] + [ln for ln in lines if "GIL held" in ln][:2]
                for line in picked:
                    self.report(f"    {line[:260]}")
            if r.fit_ms > self.isolate_above_ms:
                slow.append((algo, params, extra))
            self.forget_runs()
            del run
        # the Run panel's "run in a separate process": the fit holds no GIL of the window's
        for algo, params, extra in slow:
            self.w.algorithm_panel.select_algorithm(algo)
            self.w.run_controls.isolate_box.setChecked(True)
            self.w.run_algorithm("pca", {})
            spin_until(lambda: not self.w.busy, 30)
            self.settle(0.3)
            r = measure_fit(self.w, algo, FIT_PARAMS.get(algo, {}), timeout_s=cancel_after + 60,
                            cancel_after_s=cancel_after, **extra)
            self.w.run_controls.isolate_box.setChecked(False)
            state = r.status + (" (cancelled)" if r.cancelled else "")
            self.add(f"stall during {algo} fit in a separate process", r.fit_ms, TARGETS_MS["stall"],
                     f"{state}, {r.seconds:.1f} s; worst during fit {r.fit_worst or '-'}; at completion "
                     f"{r.completion_ms:.0f} ms")
            self.forget_runs()
        self.w.session.remove_dataset(name)

    def forget_runs(self) -> None:
        for rid in [rid for rid, rr in self.w.session.runs.items() if rr.finished]:
            self.w.session.remove_run(rid)
        self.app.processEvents()
        gc.collect()


def main(argv=None):
    faulthandler.enable()  # a crash in Qt or a plugin's compiled code prints where it happened
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="200,000-point map, fits on 3,000 points")
    parser.add_argument("--threads", default=None, help="BLAS/OpenMP threads (default: the libraries' own choice)")
    parser.add_argument("--cancel-after", type=float, default=20.0, help="cancel a fit after this many seconds")
    parser.add_argument("--only", default="", help="comma-separated algorithms to fit (default: all)")
    parser.add_argument("--no-map", action="store_true", help="skip the map benchmarks")
    parser.add_argument("--no-fits", action="store_true", help="skip the fits")
    parser.add_argument("--trace", action="store_true",
                        help="sample the stacks of stalled threads to name what held the GIL (diagnosis only: "
                             "on Python 3.11 sampling another thread's frames crashed the process in 3 of 6 runs)")
    parser.add_argument("--isolate-above", type=float, default=ISOLATE_ABOVE_MS,
                        help="measure fits that stalled longer than this (ms) again in a separate process")
    parser.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "bench_ui.txt"))
    args = parser.parse_args(argv)

    from PySide6 import __version__ as pyside_version
    from PySide6.QtWidgets import QApplication
    import pyqtgraph as pg

    app = QApplication.instance() or QApplication([])
    from manifold_studio.gui.gc_pauses import install_gc_pauses
    from manifold_studio.gui.main_window import MainWindow
    from manifold_studio.plugins.host import PluginHost

    lines: list[str] = []

    def report(text=""):
        print(text, flush=True)
        lines.append(text)

    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                                cwd=Path(__file__).resolve().parent).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True,
                               text=True, cwd=Path(__file__).resolve().parent).stdout.strip()
    except OSError:
        commit, dirty = "?", ""
    report(f"Manifold Studio UI benchmark ({'quick' if args.quick else 'full'} sizes), {time.strftime('%Y-%m-%d %H:%M')}, "
           f"commit {commit}{' + uncommitted changes in the tree' if dirty else ''}")
    report(f"python {platform.python_version()}, numpy {np.__version__}, PySide6 {pyside_version}, pyqtgraph "
           f"{pg.__version__}, Qt platform {app.platformName()}, {os.cpu_count()} CPU(s), threads "
           f"{args.threads or 'default'}, load average {', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    host = PluginHost().discover()
    host.failures.clear()
    window = MainWindow(host=host, initial_algorithm=None, dialogs=False)
    install_gc_pauses(window)  # as the application does (gui/app.py)
    window.show()
    bench = Bench(app, window, report)
    bench.isolate_above_ms = args.isolate_above
    bench.trace = args.trace
    bench.settle(0.5)
    try:
        if not args.no_map:
            n_map = 200_000 if args.quick else 1_000_000
            bench.map_benchmarks(n_map, frames=6 if args.quick else 10, hovers=100 if args.quick else 300)
        if not args.no_fits:
            n_fit = 3_000 if args.quick else 20_000
            only = {a.strip() for a in args.only.split(",") if a.strip()}
            bench.fit_benchmarks(n_fit, args.cancel_after, only)
    finally:
        window.shutdown()
    report()
    width = max(len(r[0]) for r in bench.rows) if bench.rows else 10
    report(f"{'operation':<{width}}  {'measured':>10}  {'target':>8}  result")
    passed = 0
    for operation, measured, target, _detail in bench.rows:
        ok = measured < target
        passed += ok
        report(f"{operation:<{width}}  {measured:>7.1f} ms  {'< ' + format(target, 'g'):>5} ms  {'pass' if ok else 'FAIL'}")
    report(f"{passed} of {len(bench.rows)} within target; load average at the end "
           f"{', '.join(f'{v:.2f}' for v in os.getloadavg())}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("\n".join(lines) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
