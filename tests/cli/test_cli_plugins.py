"""``manifold-studio plugins ...``: the plugin manager from the command line (issue 8)."""
import json
import os
import sys


from manifold_studio.plugins import manager as pm
from manifold_studio.plugins import host as plugins
from manifold_studio.cli.main import main
from manifold_studio.plugins.selfcheck import build_pure_wheel, template_dir

DIST, ALGO = "manifold-studio-example-plugin", "example_random_projection"


def listing(capsys) -> dict:
    plugins.reset_host(None)  # a new command-line process discovers afresh
    assert main(["plugins", "list", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    return {r["name"]: r for r in out["plugins"]}


def test_install_list_disable_enable_uninstall(folder, tmp_path, capsys):
    wheel = build_pure_wheel(template_dir(), tmp_path / "dist")
    assert main(["plugins", "install", str(wheel)]) == 0
    out = capsys.readouterr().out
    assert f"Installed {DIST} 0.1.0 into {folder}" in out and ALGO in out
    rec = listing(capsys)[ALGO]
    assert (rec["origin"], rec["version"], rec["status"], rec["algorithms"]) == ("user folder", "0.1.0", "loaded", [ALGO])
    assert listing(capsys)["builtin_pca"]["origin"] == "built-in"

    assert main(["plugins", "disable", DIST]) == 0
    assert f"{DIST} disabled" in capsys.readouterr().out
    assert listing(capsys)[ALGO]["status"] == "disabled"
    assert main(["plugins", "enable", ALGO]) == 0  # by entry-point name: lifts the distribution's ban
    assert f"{ALGO} enabled" in capsys.readouterr().out
    assert listing(capsys)[ALGO]["status"] == "loaded"

    # the text listing shows it in a table
    plugins.reset_host(None)
    assert main(["plugins", "list"]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if l.startswith(ALGO))
    assert line.split()[1:] == ["user", "folder", "0.1.0", "loaded", ALGO]

    assert main(["plugins", "uninstall", DIST]) == 0
    assert f"Uninstalled {DIST} 0.1.0." in capsys.readouterr().out
    assert ALGO not in listing(capsys)


def test_bad_input_exits_2_with_one_line(folder, tmp_path, capsys):
    bad = tmp_path / "fake.whl"
    bad.write_bytes(b"\x00not a zip")
    assert main(["plugins", "install", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("manifold-studio: error: fake.whl is not a plugin wheel: it is not a zip archive")
    assert err.count("\n") == 1
    assert main(["plugins", "uninstall", "nope"]) == 2
    assert "no plugin named 'nope' in the plugin folder" in capsys.readouterr().err
    assert main(["plugins", "disable", "nope"]) == 2
    assert "no plugin named 'nope'" in capsys.readouterr().err
    wrong = build_pure_wheel(template_dir(), tmp_path / "d", tag="py3-none-win_amd64")
    assert main(["plugins", "install", str(wrong)]) == 2
    assert "built for py3-none-win_amd64" in capsys.readouterr().err
    assert not folder.exists() or not any(p for p in folder.iterdir() if not p.name.startswith("."))


def test_a_new_process_runs_the_installed_plugin(folder, tmp_path, capsys):
    import subprocess

    assert main(["plugins", "install", str(build_pure_wheel(template_dir(), tmp_path / "dist"))]) == 0
    out = tmp_path / "emb.csv"
    env = dict(os.environ, **{pm.PLUGIN_DIR_ENV: str(folder)})
    proc = subprocess.run([sys.executable, "-c", "from manifold_studio.cli.main import main; raise SystemExit(main())",
                           "run", ALGO, "--data", "sample:iris", "-p", "n_components=3", "--out", str(out), "-q"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    import numpy as np

    rows = out.read_text().splitlines()
    assert len(rows) == 151 and rows[0] == f"row_id,{ALGO}_1,{ALGO}_2,{ALGO}_3,species"
    assert [int(r.split(",")[0]) for r in rows[1:]] == list(range(150))
    emb = np.array([[float(v) for v in r.split(",")[1:4]] for r in rows[1:]])
    assert emb.shape == (150, 3) and np.allclose(emb.mean(axis=0), 0, atol=1e-9)  # centred projection
