"""CSV loading benchmark: the table reader against ``pandas.read_csv`` (and the hand-written reader it replaced).

    nice -n 19 .venv/bin/python benchmarks/bench_csv.py            # 1,000,000 x 20 numbers
    .venv/bin/python benchmarks/bench_csv.py --rows 100000          # smaller
    .venv/bin/python benchmarks/bench_csv.py --old                  # also the old reader (minutes)

Against pandas: ``Loader.load`` (sniffing, line numbers, ragged-row checks, the Dataset and its load
report) and a bare ``pandas.read_csv(path)`` alternate ``--repeat`` times in one fresh process; the
best wall-clock and CPU (process) times of each and their ratios are reported.

The old reader is the CSV loader of commit b118a58 (plugins/manifold_studio_builtins/csv_loader.py and
csv_text.py), taken from git into a temporary folder and imported under other names. Both readers
load the same file through ``Loader.load`` (header sniffing, missing values, report), each in its
own fresh Python process, so that its peak memory is its own: the peak resident set size (RSS)
of the first load minus the RSS after the imports, and the peak of tracemalloc (the Python and
NumPy allocations) in a last, separate load (tracemalloc slows a run down, so it is not timed).
Each timing is the best of ``--repeat`` runs in that process, as wall-clock time and as the
process's CPU time (both readers are single-threaded; CPU time is what a busy shared machine
distorts least). The ratios are old / new for time and peak / final array (n x d x 8 bytes) for
memory. Results go to benchmarks/results/csv.txt.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OLD_COMMIT = "b118a58"
OLD_FILES = {"old_csv_loader.py": "plugins/manifold_studio_builtins/csv_loader.py",
             "old_csv_text.py": "plugins/manifold_studio_builtins/csv_text.py"}

CHILD = r"""
import json, resource, sys, time, tracemalloc
sys.path.insert(0, {folder!r})
import numpy as np
import pandas  # imported by both, so that its memory is in the baseline of both
from manifold_studio.data import Dataset
which, path, repeat = sys.argv[1], sys.argv[2], int(sys.argv[3])
if which == "duel":
    from manifold_studio_builtins.csv_loader import CsvLoader
    loader, best = CsvLoader(), {{}}
    for _ in range(repeat):
        for name, func in (("ours", lambda: loader.load(path)), ("pandas", lambda: pandas.read_csv(path))):
            t, c = time.perf_counter(), time.process_time()
            out = func()
            wall, cpu = time.perf_counter() - t, time.process_time() - c
            best[name] = [min(a, b) for a, b in zip(best.get(name, [wall, cpu]), [wall, cpu])]
            del out
    print(json.dumps(best))
    sys.exit(0)
if which == "old":
    from old_csv_loader import CsvLoader
else:
    from manifold_studio_builtins.csv_loader import CsvLoader
loader = CsvLoader()
def rss_mb():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
base = rss_mb()
t, c = time.perf_counter(), time.process_time()
ds = loader.load(path)
first, cpu = time.perf_counter() - t, time.process_time() - c
peak = rss_mb()
best = first
del ds
for _ in range(repeat - 1):
    t, c = time.perf_counter(), time.process_time()
    ds = loader.load(path)
    best = min(best, time.perf_counter() - t)
    cpu = min(cpu, time.process_time() - c)
    del ds
tracemalloc.start()
ds = loader.load(path)
traced_peak = tracemalloc.get_traced_memory()[1] / 2**20
tracemalloc.stop()
print(json.dumps({{"time": best, "first": first, "cpu": cpu, "rss_peak_mb": peak - base, "traced_peak_mb": traced_peak,
                  "shape": list(ds.X.shape), "checksum": float(np.nansum(ds.X[:1000])), "report": ds.report[0]}}))
