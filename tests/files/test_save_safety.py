"""Saves that cannot lose data (issue 12): a process killed in the middle of a large project
save, and a full disk, both leave the previous file intact."""
import errno
import os
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.data import Dataset
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.project.project_file import SUFFIX, read_project, save_project
from manifold_studio.session.model import Session


def _small_project(path):
    s = Session()
    s.add_dataset(ms.load_data("sample:iris"))
    save_project(s, path)
    return path.read_bytes()


def test_killing_the_process_during_a_large_save_keeps_the_previous_project(tmp_path):
    path = tmp_path / f"work{SUFFIX}"
    before = _small_project(path)
    script = textwrap.dedent(f"""
        import numpy as np
        from manifold_studio.data import Dataset
        from manifold_studio.project.project_file import save_project
        from manifold_studio.session.model import Session
        s = Session()
        rng = np.random.default_rng(0)
        for i in range(6):   # ~300 MB of incompressible data: the save takes seconds
            s.add_dataset(Dataset(f"big{{i}}", rng.random((1_000_000, 6))))
        print("saving", flush=True)
        save_project(s, {str(path)!r})
        print("saved", flush=True)
    """)
    proc = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "saving"
        deadline = time.monotonic() + 60
        while not any(p.name.startswith(f".{path.name}.") for p in tmp_path.iterdir()):  # writing has begun
            assert time.monotonic() < deadline and proc.poll() is None, "the save never started writing"
            time.sleep(0.01)
        time.sleep(0.2)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    assert path.read_bytes() == before  # untouched, byte for byte
    assert list(read_project(path).session.datasets) == ["Iris"]


def test_a_full_disk_leaves_the_previous_file_and_says_so(tmp_path, monkeypatch):
    path = tmp_path / f"work{SUFFIX}"
    before = _small_project(path)
    s = Session()
    s.add_dataset(Dataset("new", np.ones((100, 3))))

    def no_space(*_a, **_k):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(np, "savez_compressed", no_space)
    with pytest.raises(ManifoldStudioError, match=rf"Cannot write work{SUFFIX}: No space left on device; "
                                                  "the previous file is unchanged"):
        save_project(s, path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == [path.name]  # no temporary file left behind
