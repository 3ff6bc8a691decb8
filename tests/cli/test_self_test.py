"""``manifold-studio --self-test``: every step really checks what it claims, and the first
failure stops the command with status 1 and a FAIL line naming the problem."""
import io
import os
import subprocess
import sys

import numpy as np
import pytest

from manifold_studio.cli import self_test
from manifold_studio.algorithms import EmbeddingAlgorithm
from manifold_studio.plugins.host import PluginFailure, PluginHost

HOST = PluginHost().discover()


@pytest.fixture(autouse=True)
def undiscovered_host(monkeypatch):
    """The self-test discovers through the process-wide host: start each test without one."""
    from manifold_studio.plugins import host as plugins

    monkeypatch.setattr(plugins, "_host", None)


def run_captured(**kwargs) -> tuple[int, list[str]]:
    out = io.StringIO()
    code = self_test.run(stream=out, **kwargs)
    return code, out.getvalue().splitlines()


def status_of(lines, step):
    """The status word of the line of ``step`` (None when the step did not run)."""
    for line in lines:
        if line[:32].rstrip() == step:
            return line[32:].split()[0]
    return None


@pytest.mark.parametrize("algorithm_id", sorted(HOST.algorithms))
def test_every_discovered_algorithm_fits_and_extends(algorithm_id):
    cls = HOST.algorithms[algorithm_id]
    X, y, X_new, y_new = self_test.small_data()
    text = self_test.fit_and_extend(cls, X, y, X_new, y_new)
    assert "40" in text  # the 40 new points were extended
    if cls.kind == "classification":
        # the helix's three labels are contiguous along it: any working classifier beats chance
        train = float(text.split("accuracy ")[1].split()[0])
        assert train > 0.5


def test_full_run_has_one_ok_line_per_step_and_algorithm():
    code, lines = run_captured(no_window=True)
    if HOST.failures:  # a built-in plugin that does not import is exactly what it must report
        assert code == 1 and status_of(lines, "plugins") == "FAIL"
        return
    assert code == 0, "\n".join(lines)
    for step in ["plugins", "sample", "compiled loops", "project save+open", "plugin wheel"] + [f"fit+extend {a}" for a in HOST.algorithms]:
        assert status_of(lines, step) == "ok", step
    assert status_of(lines, "window") is None  # --no-window
    assert lines[-1].startswith("self-test") and "ok" in lines[-1]


def test_plugin_import_failure_is_a_failure_line_and_stops(monkeypatch):
    discover = PluginHost.discover

    def broken(self, *args, **kwargs):
        discover(self, *args, **kwargs)
        self.failures.append(PluginFailure("acme_plugin", "import",
                                           "ModuleNotFoundError: No module named 'acme'", "Traceback ..."))
        return self

    monkeypatch.setattr(PluginHost, "discover", broken)
    code, lines = run_captured(no_window=True)
    assert code == 1
    fail = [line for line in lines if " FAIL " in line]
    assert len(fail) == 1 and fail[0].startswith("plugins") and "acme" in "\n".join(lines)
    assert not any(line.startswith("fit+extend") for line in lines)  # stopped at the first failure


def test_no_algorithm_discovered_fails(monkeypatch):
    """The classic frozen-app failure: no entry points, so no algorithms."""
    monkeypatch.setattr(PluginHost, "discover", lambda self, *a, **k: self)
    code, lines = run_captured(no_window=True)
    assert code == 1 and status_of(lines, "plugins") == "FAIL"
    assert "no algorithm was discovered" in "\n".join(lines)


class _WrongRows(EmbeddingAlgorithm):
    id = "zz_wrong_rows"
    name = "Wrong rows"
    help = "Extends to one row too few (a broken plugin for the self-test's test)."
    params = ()

    def _fit(self, X, y, progress):
        self.embedding_ = X[:, :2].copy()

    def _extend(self, X):
        return X[:, :2]

    def extend(self, X, progress=None):
        return np.asarray(X)[:-1, :2]


class _Warns(_WrongRows):
    id = "zz_warns"
    name = "Warns"
    help = "Fits, warns that it did not converge, extends correctly."

    def _fit(self, X, y, progress):
        import warnings

        from manifold_studio.errors import ConvergenceWarning

        warnings.warn("did not converge in 3 epochs", ConvergenceWarning)
        self.embedding_ = X[:, :2].copy()

    extend = EmbeddingAlgorithm.extend


def test_fit_warnings_are_named_on_the_line_not_failures(capsys):
    X, y, X_new, y_new = self_test.small_data()
    text = self_test.fit_and_extend(_Warns, X, y, X_new, y_new)
    assert text.endswith("; warning: did not converge in 3 epochs")
    assert "did not converge" not in capsys.readouterr().err  # not printed separately


def test_algorithm_that_extends_wrongly_fails_and_stops(monkeypatch):
    discover = PluginHost.discover

    def with_broken(self, *args, **kwargs):
        discover(self, *args, **kwargs)
        self.failures.clear()  # only the broken algorithm matters here
        self.algorithms[_WrongRows.id] = _WrongRows
        return self

    monkeypatch.setattr(PluginHost, "discover", with_broken)
    code, lines = run_captured(no_window=True)
    assert code == 1
    assert status_of(lines, "fit+extend zz_wrong_rows") == "FAIL"
    assert "39 rows for 40 new points" in "\n".join(lines)
    assert status_of(lines, "project save+open") is None


