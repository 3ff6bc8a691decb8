"""Extension on Dask (issue 13): a real LocalCluster (2 worker processes), results equal to a
single-process extend, a worker killed mid-job, inputs/outputs, and the failure messages."""
import os
import signal
import sys
import time

import numpy as np
import pytest

pytest.importorskip("dask.array", reason="the [dask] extra is part of the test extras")
import dask.array as da  # noqa: E402
import pandas as pd  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.cli.main import main as cli_main  # noqa: E402
from manifold_studio.extend.dask_extend import (  # noqa: E402
    MissingExtraError, connect, extend_dask, read_input, require_dask, write_output,
)
from manifold_studio.errors import DataError  # noqa: E402

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def client():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    c = Client(cluster)
    yield c
    c.close()
    cluster.close()


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    centres = np.array([[0, 0, 0, 0], [2.5, 2.5, 0, 0], [0, 2.5, 2.5, 2.5]], dtype=float)
    y = rng.integers(0, 3, size=600)
    X = centres[y] + rng.normal(size=(600, 4))
    new = centres[rng.integers(0, 3, size=20_000)] + rng.normal(size=(20_000, 4))
    return X, y, new


def _classifier_id():
    for cid in ("perceptron", "linear_classifier", "svm", "mlp"):
        if cid in ms.list_algorithms():
            return cid
    return None


@pytest.mark.parametrize("algorithm_id, params", [("isomap", {"n_neighbors": 8}), ("kmeans", {"n_clusters": 3}),
                                                  ("classifier", {})])
def test_distributed_extension_equals_a_single_process_extend(client, data, algorithm_id, params):
    X, y, new = data
    if algorithm_id == "classifier":
        algorithm_id = _classifier_id()
        if algorithm_id is None:
            pytest.skip("no classifier plugin installed")
    est = ms.get_algorithm(algorithm_id, **params)
    est.fit(X, y if est.requires_labels else None)
    result = extend_dask(est, da.from_array(new, chunks=(1500, 4)))
    got = result.compute()
    expected = np.asarray(est.extend(new))
    assert got.shape == expected.shape and got.dtype == expected.dtype
    if got.dtype.kind == "f":
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-12)
    else:
        np.testing.assert_array_equal(got, expected)


def test_the_model_travels_without_pickle(client, data, monkeypatch):
    X, _y, new = data
    est = ms.get_algorithm("pca", n_components=2).fit(X)

    def refuse(*_a, **_k):
        raise AssertionError("the estimator was pickled")

    monkeypatch.setattr(type(est), "__reduce_ex__", refuse, raising=False)
    got = extend_dask(est, da.from_array(new, chunks=(5000, 4))).compute()
    np.testing.assert_allclose(got, est.extend(new), rtol=1e-12, atol=1e-12)


def test_a_worker_killed_mid_job_still_gives_the_complete_result(client, data):
    X, _y, _new = data
    rng = np.random.default_rng(5)
    est = ms.get_algorithm("isomap", n_neighbors=10).fit(np.vstack([X] * 3) + rng.normal(size=(1800, 4)) * 0.1)
    big = rng.normal(size=(60_000, 4)) * 3
    result = extend_dask(est, da.from_array(big, chunks=(1500, 4)))
    future = client.compute(result)
    time.sleep(0.5)
    assert not future.done(), "the job finished before a worker could be killed: make it longer"
    victim = sorted(client.scheduler_info()["workers"])[0]
    pid = client.run(os.getpid, workers=[victim])[victim]
    os.kill(pid, signal.SIGKILL)  # the worker process dies at once, its tasks with it
    got = future.result(timeout=240)
    assert victim not in client.scheduler_info()["workers"]  # it did die (its nanny started a new one)
    np.testing.assert_allclose(got, est.extend(big), rtol=1e-12, atol=1e-12)


