"""The command line's preparation chain (issue 20, section 4): ``run --prep``, ``--role``,
``--id-column``, the row id column of every output CSV, ``apply`` through the saved chain (in
chunks, with --fit-sample, and on Dask), ``list`` of the preparation steps."""
from __future__ import annotations

import csv
import json

import numpy as np
import pandas as pd
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.files.model_file import load_model


def run(capsys, *argv):
    rc = cli_main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def read_csv(path):
    with open(path, newline="") as fh:
        rows = list(csv.reader(fh))
    return rows[0], rows[1:]


@pytest.fixture
def chain_files(tmp_path):
    """A training CSV with a gap and a label column, and new data with its columns in another
    order and a gap of its own."""
    rng = np.random.default_rng(3)
    t = rng.uniform(0, 3 * np.pi, 160)
    X = np.c_[t * np.cos(t), 10 * rng.uniform(0, 2, 160), t * np.sin(t) * 100, t * 1000]
    train = pd.DataFrame(X, columns=["a", "b", "c", "d"])
    train["kind"] = np.where(t > 4, "far", "near")
    train.loc[7, "b"] = np.nan
    train.to_csv(tmp_path / "train.csv", index=False)
    t2 = rng.uniform(0, 3 * np.pi, 25)
    new = pd.DataFrame(np.c_[t2 * np.cos(t2), 10 * rng.uniform(0, 2, 25), t2 * np.sin(t2) * 100, t2 * 1000],
                       columns=["a", "b", "c", "d"])
    new.loc[4, "c"] = np.nan
    new[["d", "c", "a", "b"]].to_csv(tmp_path / "new.csv", index=False)
    return train, new


def _saved_chain(capsys, tmp_path):
    rc, out, err = run(capsys, "run", "isomap", "--data", tmp_path / "train.csv", "--label-column", "kind",
                       "--prep", "impute:strategy=median", "--prep", "standardize", "-p", "n_neighbors=10",
                       "--out", tmp_path / "train_map.csv", "--save-model", tmp_path / "chain.npz")
    assert rc == 0, err
    return load_model(tmp_path / "chain.npz")


def test_saved_chain_applied_to_reordered_columns_with_a_gap_equals_the_pipeline(tmp_path, capsys, chain_files):
    train, new = chain_files
    pipe = ms.make_pipeline(("impute", {"strategy": "median"}), "standardize",
                            ms.get_algorithm("isomap", n_neighbors=10)).fit(train[["a", "b", "c", "d"]])
    saved = _saved_chain(capsys, tmp_path)
    assert [n for n, _ in saved.steps] == ["impute", "standardize", "isomap"]
    # the training output: every row (the gap imputed, not dropped), led by the file's line numbers
    header, rows = read_csv(tmp_path / "train_map.csv")
    assert header == ["row_id", "isomap_1", "isomap_2", "kind"]
    assert [int(r[0]) for r in rows] == list(range(2, 162))
    np.testing.assert_allclose(np.array([r[1:3] for r in rows], dtype=float), pipe.embedding_, atol=1e-12)
    # apply: new columns in another order, one of them missing a value
    rc, out, err = run(capsys, "apply", "--model", tmp_path / "chain.npz", "--data", tmp_path / "new.csv",
                       "--out", tmp_path / "applied.csv", "--chunk-rows", "7")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "applied.csv")
    assert header == ["row_id", "isomap_1", "isomap_2"]
    assert [int(r[0]) for r in rows] == list(range(2, 27))
    expected = pipe.extend(new)
    assert np.isfinite(expected).all()
    np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float), expected, rtol=1e-12, atol=1e-12)


def test_apply_refuses_new_data_lacking_a_chain_column(tmp_path, capsys, chain_files):
    _saved_chain(capsys, tmp_path)
    _, new = chain_files
    new[["d", "a", "b"]].to_csv(tmp_path / "short.csv", index=False)
    rc, out, err = run(capsys, "apply", "--model", tmp_path / "chain.npz", "--data", tmp_path / "short.csv",
                       "--out", tmp_path / "no.csv")
    assert rc != 0 and "lack column 'c'" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "no.csv").exists()


