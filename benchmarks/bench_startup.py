"""Start-up benchmark: ``manifold-studio list`` and the window to its first map, in fresh processes,
this tree against a baseline commit.

    nice -n 5 .venv/bin/python benchmarks/bench_startup.py              # against 09e23f7, 7 runs each
    .venv/bin/python benchmarks/bench_startup.py --repeat 3 --no-window  # list only

Each figure is wall-clock time from ``Popen`` of a fresh Python process (and its CPU time, user +
system, which a busy shared machine distorts least), with compiled bytecode as an installation
has it (a first, untimed run of each side compiles it into a temporary ``PYTHONPYCACHEPREFIX``):

- ``list``: ``python -m manifold_studio list`` to its exit (all plugins loaded, the listing printed);
- window shown / first map: ``python -m manifold_studio --self-test --window-probe`` (the self-test's
  window step, offscreen Qt): the main window opened with the Iris sample and PCA, to its
  ``window-shown`` and ``first-result`` lines (the first map drawn).

The baseline is the commit's ``manifold_studio`` and ``plugins`` trees taken from git (``git
archive``) into a temporary folder and put first on ``PYTHONPATH`` (same interpreter, same
installed packages and entry points). Baseline and this tree alternate run by run, so that a
busy shared machine loads both alike; the median and the best of ``--repeat`` runs are reported,
with the number of modules imported by ``import manifold_studio.cli.main`` (a count, not a time).
Results go to benchmarks/results/startup.txt.
"""
from __future__ import annotations

import argparse
import io
import os
import platform
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from timing import write_report  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "09e23f7"
HEAVY = ("scipy.stats", "pandas", "numba", "PySide6", "pyqtgraph", "sklearn", "pyarrow")
COUNT = ("import sys, json; import manifold_studio.cli.main; "
         "print(json.dumps([len(sys.modules)] + [m for m in %r if m in sys.modules]))" % (HEAVY,))


def export_tree(commit: str, folder: Path) -> None:
    """The commit's manifold_studio/ and plugins/ into ``folder`` (no git worktree)."""
    data = subprocess.run(["git", "-C", str(ROOT), "archive", "--format=tar", commit, "manifold_studio",
                           "plugins"], check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(folder, filter="data")


def environment(source: Path | None, pycache: Path) -> dict:
    """The children's environment: compiled bytecode kept (in ``pycache``, outside both trees), as
    an installed application has it (PYTHONDONTWRITEBYTECODE would compile every module at
    every start), and the baseline's tree first on the path."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPYCACHEPREFIX"] = str(pycache)
    if source is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(source), str(source / "plugins")])
    return env


def child_cpu() -> float:
    """CPU time (user + system) of every finished child process so far."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def time_list(env: dict, cwd: str) -> tuple[float, float]:
    """(wall-clock, CPU time) of ``manifold-studio list``."""
    cpu, start = child_cpu(), time.perf_counter()
    subprocess.run([sys.executable, "-m", "manifold_studio", "list"], env=env, cwd=cwd, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start, child_cpu() - cpu


def time_window(env: dict, cwd: str, timeout: float = 120.0) -> tuple[float, float, float]:
    """(window shown, first map drawn), seconds from Popen, and the CPU time of the whole process
    (it idles 0.3 s after the first map, then closes)."""
    cpu, start = child_cpu(), time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "manifold_studio", "--self-test", "--window-probe"],
                            env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            stdin=subprocess.DEVNULL, text=True)
    shown = first = None
    for line in proc.stdout:
        if line.startswith("window-shown") and shown is None:
            shown = time.perf_counter() - start
        elif line.startswith("first-result") and first is None:
            first = time.perf_counter() - start
    proc.wait(timeout=timeout)
    if shown is None or first is None:
        raise RuntimeError(f"the window probe exited with status {proc.returncode} without its marks")
    return shown, first, child_cpu() - cpu


def import_count(env: dict, cwd: str) -> tuple[int, list[str]]:
    import json

    out = subprocess.run([sys.executable, "-c", COUNT], env=env, cwd=cwd, check=True, capture_output=True,
                         text=True).stdout
    values = json.loads(out.strip().splitlines()[-1])
    return values[0], values[1:]


def summary(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f} s, best {min(values):.2f} s"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE, help=f"the commit to compare with (default {BASELINE})")
    ap.add_argument("--repeat", type=int, default=7, help="fresh processes per figure")
    ap.add_argument("--no-window", action="store_true", help="only 'list'")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "startup.txt"))
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-startup-") as tmp:
        base_src = Path(tmp) / "baseline"
        export_tree(args.baseline, base_src)
        cwd = str(Path(tmp))  # neither tree is the current folder
        pycache = Path(tmp) / "pycache"
        sides = {"baseline": environment(base_src, pycache), "this tree": environment(None, pycache)}
        counts = {name: import_count(env, cwd) for name, env in sides.items()}
        times = {name: {"list": [], "list_cpu": [], "shown": [], "first": [], "window_cpu": []} for name in sides}
        for name, env in sides.items():  # compile the bytecode and warm the OS file cache, untimed
            time_list(env, cwd)
            if not args.no_window:
                time_window(env, cwd)
        for _ in range(args.repeat):
            for name, env in sides.items():
                wall, cpu = time_list(env, cwd)
                times[name]["list"].append(wall)
                times[name]["list_cpu"].append(cpu)
                if not args.no_window:
                    shown, first, cpu = time_window(env, cwd)
                    times[name]["shown"].append(shown)
                    times[name]["first"].append(first)
                    times[name]["window_cpu"].append(cpu)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    lines = [
        f"Start-up, fresh processes, {args.repeat} runs each, baseline {args.baseline} and this tree "
        f"({commit}, uncommitted changes included) alternating",
        f"machine: {platform.platform()}, Python {platform.python_version()}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.1f} at the end",
    ]
    for name in sides:
        n, heavy = counts[name]
        lines.append(f"{name}: import manifold_studio.cli.main loads {n} modules"
                     + (f", among them {', '.join(heavy)}" if heavy else f", none of {', '.join(HEAVY)}"))
        lines.append(f"  manifold-studio list: {summary(times[name]['list'])}; CPU {summary(times[name]['list_cpu'])}")
        if not args.no_window:
            lines.append(f"  window shown: {summary(times[name]['shown'])}")
            lines.append(f"  first map drawn (Iris, PCA): {summary(times[name]['first'])}")
            lines.append(f"  window process CPU time: {summary(times[name]['window_cpu'])}")
    write_report(lines, args.out)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