def test_inputs_parquet_npy_parts_csv_and_zarr(client, tmp_path, data):
    X, y, _new = data
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["label"] = np.array(["x", "y", "z"])[y]
    for i in range(3):
        frame.iloc[i * 200:(i + 1) * 200].to_parquet(tmp_path / f"p{i}.parquet")
        np.save(tmp_path / f"n{i}.npy", X[i * 200:(i + 1) * 200])
        frame.iloc[i * 200:(i + 1) * 200].to_csv(tmp_path / f"c{i}.csv", index=False)
    Xp, labels, names = read_input(str(tmp_path / "p*.parquet"), "label")
    assert names == list("abcd")
    np.testing.assert_array_equal(Xp.compute(), X)
    assert list(labels.compute()[:3]) == list(frame["label"][:3])
    Xn, none, _ = read_input(str(tmp_path / "n*.npy"))
    assert none is None
    np.testing.assert_array_equal(Xn.compute(), X)
    Xc, labels_c, _ = read_input(str(tmp_path / "c*.csv"), "label")
    np.testing.assert_allclose(Xc.compute(), X, rtol=1e-15)
    zarr = pytest.importorskip("zarr")
    del zarr
    da.from_array(X, chunks=(100, 4)).to_zarr(str(tmp_path / "x.zarr"))
    np.testing.assert_array_equal(read_input(str(tmp_path / "x.zarr"))[0].compute(), X)
    # bad inputs
    np.save(tmp_path / "n9.npy", np.zeros((5, 3)))
    with pytest.raises(DataError, match="n9.npy has 3 column"):
        read_input(str(tmp_path / "n*.npy"))
    with pytest.raises(DataError, match="No file matches"):
        read_input(str(tmp_path / "nothing*.parquet"))
    with pytest.raises(DataError, match="no column 'species'"):
        read_input(str(tmp_path / "p*.parquet"), "species")


def test_outputs_parquet_npy_csv_and_parts(client, tmp_path, data):
    X, _y, new = data
    km = ms.get_algorithm("kmeans", n_clusters=3).fit(X)
    result = extend_dask(km, da.from_array(new[:3000], chunks=(700, 4)))
    expected = km.extend(new[:3000])
    write_output(result, str(tmp_path / "r.parquet"), "kmeans", "clustering")
    np.testing.assert_array_equal(pd.read_parquet(tmp_path / "r.parquet")["cluster"].to_numpy(), expected)
    write_output(result, str(tmp_path / "r.npy"), "kmeans", "clustering")
    np.testing.assert_array_equal(np.load(tmp_path / "r.npy"), expected)
    ids = da.arange(3000, chunks=700)
    for ext in ("feather", "arrow"):   # one Arrow IPC file, a record batch per partition, renamed at the end
        write_output(result, str(tmp_path / f"r.{ext}"), "kmeans", "clustering", row_ids=ids)
        frame = pd.read_feather(tmp_path / f"r.{ext}")
        assert list(frame.columns) == ["row_id", "cluster"]
        np.testing.assert_array_equal(frame["cluster"].to_numpy(), expected)
        np.testing.assert_array_equal(frame["row_id"].to_numpy(), np.arange(3000))
    assert not list(tmp_path.glob(".*partial*")) and not list(tmp_path.glob("*.tmp"))
    write_output(result, str(tmp_path / "r.csv"), "kmeans", "clustering")
    assert (tmp_path / "r.csv").read_text().splitlines()[0] == "cluster"
    write_output(result, str(tmp_path / "parts"), "kmeans", "clustering")
    np.testing.assert_array_equal(da.from_npy_stack(str(tmp_path / "parts")).compute(), expected)
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    real_access = os.access
    try:
        # root can write anywhere: let os.access answer as it would for an ordinary user
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(os, "access", lambda path, mode: False if str(path) == str(locked) else real_access(path, mode))
            with pytest.raises(DataError, match="not writable"):
                write_output(result, str(locked / "r.npy"))
        assert list(locked.iterdir()) == []
    finally:
        locked.chmod(0o700)


