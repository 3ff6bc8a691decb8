"""The map instruments at 1,000,000 points (issue 31): the rows of its speed table.

    .venv/bin/python benchmarks/bench_map_instruments.py            # 1,000,000 points
    .venv/bin/python benchmarks/bench_map_instruments.py --n 200000

Data: 10 Gaussian blobs; the map is the first two coordinates, the table 50 numeric columns and
one text column (the blob's name). Each figure is the median of ``--repeat`` runs (wall clock):

- density recompute: the binned KDE of the map on its 256 × 256 grid (``kde_grid``);
- contours: four contour levels traced (``contour_levels`` + ``contour_segments``);
- colour by density: the density at every point;
- neighbour query + highlight: a click's 10 neighbours from the cached index (exact k-d tree on
  10 features; the index build is reported once) and their map positions;
- search over all columns: an expression over numeric columns and a text "contains";
- labels at a new zoom: ``place_labels`` of the map's label candidates at a new scale (groups and
  texts are computed once, in the background, and reported), then with the text items updated;
- one brush update: a cross-filter of 5 charts recounted after a new range on one of them, and
  the map's marks of the passing points rebuilt (Qt offscreen);
- explain: 100,000 selected rows × 50 columns against the 900,000 others (after one small warm-up call:
  the compiled loops load and scipy imports once per process).

With ``--window`` each instrument is also driven in a real window on the same map: the time to
its result and the event loop's longest stall meanwhile. Results go to
benchmarks/results/bench_map_instruments.txt (or --out).
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import numpy as np  # noqa: E402

from manifold_studio.analysis import map_density as md  # noqa: E402
from manifold_studio.analysis import map_labels as ml  # noqa: E402
from manifold_studio.analysis.explain_selection import explain  # noqa: E402
from manifold_studio.analysis.map_neighbours import IndexCache, original_neighbours  # noqa: E402
from manifold_studio.analysis.search_expression import CONTAINS, EXPRESSION, search  # noqa: E402
from manifold_studio.tables.dataset_columns import FEATURE, LABEL, Column  # noqa: E402
from manifold_studio.tables.search import factorize  # noqa: E402

TARGETS_MS = {"density recompute": 300, "contours": 300, "neighbour query + positions": 50,
              "search expression (all rows)": 200, "search text contains": 200, "labels at a new zoom": 200,
              "one brush update of map and charts": 100, "labels at a new zoom (with the text items)": 200,
              "explain 100,000 selected x 50 columns": 1000}


CPU_MS: list = []


def timed(fn, repeat: int):
    """(median wall-clock ms, last result); the median CPU ms of this thread goes to CPU_MS[-1]
    (the machine may be shared: the CPU time says what the work costs)."""
    times, cpu, out = [], [], None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.thread_time()
        out = fn()
        times.append(time.perf_counter() - t0)
        cpu.append(time.thread_time() - c0)
    CPU_MS.append(1000 * float(np.median(cpu)))
    return 1000 * float(np.median(times)), out


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=str(Path(__file__).parent / "results" / "bench_map_instruments.txt"))
    ap.add_argument("--window", action="store_true",
                    help="also measure the instruments in a real window: time to result and the event loop's "
                         "longest stall while each works")
    args = ap.parse_args(argv)
    n = args.n
    rng = np.random.default_rng(0)
    centers = rng.normal(scale=6.0, size=(10, 50))
    y = rng.integers(0, 10, n)
    X = centers[y] + rng.normal(size=(n, 50))
    xy = np.ascontiguousarray(X[:, :2])
    names = np.array([f"blob{k}" for k in range(10)], dtype=object)[y]
    cols = [Column(f"x{j + 1}", np.ascontiguousarray(X[:, j]), FEATURE) for j in range(50)]
    cols.append(Column("name", names, LABEL))
    lines = [f"# map instruments, {n:,} points — {platform.platform()}, {os.cpu_count()} CPUs, "
             f"load average {os.getloadavg()[0]:.1f}"]

    def row(name, value_ms, note="", cpu=True):
        target = TARGETS_MS.get(name)
        mark = "" if target is None else (f"  (limit {target} ms: {'ok' if value_ms < target else 'OVER'})")
        cpu_text = f" (CPU {CPU_MS[-1]:7.1f} ms)" if cpu and CPU_MS else " " * 19
        lines.append(f"{name:45s} {value_ms:9.1f} ms{cpu_text}{mark}{'  ' + note if note else ''}")
        print(lines[-1], flush=True)

    t, grid = timed(lambda: md.kde_grid(xy), args.repeat)
    row("density recompute", t)
    t, _ = timed(lambda: [md.contour_segments(grid, lv) for lv in md.contour_levels(grid)], args.repeat)
    row("contours", t)
    t, _ = timed(lambda: grid.at(xy), args.repeat)
    row("colour by local density (at every point)", t)

    cache = IndexCache()
    X10 = np.ascontiguousarray(X[:, :10])
    t0 = time.perf_counter()
    index = cache.get("bench", X10)
    row("neighbour index build (once per data set)", 1000 * (time.perf_counter() - t0), f"({index.method}, 10 features)", cpu=False)
    where = np.arange(n)

    def query():
        nb = original_neighbours(cache.get("bench", X10), int(rng.integers(n)), 10)
        return xy[where[nb.rows]]
    t, _ = timed(query, max(args.repeat, 10))
    row("neighbour query + positions", t)

    factors = {}

    def factors_of(col):
        if col.name not in factors:
            factors[col.name] = factorize(col.values)
        return factors[col.name]
    t0 = time.perf_counter()
    factors_of(cols[-1])
    row("text column factorised (once per data set)", 1000 * (time.perf_counter() - t0), cpu=False)
    t, m = timed(lambda: search("x3 > 1 and x7 < 0 or x12 * 2 > 5", cols, n, EXPRESSION), args.repeat)
    row("search expression (all rows)", t, f"{m.count:,} matches")
    t, m = timed(lambda: search("lob3", cols, n, CONTAINS, factors_of=factors_of), args.repeat)
    row("search text contains", t, f"{m.count:,} matches")

    t0 = time.perf_counter()
    codes = ml.density_groups(xy, grid=grid)
    groups = np.unique(codes[codes >= 0])
    cands = ml.candidates(xy, codes, ml.majority_texts(codes, groups, names))
    fine = ml.density_groups(xy, mass=0.5, grid=grid)
    fg = np.unique(fine[fine >= 0])
    cands += ml.candidates(xy, fine, ml.majority_texts(fine, fg, names), level=1,
                           parents=ml.parent_of(fine, codes, fg))
    row("label groups + texts (background, once)", 1000 * (time.perf_counter() - t0), f"{len(cands)} candidates", cpu=False)
    scales = iter(np.geomspace(5, 500, 100))
    t, kept = timed(lambda: ml.place_labels(cands, (next(scales),) * 2), args.repeat)
    row("labels at a new zoom", t, f"{len(kept)} shown")

    # -- Qt items (offscreen): what the GUI thread does after the numbers ----------------------
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    import pyqtgraph as pg
    from PySide6.QtWidgets import QApplication

    from manifold_studio.analysis.cross_filter import CrossFilter
    from manifold_studio.gui.views.selection_items import MarkedPointsItem

    app = QApplication.instance() or QApplication([])
    plot = pg.PlotWidget()
    plot.resize(1200, 900)
    marks = MarkedPointsItem((20, 60, 160))
    plot.addItem(marks)
    cf = CrossFilter(n)
    for j in range(4):
        cf.add(f"x{j + 1}", cols[j].values)
    cf.add("name", names)
    lows = iter(np.linspace(-15, -5, 100))

    def brush():
        lo = next(lows)
        cf.set_range("x1", lo, lo + 15)
        _tot, _fil, passing = cf.counts()
        marks.set_points(xy[passing])
        return int(passing.sum())
    t, n_pass = timed(brush, args.repeat)
    row("one brush update of map and charts", t, f"5 charts, {n_pass:,} rows pass")
    texts = [pg.TextItem("") for _ in range(len(cands))]
    for item in texts:
        plot.addItem(item)

    def relabel():
        kept = ml.place_labels(cands, (next(scales),) * 2)
        for item, i in zip(texts, kept):
            item.setText(cands[i].text)
            item.setPos(cands[i].x, cands[i].y)
        return kept
    t, kept = timed(relabel, args.repeat)
    row("labels at a new zoom (with the text items)", t, f"{len(kept)} shown")
    app.processEvents()

    sel = np.zeros(n, dtype=bool)
    sel[rng.choice(n, 100_000, replace=False)] = True
    # the one-off start (numba's compiled loops loaded, scipy imported) is not part of an explain
    explain([Column(c.name, c.values[:1000], c.kind) for c in (cols[0], cols[-1])], np.arange(100))
    t, res = timed(lambda: explain(cols[:50], sel), args.repeat)
    row("explain 100,000 selected x 50 columns", t, f"top: {res.rows[0].feature} d={res.rows[0].effect:.2f}")
    if args.window:
        window_rows(app, n, X[:, :10], y, lines, X)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


def window_rows(app, n, X, y, lines, X_wide=None) -> None:
    """Each instrument in a real main window on an ``n``-point map: seconds to its result and the
    longest stall of the event loop meanwhile (a 10 ms timer, :mod:`benchmarks.stall_meter`)."""
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from stall_meter import StallMeter, spin_until

    from manifold_studio.data import Dataset
    from manifold_studio.gui.gc_pauses import install_gc_pauses
    from manifold_studio.gui.main_window import MainWindow
    from manifold_studio.session.records import DONE, Run

    w = MainWindow(initial_sample=None, initial_algorithm=None, dialogs=False)
    install_gc_pauses(w)  # as the application does (gui/app.py)
    w.resize(1400, 900)
    w.show()
    name = w.session.add_dataset(Dataset(f"map{n}", X, y))
    run = w.session.add_run(Run(10_000, "pca", {}, name, kind="embedding", algorithm_name="given points", status=DONE,
                                embedding=np.ascontiguousarray(X[:, :2])), make_current=True)
    mi, view = w.map_instruments, w.map_view

    def measure(label, start, done, timeout=120.0, spin_first=True):
        if spin_first:
            spin_until(lambda: False, 0.5)  # the previous instrument's repaints and deferred work end first
        others = {job.title for job in w.jobs.active}   # other work competing with the instrument's
        meter = StallMeter().start()
        t0 = time.perf_counter()
        start()
        ok = spin_until(done, timeout)
        took = time.perf_counter() - t0
        meter.stop()
        others = sorted(others | {job.title for job in w.jobs.active})
        lines.append(f"[window] {label:38s} {1000 * took:9.0f} ms to the result{'' if ok else ' (TIMED OUT)'}; "
                     f"longest event-loop stall {meter.max_stall_ms():.0f} ms, p99 {meter.percentile_stall_ms(99):.0f} ms "
                     f"(worst, with the main thread's CPU in it: {meter.worst(2)})"
                     + (f"; running meanwhile: {', '.join(others)}" if others else ""))
        print(lines[-1], flush=True)

    # the run summary's map faithfulness starts when the run is added (gui/run_faithfulness.py): the
    # shared neighbour index of the 1,000,000 rows, then 20,000 sampled rows' neighbours on the map
    from manifold_studio.gui.views.neighbour_layer import TRUST_KEY
    measure("run summary: map faithfulness", lambda: None, lambda: TRUST_KEY in run.summary)
    lines[-1] += f" ({run.summary.get(TRUST_KEY)} on {run.summary.get('local_trustworthiness_sample_rows', n):,} rows)"
    measure("density layer on", lambda: mi.density.box.setChecked(True), lambda: mi.density.result is not None)
    measure("colour by local density", lambda: view.color_combo.setCurrentIndex(view.color_combo.findData("density")),
            lambda: view._color_name == "local density (map)")
    measure("search x3 > 1 and x7 < 0", lambda: (mi.search.edit.setText("x3 > 1 and x7 < 0"), mi.search.run()),
            lambda: mi.search.match is not None)
    mi.neighbours.box.setChecked(True)
    measure("neighbours (index of the summary's job + query)", lambda: mi.neighbours.show_row(7), lambda: mi.neighbours.result is not None)
    mi.neighbours.result = None
    measure("neighbours (cached index)", lambda: mi.neighbours.show_row(11), lambda: mi.neighbours.result is not None)
    measure("labels on", lambda: mi.labels.box.setChecked(True), lambda: bool(mi.labels.shown))
    w.selection.select(name, np.arange(0, n, 10))
    measure("explain 10 % selected", mi.explain.run, lambda: mi.explain.result is not None)
    measure("cross-filter chart", lambda: mi.cross_filter.add_chart("x1"),
            lambda: "x1" in mi.cross_filter.plots and mi.cross_filter.plots["x1"]["all"] is not None)
    measure("cross-filter brush", lambda: mi.cross_filter.plots["x1"]["region"].setRegion((-5.0, 5.0)),
            lambda: mi.cross_filter.passing is not None)
    if X_wide is not None:   # the speed table's explain: 100,000 selected rows x 50 columns
        wide = w.session.add_dataset(Dataset(f"map{n}x{X_wide.shape[1]}", X_wide, y))
        w.session.add_run(Run(10_001, "pca", {}, wide, kind="embedding", algorithm_name="given points", status=DONE,
                              embedding=np.ascontiguousarray(X_wide[:, :2])), make_current=True)
        spin_until(lambda: view.dataset is not None and view.dataset.name == wide, 30.0)
        spin_until(lambda: not w.jobs.active, 120.0)   # the other views' jobs for the new data set
        w.selection.select(wide, np.arange(0, n, 10))
        mi.explain.result = None
        measure(f"explain 10 % selected x {X_wide.shape[1]} columns", mi.explain.run,
                lambda: mi.explain.result is not None and mi.explain.result.n_a == len(range(0, n, 10)))
        # again once the wide run's own jobs (its faithfulness: an index of the 1,000,000 x 50 rows) have ended
        spin_until(lambda: not w.jobs.active, 600.0)
        mi.explain.result = None
        measure(f"explain 10 % selected x {X_wide.shape[1]} (no other job)", mi.explain.run,
                lambda: mi.explain.result is not None and mi.explain.result.n_a == len(range(0, n, 10)))
    spin_until(lambda: not w.jobs.active, 120.0)   # the wide run's summary job (its own index) ends first
    w.shutdown()
    w.close()


if __name__ == "__main__":
    main()
