"""manifold-studio compare-clusterings: the comparison of clusterings on the command line."""
import csv

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.analysis.compare_clusterings import MEASURES
from manifold_studio.cli.main import main
from manifold_studio.evaluation import compare_clusterings


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_prints_the_table_and_writes_the_api_numbers(capsys, tmp_path):
    out_csv = tmp_path / "table.csv"
    rc, out, err = run(capsys, "compare-clusterings", "kmeans", "gmm", "hierarchical", "--data", "sample:wine",
                       "--k", "2:8", "--seed", 0, "--prep", "standardize",
                       "--param", "hierarchical.method=average", "-o", out_csv)
    assert rc == 0, err
    assert "k = 2…8, seed 0, 0.25 held out" in out and "through standardize" in out
    lines = out.splitlines()
    assert lines[1].split()[:4] == ["Method", "k", "W", "B"]
    assert [ln.split()[:2] for ln in lines[2:4]] == [["kmeans", "2"], ["kmeans", "3"]]
    ds = ms.load_data("sample:wine")
    X = ms.make_pipeline(("standardize", {})).fit_transform(ds)
    ref = compare_clusterings(["kmeans", "gmm", ("hierarchical", {"method": "average"})], X, range(2, 9), seed=0)
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 21 and [r["method"] for r in rows[::7]] == ["kmeans", "gmm", "hierarchical"]
    for row, r in zip(rows, ref.rows):
        assert int(row["k"]) == r.k and int(row["n_clusters_found"]) == r.n_clusters_found
        for m in MEASURES:
            assert float(row[m]) == r.value(m)
    best = ref.best("gmm", "silhouette")
    assert any(ln.strip().startswith("Silhouette:") and f"gmm {best}" in ln for ln in lines)


def test_copies_by_position_no_holdout_and_a_failing_k(capsys, tmp_path):
    rng = np.random.default_rng(0)
    path = tmp_path / "five.csv"
    np.savetxt(path, np.repeat(rng.normal(size=(5, 2)) * 10, 4, axis=0), delimiter=",", header="a,b", comments="")
    rc, out, err = run(capsys, "compare-clusterings", "hierarchical", "hierarchical", "--data", path, "--k", "2:6",
                       "--holdout", 0, "-p", "2.method=complete", "-q")
    assert rc == 0, err
    assert "no rows held out" in out
    assert "warning: hierarchical #1 at k = 6: the fit failed" in out
    assert "warning: hierarchical #2 at k = 6: the fit failed" in out
    body = [ln.split() for ln in out.splitlines() if ln.startswith("hierarchical #")]
    assert len(body) == 10 and body[4][-1] == "n/a" and body[3][-2] != "n/a"


@pytest.mark.parametrize("argv,fragment", [
    (["pca", "--data", "sample:iris"], "pca is not a clustering method"),
    (["kmeans", "--data", "sample:iris", "--k", "1:4"], "k = 1 is below 2"),
    (["kmeans", "--data", "sample:iris", "--k", "2:150"], "k = 150 is above n − 1 = 149"),
    (["kmeans", "--data", "sample:iris", "--k", "2-5"], "--k: Invalid k range '2-5'"),
    (["kmeans", "--data", "sample:iris", "--holdout", "1.5"], "--holdout expects a fraction"),
    (["kmeans", "--data", "sample:iris", "--param", "kmeans.bogus=1"], "Unknown parameter 'bogus' for kmeans"),
    (["kmeans", "--data", "sample:iris", "--prep", "nothing"], "Unknown preparation step 'nothing'"),
])
def test_bad_input_is_one_line(capsys, argv, fragment):
    rc, out, err = run(capsys, "compare-clusterings", *argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], err