def test_project_step_detects_a_reopened_project_that_differs(monkeypatch):
    from manifold_studio.project import project_file as project

    load = project.load_project

    def damaged(path, host=None):
        session, settings = load(path, host)
        run = next(iter(session.runs.values()))
        run.embedding = run.embedding + 1e-9
        return session, settings

    monkeypatch.setattr(self_test, "load_project", damaged)
    ds = self_test.load_sample(HOST)
    with pytest.raises(self_test.StepFailed, match="result differs"):
        self_test.step_project(HOST, ds)
    monkeypatch.setattr(self_test, "load_project", load)
    assert "saved and reopened" in self_test.step_project(HOST, ds)


def test_window_step_opens_the_window_in_a_fresh_process_and_times_it():
    text = self_test.step_window(timeout=120)
    seconds = float(text.split("start-up ")[1].split()[0])
    assert 0 < seconds < 120
    assert "first map drawn" in text  # the initial PCA run of Iris finished in the window


def test_window_step_reports_a_process_that_dies(monkeypatch):
    monkeypatch.setattr(self_test, "window_command",
                        lambda: [sys.executable, "-c", "import sys; sys.stderr.write('boom'); sys.exit(3)"])
    with pytest.raises(self_test.StepFailed, match="status 3 before the window was shown") as info:
        self_test.step_window(timeout=30)
    assert "boom" in info.value.detail


def test_command_line_flag_starts_the_self_test_with_its_options(monkeypatch):
    """The flag's way through the command line, in this process (the self-test itself:
    test_full_run_has_one_ok_line_per_step_and_algorithm; in a fresh process, as a user runs
    it: the slow test below)."""
    from manifold_studio.cli import main as cli

    calls = []
    monkeypatch.setattr(self_test, "run", lambda **kwargs: calls.append(kwargs) or 7)
    assert cli.main(["--self-test", "--no-window"]) == 7
    assert cli.main(["--self-test"]) == 7
    assert calls == [{"no_window": True, "window_only": False}, {"no_window": False, "window_only": False}]
    assert "--self-test" in cli.build_parser().format_help()


@pytest.mark.slow
def test_command_line_flag_runs_the_self_test():
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    proc = subprocess.run([sys.executable, "-m", "manifold_studio", "--self-test", "--no-window"],
                          capture_output=True, text=True, env=env, timeout=240)
    assert proc.returncode == (1 if HOST.failures else 0), proc.stdout + proc.stderr
    assert proc.stdout.splitlines()[0].startswith("manifold-studio")
    assert status_of(proc.stdout.splitlines(), "plugins") in ("ok", "FAIL")
    helptext = subprocess.run([sys.executable, "-m", "manifold_studio", "--help"],
                              capture_output=True, text=True, timeout=60).stdout
    assert "--self-test" in helptext


class _NeedsPositive(_Warns):
    id = "zz_needs_positive"

    def _fit(self, X, y, progress):
        from manifold_studio.errors import DataError

        if (X < 0).any():
            raise DataError("X has negative values")
        self.embedding_ = X[:, :2].copy()


class _AlwaysRefuses(_Warns):
    id = "zz_always_refuses"

    def _fit(self, X, y, progress):
        from manifold_studio.errors import DataError

        raise DataError(f"refused {X.min():.3f}")


def test_data_refused_for_its_domain_is_retried_translated_into_x_ge_0():
    X, y, X_new, y_new = self_test.small_data()
    assert X.min() < 0
    assert self_test.fit_and_extend(_NeedsPositive, X, y, X_new, y_new).endswith("(data shifted to X >= 0)")
    from manifold_studio.errors import DataError

    with pytest.raises(DataError, match=f"refused {X.min():.3f}"):  # the first (original) refusal is reported
        self_test.fit_and_extend(_AlwaysRefuses, X, y, X_new, y_new)


def test_plugin_wheel_step_installs_the_template_into_a_temporary_folder():
    from manifold_studio.plugins import manager as plugin_manager

    before = os.environ.get(plugin_manager.PLUGIN_DIR_ENV)
    text = self_test.step_plugin_wheel()
    assert "example_random_projection" in text and "installed from its wheel" in text
    assert os.environ.get(plugin_manager.PLUGIN_DIR_ENV) == before  # the user's folder untouched


def test_plugin_wheel_step_is_skipped_without_the_template(monkeypatch):
    from manifold_studio.plugins import selfcheck as plugin_selfcheck

    monkeypatch.setattr(plugin_selfcheck, "template_dir", lambda: None)
    report_out = io.StringIO()
    report = self_test.Report(report_out)
    assert report.step("plugin wheel", self_test.step_plugin_wheel) is True
    assert status_of(report_out.getvalue().splitlines(), "plugin wheel") == "skip"
    assert not report.failed


def test_plugin_wheel_step_is_skipped_when_the_template_is_installed_for_real(monkeypatch):
    """Installed in the user's plugin folder (or with pip), the template was fitted with the
    other algorithms; installing its wheel again would be refused as a duplicate."""
    from importlib import metadata

    real = metadata.distribution

    class Installed:
        version = "0.1.0"

    monkeypatch.setattr(metadata, "distribution",
                        lambda name: Installed() if name == "manifold-studio-example-plugin" else real(name))
    with pytest.raises(self_test.StepSkipped, match="installed already"):
        self_test.step_plugin_wheel()
