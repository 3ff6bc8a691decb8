"""``manifold-studio --self-test``: the one command that proves an installation works.

It runs the same steps from a pip install and inside the installed (frozen) application::

    plugins   every plugin's entry point loads (a plugin that fails to import is a failure; a
              third-party one quarantined by its import probe is named, not a failure)
    sample    the Iris sample loads
    compiled  numba compiles a small loop (the supervised methods' inner loops need it)
    fit       every discovered algorithm fits a small data set (the conformance kit's helix,
              120 points, three labels) with its default parameters and extends to 40 new
              points (one line per algorithm; classifiers get the labels)
    project   a session with the Iris data, a run and an extension is saved to a temporary
              folder and reopened; the reopened model extends exactly as the original did
    plugin    the plugin template's wheel is installed into a temporary plugin folder through
              the plugin manager, discovered, fitted and extended (skipped where the template
              is not installed, e.g. a pip install from a wheel)
    window    the main window opens offscreen in a fresh process of the same program, shows the
              Iris map, and closes; the line gives the start-up time (process start to window shown)

One line per step on standard output, ``ok``, ``skip`` or ``FAIL``; the first failure prints its details
and the command exits with status 1 (0 when everything passed). Qt is imported only by the
window step, in its own process. ``--no-window`` skips that step (a machine without Qt's
system libraries), ``--window-only`` runs only it.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import warnings
from pathlib import Path
from typing import Callable

import numpy as np

import manifold_studio as ms
from manifold_studio import load_data
from manifold_studio.algorithms.conformance import default_data
from manifold_studio.algorithms.jit import jit
from manifold_studio.algorithms.labels import same_labels
from manifold_studio.cli.window_probe import PROBE_ARGS, RESULT_MARK, SHOWN_MARK, window_probe
from manifold_studio.errors import DataError
from manifold_studio.project.project_file import load_project, save_project
from manifold_studio.plugins import selfcheck as plugin_selfcheck
from manifold_studio.plugins.host import get_host
from manifold_studio.session.model import Session

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: the line the window probe prints once the main window is shown (read by the parent)
WINDOW_TIMEOUT_S = 180.0


class StepFailed(Exception):
    """A self-test step failed; ``detail`` is printed below the FAIL line."""

    def __init__(self, message: str, detail: str = ""):
        super().__init__(message)
        self.detail = detail


class StepSkipped(Exception):
    """A step that does not apply to this installation (reported as 'skip', not a failure)."""


class Report:
    """Prints one aligned line per step; remembers the first failure."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stdout
        self.failed = False

    def line(self, name: str, status: str, text: str = "") -> None:
        print(f"{name:<32} {status:<4} {text}".rstrip(), file=self.stream, flush=True)

    def step(self, name: str, func: Callable[[], str]) -> bool:
        start = time.perf_counter()
        try:
            text = func() or ""
        except StepSkipped as exc:
            self.line(name, "skip", str(exc))
            return True
        except StepFailed as exc:
            self.line(name, "FAIL", str(exc))
            if exc.detail:
                print(_indent(exc.detail), file=self.stream, flush=True)
            self.failed = True
            return False
        except BaseException as exc:  # noqa: BLE001 - every error is a failed step
            if isinstance(exc, KeyboardInterrupt):
                raise
            self.line(name, "FAIL", f"{type(exc).__name__}: {one_line(exc)}")
            print(_indent(traceback.format_exc()), file=self.stream, flush=True)
            self.failed = True
            return False
        elapsed = time.perf_counter() - start
        self.line(name, "ok", f"{text} ({elapsed:.2f} s)" if text else f"({elapsed:.2f} s)")
        return True


def one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.rstrip().splitlines())


# -- steps ------------------------------------------------------------------------------------