def test_fit_sample_with_a_chain_keeps_column_names_and_gaps(tmp_path, capsys, chain_files):
    rc, out, err = run(capsys, "run", "kmeans", "--data", tmp_path / "train.csv", "--label-column", "kind",
                       "--prep", "impute", "--prep", "standardize", "-p", "n_clusters=2", "random_state=0",
                       "--fit-sample", "100", "--out", tmp_path / "s.csv", "--save-model", tmp_path / "s.npz")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "s.csv")
    assert header == ["row_id", "cluster", "kind", "fitted"] and len(rows) == 160
    assert sum(int(r[3]) for r in rows) == 100
    est = load_model(tmp_path / "s.npz")
    assert est.columns_in_ == ["a", "b", "c", "d"]  # named, so apply matches by name
    train, _ = chain_files
    np.testing.assert_array_equal([int(r[1]) for r in rows], est.extend(train[["d", "c", "b", "a"]]))


def test_penguins_chain_imputes_the_two_gappy_rows_and_keeps_the_row_id(tmp_path, capsys):
    rc, out, err = run(capsys, "run", "kmeans", "--data", "sample:penguins", "--prep", "impute", "--prep",
                       "standardize", "--param", "n_clusters=3", "random_state=0", "--out", tmp_path / "o.csv")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "o.csv")
    # the meta columns follow the row id (issue 33)
    assert header == ["row_id", "island", "sex", "year", "cluster", "species"] and len(rows) == 344
    ds = ms.load_data("sample:penguins", missing="keep")
    assert ds.feature_names == ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g"]
    assert {ds.table.roles[c] for c in ("island", "sex", "year")} == {"meta"}
    assert [int(r[0]) for r in rows] == list(ds.row_ids)
    gappy = np.flatnonzero(np.isnan(ds.X).any(axis=1))
    assert len(gappy) == 2 and all(rows[i][4] in {"0", "1", "2"} for i in gappy)
    pipe = ms.make_pipeline("impute", "standardize", ms.get_algorithm("kmeans", n_clusters=3, random_state=0)).fit(ds)
    np.testing.assert_array_equal([int(r[4]) for r in rows], pipe.labels_)
    assert [r[1] for r in rows] == [str(v) for v in ds.column_values("island")]
    # without impute the two rows are dropped, and the row ids show which
    rc, out, err = run(capsys, "run", "kmeans", "--data", "sample:penguins", "--prep", "standardize",
                       "--param", "n_clusters=3", "--out", tmp_path / "d.csv")
    assert rc == 0, err
    _, rows = read_csv(tmp_path / "d.csv")
    assert len(rows) == 342 and sorted(set(ds.row_ids) - {int(r[0]) for r in rows}) == sorted(ds.row_ids[gappy])


def test_select_columns_exclude_a_list_and_roles(tmp_path, capsys):
    rc, out, err = run(capsys, "run", "pca", "--data", "sample:penguins", "-D", "missing=keep",
                       "--prep", "select_columns:exclude=bill_length_mm,body_mass_g", "--prep", "impute",
                       "--role", "year=feature", "--out", tmp_path / "p.csv", "--save-model", tmp_path / "p.npz")
    assert rc == 0, err
    est = load_model(tmp_path / "p.npz")
    assert est.columns_in_ == ["bill_length_mm", "bill_depth_mm", "flipper_length_mm", "body_mass_g", "year"]
    assert est.columns_out_ == ["bill_depth_mm", "flipper_length_mm", "year"]


