"""manifold-studio score: Test & Score on the command line (through cli main())."""
import csv

import numpy as np
import pytest
from sklearn.model_selection import StratifiedKFold

import manifold_studio as ms
from manifold_studio.cli.main import main
from manifold_studio.evaluation import compare_learners


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.fixture(scope="module")
def csv_file(tmp_path_factory):
    ds = ms.load_data("sample:iris")
    path = tmp_path_factory.mktemp("score") / "flowers.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(ds.feature_names) + ["kind"])
        for row, label in zip(ds.X, ds.labels):
            w.writerow([repr(float(v)) for v in row] + [label])
    return path, ds


def test_score_prints_the_table_and_writes_csv(capsys, tmp_path, csv_file):
    path, ds = csv_file
    out_csv = tmp_path / "table.csv"
    rc, out, err = run(capsys, "score", "linear_classifier", "svm", "svm", "--data", path, "--label-column", "kind",
                       "--cv", 4, "--seed", 3, "--param", "linear_classifier.loss=logistic",
                       "--param", "3.kernel=linear", "--out", out_csv)
    assert rc == 0, err
    assert "stratified 4-fold, seed 3" in out
    lines = out.splitlines()
    assert lines[1].split()[:2] == ["Learner", "CA"]
    assert [ln.split()[0] for ln in lines[2:5]] == ["linear_classifier", "svm", "svm"]
    assert "Paired comparison" in out
    # the same numbers as the API on the same folds with the same settings
    ref = compare_learners([("linear_classifier", {"loss": "logistic"}), ("svm", {}), ("svm", {"kernel": "linear"})],
                           ds.X, ds.labels, cv=4, seed=3, names=["linear_classifier", "svm #2", "svm #3"])
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    assert [r["learner"] for r in rows] == ["linear_classifier", "svm #2", "svm #3"]
    for row, r in zip(rows, ref.learners):
        for m in ("accuracy", "balanced_accuracy", "f1", "auc"):
            assert float(row[m]) == pytest.approx(r.mean(m), abs=1e-12)
            assert float(row[m + "_spread"]) == pytest.approx(r.spread(m), abs=1e-12)
        assert row["folds_failed"] == "0"
        assert f"{r.mean('accuracy'):.3f} ± {r.spread('accuracy'):.3f}" in out
    assert rows[1]["log_loss"] == "" or np.isnan(float(rows[1]["log_loss"]))  # plain svm: no probabilities
    # its folds are scikit-learn's
    y = np.asarray(ds.labels)
    sk = [te for _, te in StratifiedKFold(4, shuffle=True, random_state=3).split(ds.X, y)]
    for (_, te), b in zip(ref.folds, sk):
        np.testing.assert_array_equal(te, b)
    # wins printed as in the matrix
    wins, paired = ref.wins("accuracy")
    row = next(ln for ln in lines if ln.startswith("linear_classifier ") and "/" in ln)
    assert row.split()[1:] == ["—", f"{wins[0, 1]}/{paired[0, 1]}", f"{wins[0, 2]}/{paired[0, 2]}"]


def test_score_holdout_repeats_and_loo(capsys, csv_file):
    path, _ = csv_file
    rc, out, err = run(capsys, "score", "perceptron", "--data", path, "--label-column", "kind",
                       "--holdout", 0.3, "--repeats", 2, "-p", "perceptron.max_epochs=50")
    assert rc == 0, err
    assert "stratified hold-out of 0.3, 2 repeats" in out and "2 fold(s)" in out
    assert "Paired comparison" not in out  # one learner
    rc, out, err = run(capsys, "score", "linear_classifier", "--data", "sample:iris", "--cv", "loo", "-q")
    assert rc == 0, err
    assert "leave-one-out" in out and "150 fold(s)" in out
    assert "pooled out-of-fold AUC" in out  # one row per fold: no AUC per fold