def step_plugins(host) -> str:
    # a quarantined third-party plugin (its import probe crashed, hung or raised) was kept out:
    # the installation works, and the line names it with the reason
    failures = [f for f in host.failures if not f.quarantined]
    if failures:
        first = failures[0]
        more = f" (and {len(failures) - 1} more)" if len(failures) > 1 else ""
        detail = "\n".join([str(f) for f in failures[1:]] + [first.detail or ""])
        raise StepFailed(f"{first}{more}", detail)
    if not host.algorithms:
        raise StepFailed("no algorithm was discovered: the plugins' entry points are missing "
                         "(in an installed application: its distribution metadata was not bundled)")
    if not host.loaders or not host.samples:
        raise StepFailed(f"missing built-in loaders or samples (loaders: {sorted(host.loaders)}, "
                         f"samples: {sorted(host.samples)})")
    kinds = {}
    for cls in host.algorithms.values():
        kinds[cls.kind] = kinds.get(cls.kind, 0) + 1
    by_kind = ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
    disabled = f", {len(host.disabled)} disabled (not tested)" if host.disabled else ""
    kept_out = [f for f in host.failures if f.quarantined]
    quarantined = (f", {len(kept_out)} quarantined (not loaded): " + "; ".join(str(f) for f in kept_out)
                   if kept_out else "")
    return (f"{len(host.plugins)} plugins: {len(host.algorithms)} algorithms ({by_kind}), "
            f"{len(host.loaders)} loaders, {len(host.samples)} samples{disabled}{quarantined}")


def load_sample(host):
    ds = load_data("sample:iris", host=host)
    if ds.X.shape != (150, 4) or ds.labels is None or len(np.unique(ds.labels)) != 3:
        raise StepFailed(f"the Iris sample is wrong: X {ds.X.shape}, labels "
                         f"{None if ds.labels is None else np.unique(ds.labels)}")
    return ds


def step_table_file(host) -> str:
    """Read a CSV file with a text label column through the loader a user's file takes (the
    table readers: pandas in the installed application too)."""
    with tempfile.TemporaryDirectory(prefix="ms-self-test-") as tmp:
        path = Path(tmp) / "table.csv"
        rows = ["a,b,c,kind"] + [f"{i},{i * 0.5},{(i * 7) % 5},{'x' if i % 2 else 'y'}" for i in range(20)]
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        ds = load_data(str(path), host=host, label_column="kind")
        if ds.X.shape != (20, 3) or ds.labels is None or sorted(set(map(str, ds.labels))) != ["x", "y"]:
            raise StepFailed(f"the CSV file was read wrongly: X {ds.X.shape}, labels "
                             f"{None if ds.labels is None else sorted(set(map(str, ds.labels)))}")
        import openpyxl  # noqa: PLC0415 - the Excel engine the table reader uses, imported only here

        book = openpyxl.Workbook()
        for line in rows:
            book.active.append([float(v) if v.replace(".", "").isdigit() else v for v in line.split(",")])
        book.save(Path(tmp) / "table.xlsx")
        sheet = load_data(str(Path(tmp) / "table.xlsx"), host=host, label_column="kind")
        if sheet.X.shape != (20, 3):
            raise StepFailed(f"the Excel file was read wrongly: X {sheet.X.shape}")
    return f"a CSV and an Excel file of 20 rows, 3 features and a text label read ({ds.name})"


def small_data():
    """(X, y, X_new, y_new): the conformance kit's noisy helix (one connected manifold, three
    labels along it), 120 points to fit with every algorithm's defaults and 40 new ones."""

    X, y = default_data(n=120, d=4, seed=0)
    X_new, y_new = default_data(n=40, d=4, seed=1)
    return X, y, X_new, y_new


def fit_and_extend(cls, X, y, X_new, y_new) -> str:
    """Fit ``cls`` with its defaults on (X, y) and extend it to X_new; check the shapes. Fit
    warnings (e.g. not converged with the defaults) are named at the end of the line."""

    with warnings.catch_warnings(record=True) as caught:  # the command's main thread only
        warnings.simplefilter("always")
        try:
            text = _fit_and_extend(cls, X, y, X_new, y_new)
        except DataError as exc:
            # a method with a domain (NMF needs X >= 0) refuses the helix: the same points
            # translated into the positive orthant (nothing else changes for a translation)
            low = np.minimum(X.min(axis=0), X_new.min(axis=0))
            if np.all(low >= 0):
                raise
            try:
                text = _fit_and_extend(cls, X - low, y, X_new - low, y_new) + " (data shifted to X >= 0)"
            except DataError:
                raise exc from None
    messages = list(dict.fromkeys(" ".join(str(w.message).split()) for w in caught))
    if messages:
        more = f" (+{len(messages) - 1} more)" if len(messages) > 1 else ""
        text += f"; warning: {textwrap.shorten(messages[0], width=160, placeholder=' …')}{more}"  # whole words
    return text