def test_command_line_run_fit_sample_and_apply_on_dask(client, tmp_path, data, capsys):
    X, y, _new = data
    frame = pd.DataFrame(X, columns=list("abcd"))
    frame["label"] = y
    for i in range(2):
        frame.iloc[i * 300:(i + 1) * 300].to_parquet(tmp_path / f"p{i}.parquet")
    address = client.scheduler.address
    rc = cli_main(["run", "isomap", "--data", str(tmp_path / "p*.parquet"), "--label-column", "label",
                   "--fit-sample", "200", "--dask", address, "--out", str(tmp_path / "map.parquet"),
                   "--save-model", str(tmp_path / "iso.npz")])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert "fitted on a sample of 200 of 600 rows drawn by Dask" in out
    assert cli_main(["apply", "--model", str(tmp_path / "iso.npz"), "--data", str(tmp_path / "p*.parquet"),
                     "--dask", address, "--out", str(tmp_path / "again.npy")]) == 0
    from manifold_studio.files.model_file import load_model

    est = load_model(tmp_path / "iso.npz")
    np.testing.assert_allclose(np.load(tmp_path / "again.npy"), est.extend(X), rtol=1e-12, atol=1e-12)
    mapped = pd.read_parquet(tmp_path / "map.parquet")
    assert list(mapped.columns) == ["row_id", "isomap_1", "isomap_2", "label"]
    np.testing.assert_array_equal(mapped["row_id"].to_numpy(), np.arange(600))  # positions over the parts
    np.testing.assert_allclose(mapped[["isomap_1", "isomap_2"]].to_numpy(), est.extend(X), rtol=1e-12, atol=1e-12)
    assert cli_main(["run", "isomap", "--data", str(tmp_path / "p*.parquet"), "--dask", address,
                     "--out", str(tmp_path / "x.parquet")]) != 0
    assert "give --fit-sample M" in capsys.readouterr().err
    # the local reader's options are refused on Dask, never silently ignored
    for extra in (["--chunk-rows", "10"], ["--data-option", "delimiter=;"]):
        assert cli_main(["apply", "--model", str(tmp_path / "iso.npz"), "--data", str(tmp_path / "p*.parquet"),
                         "--dask", address, "--out", str(tmp_path / "no.npy"), *extra]) == 2
        assert f"{extra[0]} do not apply with --dask" in capsys.readouterr().err
    assert not (tmp_path / "no.npy").exists()


def test_the_dask_path_sends_the_model_file_bytes_as_they_are(client, tmp_path, data, monkeypatch):
    """apply --dask reads the model file once and ships its bytes: no second serialisation."""
    from manifold_studio.extend import dask_extend
    from manifold_studio.files.model_file import save_model

    X, _y, _new = data
    est = ms.get_algorithm("pca", n_components=2).fit(X)
    save_model(est, tmp_path / "pca.npz", data={"feature_names": list("abcd")})
    pd.DataFrame(X, columns=list("abcd"))[list("dcba")].to_parquet(tmp_path / "new.parquet")  # other order
    monkeypatch.setattr(dask_extend, "model_bytes", lambda model: pytest.fail("the model was serialised again"))
    assert cli_main(["apply", "--model", str(tmp_path / "pca.npz"), "--data", str(tmp_path / "new.parquet"),
                     "--dask", client.scheduler.address, "--out", str(tmp_path / "p.npy")]) == 0
    np.testing.assert_allclose(np.load(tmp_path / "p.npy"), est.extend(X), rtol=1e-12, atol=1e-12)


def _table_with_ids_and_metas(X, y) -> pd.DataFrame:
    """A table with an id column, a text and a categorical meta column (one cell missing, one
    that a spreadsheet would run as a formula), four features and a text label."""
    n = X.shape[0]
    frame = pd.DataFrame({"cell": [f"c{i:04d}" for i in range(n)],
                          "batch": np.array(["b0", "b1", "=b2"], dtype=object)[np.arange(n) % 3]})
    frame.loc[5, "batch"] = None
    for j, name in enumerate("abcd"):
        frame[name] = X[:, j]
    frame["kind"] = np.array(["x", "y", "z"])[y]
    return frame