@pytest.mark.parametrize("argv,fragment", [
    (["pca", "--data", "sample:iris"], "pca is not a classifier"),
    (["svm", "--data", "sample:iris", "--param", "svm.bogus=1"], "Unknown parameter 'bogus' for svm"),
    (["svm", "--data", "sample:iris", "--param", "kernel=rbf"], "--param expects ALGO.NAME=VALUE"),
    (["svm", "--data", "sample:iris", "--param", "2.kernel=rbf"], "position 2 is not between 1 and 1"),
    (["svm", "--data", "sample:iris", "--param", "mlp.alpha=1"], "'mlp' is not one of the learners"),
    (["svm", "--data", "sample:iris", "--cv", "x"], "--cv expects a number of folds or 'loo'"),
    (["svm", "--data", "sample:iris", "--cv", "1"], "at least 2 folds"),
    (["svm", "--data", "sample:iris", "--holdout", "2"], "--holdout expects a fraction"),
    (["svm", "--data", "sample:iris", "--cv", "51"], "every class has fewer rows"),
    (["svm", "--data", "sample:iris", "--cv", "3", "--holdout", "0.2"], "give one of them"),
    (["svm", "--data", "sample:iris", "--repeats", "0"], "--repeats expects"),
    (["no_such", "--data", "sample:iris"], "no_such"),
    (["svm", "--data", "/nonexistent.csv"], "File not found"),
])
def test_score_bad_input_is_one_line(capsys, argv, fragment):
    rc, out, err = run(capsys, "score", *argv)
    assert rc == 2
    lines = err.strip().splitlines()
    assert len(lines) == 1 and fragment in lines[0], err


def test_score_reports_a_fold_it_cannot_fit(capsys, tmp_path):
    # class 'b' has a single row: the fold that tests it trains on class 'a' alone
    path = tmp_path / "two.csv"
    rng = np.random.default_rng(1)
    rows = [(*rng.normal(size=2), "a") for _ in range(9)] + [(5.0, 5.0, "b")]
    with open(path, "w") as fh:
        fh.write("x,y,c\n" + "".join(f"{float(x)!r},{float(y)!r},{c}\n" for x, y, c in rows))
    rc, out, err = run(capsys, "score", "linear_classifier", "--data", path, "--label-column", "c", "--cv", 3)
    assert rc == 0, err
    y = np.array([r[2] for r in rows])
    sk = [tr for tr, _ in StratifiedKFold(3, shuffle=True, random_state=0).split(np.zeros((10, 1)), y)]
    bad = [f + 1 for f, tr in enumerate(sk) if len(set(y[tr])) == 1]
    assert len(bad) == 1
    for f in bad:
        assert f"linear_classifier: fold {f}: its training part has only class 'a'" in out
    assert out.count("warning:") == 1 and "(class 'b' not in its training part)" in out
    table_row = next(ln for ln in out.splitlines() if ln.startswith("linear_classifier "))
    assert "n/a" not in table_row.split("±")[0]  # the other folds are scored