"""


def _old_reader(folder: Path) -> None:
    for name, src in OLD_FILES.items():
        text = subprocess.run(["git", "-C", str(ROOT), "show", f"{OLD_COMMIT}:{src}"], check=True,
                              capture_output=True, text=True).stdout
        text = text.replace("manifold_studio_builtins.csv_text", "old_csv_text")
        (folder / name).write_text(text)


def _write_file(path: Path, rows: int, cols: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    with open(path, "w") as fh:
        fh.write(",".join(f"x{j}" for j in range(cols)) + "\n")
        for start in range(0, rows, 100_000):
            block = rng.normal(size=(min(100_000, rows - start), cols))
            np.savetxt(fh, block, delimiter=",", fmt="%.9g")


def _run(which: str, folder: Path, path: Path, repeat: int) -> dict:
    code = CHILD.format(folder=str(folder))
    out = subprocess.run([sys.executable, "-c", code, which, str(path), str(repeat)], check=True,
                         capture_output=True, text=True, cwd=str(ROOT))
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--cols", type=int, default=20)
    ap.add_argument("--repeat", type=int, default=3, help="runs of the new reader (the old one runs once)")
    ap.add_argument("--old", action="store_true", help="also time the old hand-written reader (minutes)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "csv.txt"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-csv-") as tmp:
        folder = Path(tmp)
        if args.old:
            _old_reader(folder)
        path = folder / "numbers.csv"
        _write_file(path, args.rows, args.cols)
        size_mb = path.stat().st_size / 2**20
        duel = _run("duel", folder, path, args.repeat)
        new = _run("new", folder, path, args.repeat)
        old = _run("old", folder, path, 1) if args.old else None
    final_mb = args.rows * args.cols * 8 / 2**20
    assert new["shape"] == [args.rows, args.cols], new["shape"]
    ours, pd_ = duel["ours"], duel["pandas"]
    versus = [
        f"CSV loading, {args.rows:,} x {args.cols} numbers ({size_mb:.0f} MiB file), Loader.load against "
        f"pandas.read_csv, alternating in one process, best of {args.repeat}",
        f"machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end",
        f"ours (with line numbers, ragged-row checks and the load report): wall {ours[0]:.2f} s, CPU {ours[1]:.2f} s",
        f"pandas.read_csv(path): wall {pd_[0]:.2f} s, CPU {pd_[1]:.2f} s",
        f"ratio ours / pandas: wall {ours[0] / pd_[0]:.2f}, CPU {ours[1] / pd_[1]:.2f}",
        f"new peak memory / final array: RSS {new['rss_peak_mb'] / final_mb:.2f}x, "
        f"tracemalloc {new['traced_peak_mb'] / final_mb:.2f}x",
        f"report: {new['report']}",
    ]
    if old is None:
        text = "\n".join(versus) + "\n"
        print(text)
        Path(args.out).write_text(text)
        return
    assert old["shape"] == [args.rows, args.cols], old["shape"]
    assert abs(new["checksum"] - old["checksum"]) <= 1e-9 * max(1.0, abs(old["checksum"]))
    lines = versus + [
        "", f"Against the old hand-written reader (final array {final_mb:.0f} MiB):",
        f"old reader (hand-written, {OLD_COMMIT}): {old['time']:.2f} s, peak RSS +{old['rss_peak_mb']:.0f} MiB, "
        f"tracemalloc peak {old['traced_peak_mb']:.0f} MiB",
        f"new reader (pandas, manifold_studio.tables): best of {args.repeat} {new['time']:.2f} s "
        f"(first {new['first']:.2f} s), peak RSS +{new['rss_peak_mb']:.0f} MiB, tracemalloc peak "
        f"{new['traced_peak_mb']:.0f} MiB",
        f"CPU time: old {old['cpu']:.2f} s, new {new['cpu']:.2f} s",
        f"speed-up old/new: wall {old['time'] / new['time']:.1f}x (new first run: {old['time'] / new['first']:.1f}x), "
        f"CPU {old['cpu'] / new['cpu']:.1f}x",
        f"new peak memory / final array: RSS {new['rss_peak_mb'] / final_mb:.2f}x, "
        f"tracemalloc {new['traced_peak_mb'] / final_mb:.2f}x",
        f"same values (checksum of the first 1,000 rows): {new['checksum']:.6f}",
        f"new report: {new['report']}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    Path(args.out).write_text(text)


if __name__ == "__main__":
    main()