def _fit_and_extend(cls, X, y, X_new, y_new) -> str:
    est = cls()
    labelled = cls.kind == "classification" or getattr(cls, "requires_labels", False)
    est.fit(X, y if labelled else None)
    out = np.asarray(est.extend(X_new))
    if out.shape[0] != X_new.shape[0]:
        raise StepFailed(f"extend returned {out.shape[0]} rows for {X_new.shape[0]} new points")
    if cls.kind == "embedding":
        emb = np.asarray(est.embedding_)
        if emb.shape[0] != X.shape[0] or out.ndim != 2 or out.shape[1] != emb.shape[1]:
            raise StepFailed(f"embedding {emb.shape} and extension {out.shape} do not match")
        if not (np.all(np.isfinite(emb)) and np.all(np.isfinite(out))):
            raise StepFailed("the embedding or its extension has NaN or infinite values")
        return f"embedding {emb.shape[0]}×{emb.shape[1]}, extended {out.shape[0]} points"
    if cls.kind == "clustering":
        n = len(np.unique(out))
        return f"{len(np.unique(est.labels_))} clusters, extended {out.shape[0]} points to {n}"
    if cls.kind == "classification":
        unknown = set(np.unique(out).tolist()) - set(np.unique(y).tolist())
        if unknown:
            raise StepFailed(f"predicted labels {sorted(unknown)} that are not training classes")
        train = float(np.mean(same_labels(est.extend(X), y)))
        new = float(np.mean(same_labels(out, y_new)))
        return f"accuracy {train:.2f} on the training points, {new:.2f} on {out.shape[0]} new points"
    return f"extended {out.shape[0]} points"


def _dot_loop(a, b):
    total = 0.0
    for i in range(a.shape[0]):
        total += a[i] * b[i]
    return total


def step_jit() -> str:
    """numba compiles a loop here (llvmlite's library is bundled; no cache folder is needed)."""
    import numba


    a, b = np.arange(1000.0), np.linspace(0.0, 1.0, 1000)
    start = time.perf_counter()
    value = jit(_dot_loop)(a, b)
    elapsed = time.perf_counter() - start
    if not np.isclose(value, float(a @ b)):
        raise StepFailed(f"the compiled loop returned {value}, expected {float(a @ b)}")
    return f"numba {numba.__version__} compiled a loop in {elapsed:.2f} s"


def step_project(host, ds) -> str:
    session = Session(host)
    name = session.add_dataset(ds)
    algo = "pca" if "pca" in host.algorithms else sorted(host.algorithms)[0]
    cls = host.algorithms[algo]
    labelled = cls.kind == "classification" or getattr(cls, "requires_labels", False)
    if labelled:
        raise StepFailed(f"no unsupervised algorithm to save in a project (only {algo})")
    run = session.run(algo, name)
    ext = session.extend(run.id, name, rows=np.arange(0, ds.n_samples, 7))
    with tempfile.TemporaryDirectory(prefix="manifold-studio-self-test-") as folder:
        path = Path(folder) / "self-test.msproj"
        save_project(session, path, {"self_test": True})
        size = path.stat().st_size
        reopened, settings = load_project(path, host)
    if settings.get("self_test") is not True:
        raise StepFailed(f"view settings not restored: {settings}")
    ds2 = reopened.dataset(name)
    if not np.array_equal(ds2.X, ds.X) or not np.array_equal(ds2.labels, ds.labels):
        raise StepFailed("the reopened data set differs from the saved one")
    run2 = reopened.run_by_id(run.id)
    result = run.embedding if run.embedding is not None else run.labels
    result2 = run2.embedding if run2.embedding is not None else run2.labels
    if result2 is None or not np.array_equal(result, result2):
        raise StepFailed("the reopened run's result differs from the saved one")
    if len(run2.extensions) != 1 or not np.array_equal(run2.extensions[0].values, ext.values):
        raise StepFailed("the reopened run's extension differs from the saved one")
    if run2.estimator is None:
        raise StepFailed("the reopened run has no model")
    again = np.asarray(run2.estimator.extend(ds.X[1::3]))
    if not np.array_equal(again, np.asarray(run.estimator.extend(ds.X[1::3]))):
        raise StepFailed("the reopened model extends differently from the saved one")
    return f"saved and reopened a {algo} run with its model ({size / 1024:.0f} KiB)"


