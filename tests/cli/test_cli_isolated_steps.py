"""Third-party preparation steps get the isolation of third-party fits (issue 29): a step from a
plugin folder that segfaults in ``fit`` or calls ``os._exit(7)`` ends only its worker process —
the command says so, naming the signal or the exit code, writes nothing and exits with status 1;
``--in-process`` opts out. Each command runs in its own process, as a user would run it."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from broken_steps import step_env

@pytest.fixture
def env(tmp_path):
    return step_env(tmp_path)


def cli(env, *args):
    """(exit status, stdout, stderr, pid of the command)."""
    proc = subprocess.Popen([sys.executable, "-m", "manifold_studio", *args], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate(timeout=300)
    return proc.returncode, out, err, proc.pid


def step_pid(env) -> int:
    with open(env["CLI_STEP_PID_FILE"]) as fh:
        return int(fh.read())


CRASHES = {"tp_segv": "SIGSEGV", "tp_exit7": "code 7"}


# a process spawn costs seconds: the segfault in the default run, os._exit(7) with the slow tests
@pytest.mark.parametrize("step", [pytest.param(s, marks=pytest.mark.slow) if s == "tp_exit7" else s
                                  for s in sorted(CRASHES)])
def test_run_reports_a_crashing_step_and_exits_1(tmp_path, env, step):
    out = tmp_path / "out.csv"
    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", step, "--out", str(out))
    assert code == 1, err
    assert CRASHES[step] in err and step in err and "No output file was written" in err, err
    assert err.count("\n") == 1, err          # one line, no traceback
    assert step_pid(env) != pid               # it ran in another process
    assert not out.exists()


@pytest.mark.slow  # the window's path checks the same result in the default run (tests/session)
def test_a_third_party_step_runs_in_a_worker_and_gives_the_in_process_result(tmp_path, env):
    import manifold_studio as ms

    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double",
                            "--out", str(tmp_path / "a.csv"), "--save-model", str(tmp_path / "m.npz"))
    assert code == 0, err
    assert step_pid(env) != pid
    got = np.loadtxt(tmp_path / "a.csv", delimiter=",", skiprows=1, usecols=(1, 2))
    X = ms.load_data("sample:iris").X
    expected = ms.get_algorithm("pca").fit(X * 2.0).embedding_
    np.testing.assert_allclose(np.abs(got), np.abs(expected), atol=1e-9)
    assert (tmp_path / "m.npz").is_file()


@pytest.mark.slow
def test_in_process_opts_out(tmp_path, env):
    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double", "--in-process",
                            "--out", str(tmp_path / "a.csv"))
    assert code == 0, err
    assert step_pid(env) == pid


def _slow_unless(default: set):
    """Parameters (command, crash): those in ``default`` in the default run, the rest slow."""
    return [pytest.param(c, k, marks=() if (c, k) in default else pytest.mark.slow)
            for c in ("score", "compare-clusterings") for k in sorted(CRASHES)]


@pytest.mark.parametrize("command, step", _slow_unless({("score", "tp_exit7")}))
def test_score_and_compare_clusterings_report_a_crashing_step_and_exit_1(tmp_path, env, command, step):
    algos = ["linear_classifier"] if command == "score" else ["kmeans", "--k", "2:3"]
    out = tmp_path / "table.csv"
    code, stdout, err, pid = cli(env, command, *algos, "--data", "sample:iris", "--prep", step,
                                 "--out", str(out), "-q")
    assert code == 1, stdout + err
    assert CRASHES[step] in err and step in err and "No output file was written" in err, err
    assert err.count("\n") == 1, err
    assert step_pid(env) != pid and not out.exists()


def _project_with_a_third_party_step(tmp_path, env, monkeypatch):
    """A project with a PCA run behind the third-party step tp_double, saved in this process."""
    from manifold_studio.project.project_file import save_project
    from manifold_studio.plugins.host import PluginHost, get_host, reset_host
    from manifold_studio.session.model import Session

    for key in ("MANIFOLD_STUDIO_PLUGIN_DIR", "CLI_STEP_PID_FILE"):
        monkeypatch.setenv(key, env[key])
    old = get_host()
    reset_host(PluginHost().discover())
    try:
        s = Session()
        s.load("sample:iris")
        run = s.create_run("pca", {"n_components": 2}, chain=[("tp_double", {})])
        s.start_run(run.id)
        s.complete_run(run.id, s.fit_task(run)())
        (tmp_path / "new.csv").write_text(
            "sepal_length,sepal_width,petal_length,petal_width\n"
            "5.1,3.5,1.4,0.2\n6.2,2.9,4.3,1.3\n7.7,3.0,6.1,2.3\n")
        return save_project(s, tmp_path / "p.msproj")
    finally:
        reset_host(old)


@pytest.mark.slow
@pytest.mark.parametrize("crash", ["segv", "exit7"])
def test_replay_reports_a_step_crashing_in_its_worker(tmp_path, env, monkeypatch, crash):
    project = _project_with_a_third_party_step(tmp_path, env, monkeypatch)
    ok = cli(env, "replay", str(project), "--data", str(tmp_path / "new.csv"), "--out-dir", str(tmp_path / "ok"))
    assert ok[0] == 0, ok[2]
    assert len((tmp_path / "ok" / "run1_pca.csv").read_text().splitlines()) == 4
    env["STEP_CRASH_IN_TRANSFORM"] = crash
    code, _, err, _ = cli(env, "replay", str(project), "--data", str(tmp_path / "new.csv"),
                          "--out-dir", str(tmp_path / "out"))
    assert code == 1, err
    assert ("SIGSEGV" if crash == "segv" else "code 7") in err and "tp_steps" not in err.split("(")[0], err
    assert "replay of p.msproj" in err and err.count("\n") == 1, err


@pytest.mark.slow
def test_apply_of_a_model_with_a_third_party_step_runs_in_a_worker(tmp_path, env):
    model = tmp_path / "m.npz"
    assert cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double", "--out", str(tmp_path / "a.csv"),
               "--save-model", str(model))[0] == 0
    env["STEP_CRASH_IN_TRANSFORM"] = "segv"
    out = tmp_path / "b.csv"
    code, _, err, _ = cli(env, "apply", "--model", str(model), "--data", "sample:iris", "--out", str(out))
    assert code == 1 and "SIGSEGV" in err and "No output file was written" in err, err
    assert not out.exists()


@pytest.mark.slow
def test_run_with_cross_validation_runs_whole_in_a_worker(tmp_path, env):
    out = tmp_path / "out.csv"
    code, _, err, pid = cli(env, "run", "linear_classifier", "--data", "sample:iris", "--prep", "tp_segv",
                            "--cv", "3", "--out", str(out))
    assert code == 1 and "SIGSEGV" in err and "tp_segv" in err and err.count("\n") == 1, err
    assert step_pid(env) != pid and not out.exists()


def test_run_extends_a_third_party_pipeline_in_a_worker_too(tmp_path, env):
    # the step segfaults in transform anywhere but the process that fitted it: the extension of
    # --extend must run in a worker of its own, whose death is reported, nothing written
    env = {**env, "STEP_CRASH_AFTER_FIT": "1"}
    ext = tmp_path / "ext.csv"
    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double",
                            "--extend", "sample:iris", "--extend-out", str(ext), "--out", str(tmp_path / "a.csv"))
    assert code == 1, err
    assert "extension by tp_double → pca" in err and "SIGSEGV" in err and "No output file was written" in err
    assert step_pid(env) != pid and not ext.exists() and not (tmp_path / "a.csv").exists()


def test_run_fit_sample_extends_a_third_party_pipeline_in_a_worker_too(tmp_path, env):
    # fitted on 40 rows in one worker, extended to the other 110 in another: the step's transform
    # segfaults there (anywhere but the process that fitted it), reported in one line, exit 1
    env = {**env, "STEP_CRASH_AFTER_FIT": "1"}
    out = tmp_path / "a.csv"
    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double",
                            "--fit-sample", "40", "--out", str(out))
    assert code == 1, err
    assert "SIGSEGV" in err and "tp_double" in err and "No output file was written" in err, err
    assert err.count("\n") == 1, err          # one line, no traceback
    assert step_pid(env) != pid and not out.exists()


@pytest.mark.slow
def test_run_fit_sample_in_process_opts_out_and_gives_pca_of_the_doubled_sample(tmp_path, env):
    # --in-process: fitted and extended here; the (well-behaved) step doubles X before PCA
    out = tmp_path / "a.csv"
    code, _, err, pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double",
                            "--fit-sample", "40", "--sample-seed", "3", "--out", str(out), "--in-process")
    assert code == 0 and step_pid(env) == pid, err
    import pandas as pd

    import manifold_studio as ms

    table = pd.read_csv(out)
    got = table[["pca_1", "pca_2"]].to_numpy()
    X = ms.load_data("sample:iris").X
    fitted = table["fitted"].to_numpy().astype(bool)
    assert fitted.sum() == 40
    ref = ms.get_algorithm("pca").fit(2.0 * X[fitted])
    np.testing.assert_allclose(got, ref.extend(2.0 * X), atol=1e-9)


@pytest.mark.slow
def test_run_extend_in_a_worker_gives_the_in_process_result(tmp_path, env):
    code, _, err, _pid = cli(env, "run", "pca", "--data", "sample:iris", "--prep", "tp_double",
                             "--extend", "sample:iris", "--extend-out", str(tmp_path / "e.csv"),
                             "--out", str(tmp_path / "a.csv"))
    assert code == 0, err
    fitted = np.loadtxt(tmp_path / "a.csv", delimiter=",", skiprows=1, usecols=(1, 2))
    extended = np.loadtxt(tmp_path / "e.csv", delimiter=",", skiprows=1, usecols=(1, 2))
    np.testing.assert_allclose(extended, fitted, atol=1e-9)


@pytest.mark.slow  # a local Dask cluster and a worker command: many seconds
def test_run_and_apply_on_dask_run_a_third_party_step_in_a_worker_command(tmp_path, env):
    """run --dask fits here (and a local Dask extends here): with a third-party step the whole
    command runs in a worker, so a step that segfaults ends that worker, not the command; apply
    --dask of a third-party model (restoring it runs the plugin) likewise."""
    pytest.importorskip("distributed")
    import manifold_studio as ms

    X = ms.load_data("sample:iris").X
    data = tmp_path / "iris.csv"
    data.write_text("a,b,c,d\n" + "\n".join(",".join(map(repr, map(float, r))) for r in X) + "\n")
    out = tmp_path / "o.csv"
    code, _, err, pid = cli(env, "run", "pca", "--data", str(data), "--prep", "tp_segv", "--dask", "",
                            "--fit-sample", "30", "--out", str(out))
    assert code == 1 and "SIGSEGV" in err and "tp_segv" in err and "on Dask" in err, err
    assert step_pid(env) != pid and not out.exists()
    model = tmp_path / "m.msmodel"
    code, _, err, _ = cli(env, "run", "pca", "--data", str(data), "--prep", "tp_double", "--out",
                          str(tmp_path / "r.csv"), "--save-model", str(model))
    assert code == 0, err
    env = {**env, "STEP_CRASH_IN_TRANSFORM": "segv"}
    code, _, err, _ = cli(env, "apply", "--model", str(model), "--data", str(data), "--dask", "", "--out", str(out))
    assert code == 1 and "SIGSEGV" in err and "tp_double" in err and "on Dask" in err, err
    assert not out.exists()