def test_role_and_id_column_on_a_csv(tmp_path, capsys):
    path = tmp_path / "ids.csv"
    path.write_text("key,x,y,z,grade\nk7,1,2,9,1\nk3,2,1,8,2\nk9,3,5,,1\nk1,4,4,6,3\nk5,6,1,5,2\n")
    rc, out, err = run(capsys, "run", "pca", "--data", path, "--id-column", "key", "--role", "grade=meta",
                       "--role", "z=skip", "--out", tmp_path / "o.csv", "--save-model", tmp_path / "m.npz")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "o.csv")
    assert header == ["key", "grade", "pca_1", "pca_2"]  # the meta column after the id
    assert [r[0] for r in rows] == ["k7", "k3", "k9", "k1", "k5"]  # z skipped: its gap drops no row
    assert [r[1] for r in rows] == ["1", "2", "1", "3", "2"]
    assert load_model(tmp_path / "m.npz").n_features_in_ == 2
    # apply with the id column: the output's first column is the new file's ids
    new = tmp_path / "new.csv"
    new.write_text("key,y,x\nq1,2,2\nq2,3,1\n")
    rc, out, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", new, "--id-column", "key",
                       "--out", tmp_path / "a.csv")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "a.csv")
    assert header == ["key", "pca_1", "pca_2"] and [r[0] for r in rows] == ["q1", "q2"]


@pytest.mark.parametrize("argv, message", [
    (["--prep", "standardise"], "Unknown preparation step 'standardise' in --prep standardise: available are"),
    (["--prep", "impute:strategi=median"], "Unknown parameter 'strategi' for preparation step impute: allowed are "
                                           "strategy, fill_value"),
    (["--prep", "impute:strategy=middle"], "--prep impute: Invalid value 'middle' for parameter 'strategy'"),
    (["--prep", "impute:median"], "--prep expects STEP or STEP:NAME=VALUE"),
    (["--role", "year"], "--role expects NAME=ROLE"),
    (["--role", "year=hidden"], "year"),
    (["--id-column", "x"], "--id-column does not apply to sample penguins"),
])
def test_bad_prep_and_role_values_name_what_is_allowed(tmp_path, capsys, argv, message):
    rc, out, err = run(capsys, "run", "pca", "--data", "sample:penguins", *argv, "--out", tmp_path / "o.csv")
    assert rc == 2 and message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o.csv").exists()


def test_list_shows_the_preparation_steps(capsys):
    rc, out, _ = run(capsys, "list")
    assert rc == 0
    section = out.split("Preparation steps (--prep STEP:NAME=VALUE,...)")[1].split("Loaders")[0]
    for step in ms.list_preprocessors():
        assert f"    {step} — " in section
    assert "strategy" in section and "'median'" in section
    rc, out, _ = run(capsys, "list", "--json")
    steps = {s["id"]: s for s in json.loads(out)["preprocessors"]}
    assert set(steps) == set(ms.list_preprocessors())
    assert [p["name"] for p in steps["impute"]["params"]][0] == "strategy"


def test_dask_apply_of_a_saved_chain_equals_the_pipeline(tmp_path, capsys, chain_files):
    pytest.importorskip("distributed")
    from distributed import Client, LocalCluster

    train, new = chain_files
    pipe = ms.make_pipeline(("impute", {"strategy": "median"}), "standardize",
                            ms.get_algorithm("isomap", n_neighbors=10)).fit(train[["a", "b", "c", "d"]])
    _saved_chain(capsys, tmp_path)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = Client(cluster)
    try:
        rc, out, err = run(capsys, "apply", "--model", tmp_path / "chain.npz", "--data", tmp_path / "new.csv",
                           "--dask", client.scheduler.address, "--out", tmp_path / "dask.csv")
        assert rc == 0, err
        header, rows = read_csv(tmp_path / "dask.csv")
        assert header == ["row_id", "isomap_1", "isomap_2"]
        assert [int(r[0]) for r in rows] == list(range(2, 27))
        np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float), pipe.extend(new),
                                   rtol=1e-12, atol=1e-12)
        (tmp_path / "short.csv").write_text(new[["a", "b", "d"]].to_csv(index=False))
        rc, out, err = run(capsys, "apply", "--model", tmp_path / "chain.npz", "--data", tmp_path / "short.csv",
                           "--dask", client.scheduler.address, "--out", tmp_path / "no.csv")
        assert rc != 0 and "lacks column 'c'" in err
    finally:
        client.close()
        cluster.close()