def _in_memory_and_dask(client, tmp_path, data, suffix: str, variants):
    """apply without and with --dask on the table of :func:`_table_with_ids_and_metas`, for each
    variant of options; the two outputs agree column for column."""
    from manifold_studio.files.model_file import save_model

    X, y, _new = data
    frame = _table_with_ids_and_metas(X, y)
    source = tmp_path / f"t{suffix}"
    frame.to_csv(source, index=False) if suffix == ".csv" else frame.to_parquet(source, index=False)
    est = ms.get_algorithm("pca", n_components=2).fit(X)
    save_model(est, tmp_path / "pca.npz", data={"feature_names": list("abcd")})
    address = client.scheduler.address
    for extra in variants:
        base = ["apply", "--model", str(tmp_path / "pca.npz"), "--data", str(source), "--label-column", "kind",
                "--quiet", *extra]
        assert cli_main(base + ["--out", str(tmp_path / "memory.csv")]) == 0
        assert cli_main(base + ["--dask", address, "--out", str(tmp_path / "dask.csv")]) == 0
        memory = pd.read_csv(tmp_path / "memory.csv", keep_default_na=False)
        on_dask = pd.read_csv(tmp_path / "dask.csv", keep_default_na=False)
        ids = "cell" if extra[:1] == ["--id-column"] else "row_id"
        metas = [] if extra == ["--no-metas"] else [m for m in ("cell", "batch") if m != ids]
        assert list(on_dask.columns) == list(memory.columns) == [ids, *metas, "pca_1", "pca_2", "kind"]
        first = {".csv": 2, ".parquet": 1}[suffix]
        expected_ids = frame["cell"].to_numpy() if ids == "cell" else np.arange(first, first + len(frame))
        np.testing.assert_array_equal(on_dask[ids].to_numpy(), expected_ids)
        np.testing.assert_array_equal(memory[ids].to_numpy(), expected_ids)
        for m in [*metas, "kind"]:
            np.testing.assert_array_equal(on_dask[m].to_numpy(), memory[m].to_numpy())
        if "batch" in metas:
            assert on_dask["batch"][5] == "" and on_dask["batch"][2] == "'=b2"  # missing; formula escaped
        np.testing.assert_allclose(on_dask[["pca_1", "pca_2"]].to_numpy(), est.extend(X), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(on_dask[["pca_1", "pca_2"]].to_numpy(), memory[["pca_1", "pca_2"]].to_numpy(),
                                   rtol=1e-12, atol=1e-12)


def test_apply_on_dask_writes_the_row_ids_and_metas_of_the_in_memory_path(client, tmp_path, data):
    """Issue 33, item 8: the --dask output of a CSV file has the in-memory output's row ids (the
    line numbers), its meta columns after them, and the same numbers."""
    _in_memory_and_dask(client, tmp_path, data, ".csv", [[]])


@pytest.mark.slow
@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_apply_on_dask_agrees_with_the_in_memory_path_on_ids_metas_and_no_metas(client, tmp_path, data, suffix):
    """The same for a Parquet file (row numbers 1, 2, ...), with --id-column (its values) and with
    --no-metas (no meta column)."""
    _in_memory_and_dask(client, tmp_path, data, suffix, [[], ["--id-column", "cell"], ["--no-metas"]])


def test_a_scheduler_that_does_not_answer_is_reported_quickly():
    start = time.monotonic()
    with pytest.raises(DataError, match="does not answer"):
        connect("tcp://127.0.0.1:9", timeout=2)
    assert time.monotonic() - start < 15


def test_a_missing_extra_names_the_pip_command(monkeypatch):
    monkeypatch.setitem(sys.modules, "dask.array", None)
    with pytest.raises(MissingExtraError, match=r'pip install "manifold-studio\[dask\]"'):
        require_dask()


def test_a_model_whose_plugin_is_missing_on_the_workers_is_named(client, data):
    """A plugin registered only in this process (not installed where the workers run): the
    workers cannot rebuild the model, and the error says which algorithm is missing."""
    import broken_plugins as bp
    from manifold_studio.hookspecs import hookimpl
    from manifold_studio.plugins.host import PluginHost, get_host, reset_host

    class Plugin:
        @hookimpl
        def register_algorithms(self):
            return [bp.Slow]

    old = get_host()
    host = PluginHost().discover()
    host.register(Plugin(), name="only-here")
    reset_host(host)
    try:
        X, _y, new = data
        est = ms.get_algorithm("slow_partial", steps=1).fit(X)
        with pytest.raises(Exception, match="slow_partial.*no loaded plugin provides"):
            extend_dask(est, da.from_array(new[:100], chunks=(50, 4))).compute()
    finally:
        reset_host(old)
