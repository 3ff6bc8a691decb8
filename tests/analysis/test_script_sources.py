"""What the exported script loads: a distance matrix with ``ms.load_distance_matrix`` (its
options checked against that loader's), and a data set no installed loader reads is left out
with a note instead of a script that cannot run."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
from scipy.spatial.distance import pdist, squareform

import manifold_studio as ms
from manifold_studio.reproduce.script_export import run_output_name, session_script, write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.project.project_file import save_project
from manifold_studio.session.model import Session


def _distances(path, n=30):
    X = ms.load_data("sample:iris").X[::150 // n]
    np.savetxt(path, squareform(pdist(X)), delimiter=",")
    return path


def test_a_distance_matrix_is_loaded_as_one_in_the_script(tmp_path):
    s = Session()
    s.add_dataset(ms.load_distance_matrix(str(_distances(tmp_path / "d.csv")), symmetry_tolerance=1e-9))
    mds = s.run("mds", n_components=2)
    assert mds.params["dissimilarity"] == "precomputed"
    script = write_script(save_project(s, tmp_path / "p.msproj"), tmp_path / "analysis.py")
    d = script_spec(script.read_text())["datasets"][0]
    assert d["distances"] is True and d["options"] == {"symmetry_tolerance": 1e-9}
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    got = np.loadtxt(tmp_path / "out" / f"{run_output_name(mds)}.csv", delimiter=",", skiprows=1)
    np.testing.assert_allclose(got, mds.embedding, rtol=0, atol=1e-9)


def test_a_source_no_loader_reads_is_left_out_with_a_note(tmp_path):
    s = Session()
    ds = s.load("sample:iris")
    s.run("pca", n_components=2)
    ds.source = str(tmp_path / "table.unknown")
    spec = script_spec(session_script(s))
    assert spec["datasets"] == [] and spec["runs"] == []
    assert "no installed loader reads its source" in spec["notes"][0] and "table.unknown" in spec["notes"][0]
    assert f"Run #1 was fitted on data set {ds.name!r}, which the script cannot load: skipped." in spec["notes"]