def step_plugin_wheel() -> str:
    """The plugin template's wheel (built here without pip) installed into a temporary plugin
    folder through the plugin manager, discovered, fitted and extended; nothing else changes."""

    template = plugin_selfcheck.template_dir()
    if template is None:
        raise StepSkipped("the plugin template is not part of this installation")
    import tomllib
    from importlib import metadata

    name = tomllib.loads((template / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]
    try:
        installed = metadata.distribution(name)
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None:  # installed for real (plugin folder or pip): tested with the others
        raise StepSkipped(f"{name} {installed.version} is installed already; its algorithms were "
                          "fitted above")
    lines = plugin_selfcheck.check_plugin_wheel(log=None)
    fitted = [line for line in lines if line.startswith("plugin algorithm ")]
    if not fitted:
        raise StepFailed("the template plugin provided no algorithm", "\n".join(lines))
    return "; ".join(line.split(": ", 1)[0].replace("plugin algorithm ", "") for line in fitted) + \
        " installed from its wheel, fitted and extended"


def window_command() -> list[str]:
    """The command that starts this same program (the frozen executable or this Python)."""
    if getattr(sys, "frozen", False):
        return [sys.executable, *PROBE_ARGS]
    return [sys.executable, "-m", "manifold_studio", *PROBE_ARGS]


def step_window(timeout: float = WINDOW_TIMEOUT_S) -> str:
    """Start the window in a fresh process; the start-up time is Popen to its 'shown' line."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    start = time.perf_counter()
    proc = subprocess.Popen(window_command(), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, env=env, text=True, encoding="utf-8",
                            errors="replace")
    shown = result = None
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip())
            if line.startswith(SHOWN_MARK) and shown is None:
                shown = time.perf_counter() - start
            elif line.startswith(RESULT_MARK) and result is None:
                result = time.perf_counter() - start
        _, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
        raise StepFailed(f"the window did not close within {timeout:.0f} s", err) from None
    if proc.returncode != 0 or shown is None:
        detail = "\n".join(lines + (err or "").splitlines()[-40:])
        raise StepFailed(f"the window process exited with status {proc.returncode}"
                         + ("" if shown else " before the window was shown"), detail)
    text = f"start-up {shown:.2f} s (process start to window shown)"
    if result is not None:
        text += f", first map drawn at {result:.2f} s"
    return text


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="manifold-studio --self-test",
        description="Check that this installation works: plugins, a sample, every algorithm "
        "(fit and extend), a project saved and reopened, the main window. One line per step; "
        "exit status 1 at the first failure.")
    p.add_argument("--no-window", action="store_true", help="skip the window step")
    p.add_argument("--window-only", action="store_true", help="run only the window step")
    p.add_argument("--window-probe", action="store_true", help=argparse.SUPPRESS)
    return p


def run(no_window: bool = False, window_only: bool = False, stream=None) -> int:
    """Run the steps; returns the exit status (0: all passed, 1: a step failed)."""
    report = Report(stream)
    where = "installed application" if getattr(sys, "frozen", False) else "Python " + sys.version.split()[0]
    report.line("manifold-studio", "", f"{ms.__version__} self-test ({where}, {sys.platform})")
    if not window_only:
        data = {}

        def plugins():
            # the application's own host (and so its plugin search path): what the window uses
            data["host"] = get_host()
            return step_plugins(data["host"])

        if not report.step("plugins", plugins):
            return EXIT_FAILED
        host = data["host"]

        def sample():
            data["ds"] = ds = load_sample(host)
            return f"{ds.name}: {ds.n_samples} points × {ds.n_features} features, labelled"

        if not report.step("sample", sample):
            return EXIT_FAILED
        if not report.step("table file", lambda: step_table_file(host)):
            return EXIT_FAILED
        if not report.step("compiled loops", step_jit):
            return EXIT_FAILED
        X, y, X_new, y_new = small_data()
        for algo_id, cls in sorted(host.algorithms.items(), key=lambda kv: (kv[1].kind, kv[0])):
            if not report.step(f"fit+extend {algo_id}", lambda cls=cls: fit_and_extend(cls, X, y, X_new, y_new)):
                return EXIT_FAILED
        if not report.step("project save+open", lambda: step_project(host, data["ds"])):
            return EXIT_FAILED
        if not report.step("plugin wheel", step_plugin_wheel):
            return EXIT_FAILED
    if not no_window and not report.step("window", step_window):
        return EXIT_FAILED
    report.line("self-test", "ok", "everything works")
    return EXIT_OK


def main(argv=None) -> int:
    args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
    if args.window_probe:
        return window_probe()
    return run(no_window=args.no_window, window_only=args.window_only)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