def test_run_extend_pushes_the_other_file_through_the_chain(tmp_path, capsys, chain_files):
    train, new = chain_files
    rc, out, err = run(capsys, "run", "isomap", "--data", tmp_path / "train.csv", "--role", "kind=target",
                       "--prep", "impute:strategy=median", "--prep", "standardize", "-p", "n_neighbors=10",
                       "--out", tmp_path / "t.csv", "--extend", tmp_path / "new.csv", "--extend-out", tmp_path / "e.csv")
    assert rc == 0, err
    pipe = ms.make_pipeline(("impute", {"strategy": "median"}), "standardize",
                            ms.get_algorithm("isomap", n_neighbors=10)).fit(train[["a", "b", "c", "d"]])
    header, rows = read_csv(tmp_path / "e.csv")
    assert header == ["row_id", "isomap_1", "isomap_2"] and [int(r[0]) for r in rows] == list(range(2, 27))
    np.testing.assert_allclose(np.array([r[1:] for r in rows], dtype=float), pipe.extend(new), rtol=1e-12, atol=1e-12)


def test_run_with_a_chain_and_default_seed_gives_the_session_labels(tmp_path, capsys):
    """``run`` fits through the session lifecycle, as ``Session.run`` does: with the same chain and
    the seeds left at their defaults it gives the labels the window and the API give (issue 30)."""
    from manifold_studio.session.model import Session

    rc, out, err = run(capsys, "run", "kmeans", "--data", "sample:wine", "--prep", "standardize",
                       "-p", "n_clusters=3", "--out", tmp_path / "k.csv")
    assert rc == 0, err
    header, rows = read_csv(tmp_path / "k.csv")
    cli_labels = np.array([float(r[header.index("cluster")]) for r in rows])
    s = Session()
    s.load("sample:wine")
    r = s.run("kmeans", chain=[("standardize", {"with_mean": True, "with_std": True})], n_clusters=3)
    assert r.params["random_state"] == 0 and r.summary["random_state_used"] == 0  # the default seed, as in the form
    np.testing.assert_array_equal(cli_labels, r.labels)


@pytest.mark.parametrize("extra", [[], ["--fit-sample", "90", "--sample-seed", "4"]])
def test_run_fits_through_prepare_fit_and_writes_the_runs_results(tmp_path, capsys, monkeypatch, extra):
    """``run`` records its fit as a session run made by ``prepare_fit`` (roles, chain, parameters and
    seed), and what it writes is that run's labels (and with --fit-sample the rows it fitted)."""
    import manifold_studio.cli.session_fit as session_fit
    from manifold_studio.session.records import DONE

    jobs = []

    def recording(*a, **kw):
        jobs.append(prepare_fit(*a, **kw))
        return jobs[-1]
    prepare_fit = session_fit.prepare_fit
    monkeypatch.setattr(session_fit, "prepare_fit", recording)
    rc, out, err = run(capsys, "run", "kmeans", "--data", "sample:wine", "--prep", "standardize", "--role",
                       "proline=skip", "-p", "n_clusters=3", "--out", tmp_path / "k.csv", *extra)
    assert rc == 0, err
    assert len(jobs) == 1
    session, r = jobs[0].session, jobs[0].run
    assert r.status == DONE and r.algorithm_id == "kmeans" and r.params["n_clusters"] == 3
    assert r.params["random_state"] == 0  # the default seed, as the form shows it
    assert [step for step, _ in r.meta["chain"]] == [step for step, _ in session.chain] == ["standardize"]
    ds = session.dataset(r.dataset_name)
    assert "proline" not in ds.feature_names and ds.n_features == 12  # the --role reached the session's data set
    header, rows = read_csv(tmp_path / "k.csv")
    np.testing.assert_array_equal([int(row[header.index("cluster")]) for row in rows], r.labels)
    if extra:
        fitted = np.array([int(row[header.index("fitted")]) for row in rows])
        assert fitted.sum() == 90 and np.flatnonzero(fitted).tolist() == r.meta["fitted_rows"]
