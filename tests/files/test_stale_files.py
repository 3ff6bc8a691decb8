"""Stale temporary files (issue 18, item 5): what killed writes and installs left behind — an
install's .staging-*/.old-* folders, atomic-write .tmp files, streamed .partial files — is removed
at start when it is older than a day and follows the application's own naming patterns; newer
ones (a write in progress elsewhere) and everything else stay. Ages are set with os.utime."""
import os
import subprocess
import sys
import time
from pathlib import Path

from manifold_studio.files.stale import PLUGIN_FOLDER_PATTERNS, output_patterns, remove_stale

OLD = time.time() - 2 * 24 * 3600   # two days ago
RECENT = time.time() - 3600         # an hour ago


def make(path: Path, age: float, folder: bool = False) -> Path:
    if folder:
        (path / "pkg").mkdir(parents=True)
        (path / "pkg" / "mod.py").write_text("x = 1\n")
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("partial contents")
    os.utime(path, (age, age))
    return path


def names(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_only_old_entries_with_our_names_are_removed(tmp_path):
    d = tmp_path / "plugins"
    make(d / ".staging-k2j3h4", OLD, folder=True)
    make(d / ".old-a8s7d6", OLD, folder=True)
    make(d / ".write-test-x1", OLD)
    make(d / ".installed.json.tmp", OLD)
    make(d / "settings.json.tmp", OLD)
    make(d / ".staging-inprogress", RECENT, folder=True)   # another process is installing
    make(d / "some-plugin", OLD, folder=True)              # an installed plugin
    make(d / ".settings-probes.json", OLD)                 # not a temporary
    make(d / "notes.tmp", OLD)                             # not our naming
    make(d / ".staging-is-a-file", OLD)                    # our folder name, but a file
    (d / ".old-link").symlink_to(d / "some-plugin")        # a link is never followed or removed
    os.utime(d / ".old-link", (OLD, OLD), follow_symlinks=False)
    removed = remove_stale(d, PLUGIN_FOLDER_PATTERNS)
    assert sorted(p.name for p in removed) == [".installed.json.tmp", ".old-a8s7d6", ".staging-k2j3h4",
                                               ".write-test-x1", "settings.json.tmp"]
    assert names(d) == [".old-link", ".settings-probes.json", ".staging-inprogress", ".staging-is-a-file",
                        "notes.tmp", "some-plugin"]
    assert (d / "some-plugin" / "pkg" / "mod.py").is_file()
    # the age is measured on the wall clock: a day later the one in progress is stale too
    assert [p.name for p in remove_stale(d, PLUGIN_FOLDER_PATTERNS, now=time.time() + 24 * 3600)] == \
        [".staging-inprogress"]


def test_next_to_an_output_only_its_own_temporaries_go(tmp_path):
    make(tmp_path / ".out.csv.k3j4h5g6.tmp", OLD)
    make(tmp_path / ".out.csv.a1b2c3.partial", OLD)
    make(tmp_path / ".out.csv.new.tmp", RECENT)
    make(tmp_path / ".other.csv.k3j4h5g6.tmp", OLD)
    make(tmp_path / "out.csv.tmp", OLD)
    removed = remove_stale(tmp_path, output_patterns(tmp_path / "out.csv"))
    assert sorted(p.name for p in removed) == [".out.csv.a1b2c3.partial", ".out.csv.k3j4h5g6.tmp"]
    assert names(tmp_path) == [".other.csv.k3j4h5g6.tmp", ".out.csv.new.tmp", "out.csv.tmp"]
    # a name with glob characters matches only itself
    make(tmp_path / ".[x].csv.1.tmp", OLD)
    make(tmp_path / ".y.csv.1.tmp", OLD)
    assert [p.name for p in remove_stale(tmp_path, output_patterns(tmp_path / "[x].csv"))] == [".[x].csv.1.tmp"]


def test_the_command_line_cleans_at_start(tmp_path):
    plugins, recovery, work = tmp_path / "plugins", tmp_path / "recovery", tmp_path / "work"
    make(plugins / ".staging-dead", OLD, folder=True)
    make(plugins / ".old-dead", OLD, folder=True)
    make(plugins / ".staging-live", RECENT, folder=True)
    make(recovery / ".session-4242.msproj.h5g6j7.tmp", OLD)
    make(recovery / ".session-4242.msproj.h5g6j7.partial", OLD)
    make(recovery / "session-4242.msproj", OLD)            # a crashed session: offered, not removed
    make(work / ".result.csv.q1w2e3.tmp", OLD)
    make(work / ".result.csv.q1w2e3r4.tmp", RECENT)
    env = dict(os.environ, MANIFOLD_STUDIO_PLUGIN_DIR=str(plugins), MANIFOLD_STUDIO_RECOVERY_DIR=str(recovery))
    env.pop("MANIFOLD_STUDIO_PLUGIN_SETTINGS", None)
    res = subprocess.run([sys.executable, "-m", "manifold_studio", "run", "pca", "--data", "sample:iris",
                          "--out", str(work / "result.csv"), "-q"], env=env, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert [n for n in names(plugins) if n.startswith(".staging") or n.startswith(".old")] == [".staging-live"]
    assert names(recovery) == ["session-4242.msproj"]
    assert names(work) == [".result.csv.q1w2e3r4.tmp", "result.csv"]