def test_score_and_run_take_the_preparation_chain_of_run(capsys, tmp_path):
    """score --prep/--role as 'run' takes them: every learner is the chain + its classifier,
    fitted on each training part (the API's numbers with the same pipelines); 'run --cv --prep'
    evaluates the pipeline the same way."""
    from manifold_studio.evaluation import KFOLD, evaluate

    wine = ms.load_data("sample:wine")
    path = tmp_path / "wine.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(wine.feature_names) + ["note", "cultivar"])
        for i, (row, label) in enumerate(zip(wine.X, wine.labels)):
            w.writerow([repr(float(v)) for v in row] + [i % 7, label])
    out_csv = tmp_path / "scores.csv"
    rc, out, err = run(capsys, "score", "svm", "perceptron", "--data", path, "--label-column", "cultivar",
                       "--cv", 5, "--seed", 1, "--prep", "standardize", "--prep", "select_columns:exclude=proline",
                       "--role", "note=meta", "--param", "perceptron.max_epochs=30", "--out", out_csv)
    assert rc == 0, err
    assert "preparation (fitted on each training part): standardize → select_columns(exclude=['proline'])" in out
    ds = ms.load_data(str(path), label_column="cultivar", roles={"note": "meta"})
    assert "note" not in ds.feature_names
    chain = ("standardize", ("select_columns", {"exclude": ["proline"]}))
    ref = compare_learners({"svm": ms.make_pipeline(*chain, ms.get_algorithm("svm")),
                            "perceptron": ms.make_pipeline(*chain, ms.get_algorithm("perceptron", max_epochs=30))},
                           ds, cv=5, seed=1)
    bare = compare_learners(["svm"], ds, cv=5, seed=1)
    with open(out_csv) as fh:
        rows = list(csv.DictReader(fh))
    for row, r in zip(rows, ref.learners):
        assert row["learner"] == r.name
        for m in ("accuracy", "auc"):
            assert float(row[m]) == pytest.approx(r.mean(m), abs=1e-12)
    assert ref.learner("svm").mean("accuracy") > bare.learners[0].mean("accuracy") + 0.2
    # run --cv with --prep: the pipeline evaluated per fold (no longer refused)
    rc, out, err = run(capsys, "run", "svm", "--data", path, "--label-column", "cultivar", "--role", "note=meta",
                       "--prep", "standardize", "--cv", 5, "--out", tmp_path / "pred.csv")
    assert rc == 0, err
    res = evaluate(ms.make_pipeline("standardize", ms.get_algorithm("svm")), ds, method=KFOLD, n_splits=5,
                   random_state=0)
    assert res.summary() in out + err


@pytest.mark.parametrize("flag, value", [("--cv", 4), ("--holdout", 0.3)])
def test_run_evaluation_and_score_give_the_same_figures_to_the_last_bit(capsys, tmp_path, flag, value):
    """'run --cv K' / 'run --holdout F' and 'score' with the same learner, chain, seed and split:
    the same folds (scikit-learn's StratifiedKFold / the seeded stratified hold-out), the same
    predictions and the same accuracy, bit for bit."""
    from manifold_studio.evaluation import HOLDOUT, KFOLD, evaluate

    ds = ms.load_data("sample:wine")
    learner = ms.make_pipeline("standardize", ms.get_algorithm("mlp", hidden_layer_sizes=(8,), max_iter=30))
    scheme = {"method": KFOLD, "n_splits": value} if flag == "--cv" else {"method": HOLDOUT, "test_fraction": value}
    with pytest.warns(Warning):   # the short MLP does not converge
        res = evaluate(learner, ds, random_state=2, **scheme)
        c = compare_learners([learner], ds, seed=2, **({"cv": value} if flag == "--cv" else {"holdout": value}))
    (r,) = c.learners
    assert [te.tolist() for te in res.test_index] == [te.tolist() for _, te in c.folds]
    np.testing.assert_array_equal(res.fold_accuracy, r.fold_metrics["accuracy"])
    for te, pred in zip(res.test_index, res.predictions):
        np.testing.assert_array_equal(pred, c.classes[r.predictions[0][te]])
    assert res.mean_accuracy == r.mean("accuracy")
    # the two commands: score's CSV holds the mean to the last bit, run prints it
    out_csv = tmp_path / "scores.csv"
    rc, out, err = run(capsys, "score", "mlp", "--data", "sample:wine", "--prep", "standardize", flag, value,
                       "--seed", 2, "-p", "mlp.hidden_layer_sizes=8", "-p", "mlp.max_iter=30", "--out", out_csv)
    assert rc == 0, err
    with open(out_csv) as fh:
        (row,) = list(csv.DictReader(fh))
    assert float(row["accuracy"]) == r.mean("accuracy")
    rc, out, err = run(capsys, "run", "mlp", "--data", "sample:wine", "--prep", "standardize", flag, value,
                       "--sample-seed", 2, "-p", "hidden_layer_sizes=8", "-p", "max_iter=30",
                       "--out", tmp_path / "pred.csv")
    assert rc == 0, err
    assert res.summary() in out + err
