"""Out-of-core extension: chunked readers agree with whole-file reading, results agree with a
single extend, memory stays bounded, cancel leaves nothing behind (issue 13, one machine)."""
import tracemalloc

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.algorithms import FitCancelled
from manifold_studio.algorithms.conformance import CancelAfter
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError
from manifold_studio.extend.out_of_core import extend_source, iter_source


def _write_csv(path, X, labels=None, sep=",", decimal="."):
    names = [f"f{j}" for j in range(X.shape[1])] + (["y"] if labels is not None else [])
    lines = [sep.join(names)]
    for i, row in enumerate(X):
        cells = [repr(float(v)).replace(".", decimal) for v in row]
        if labels is not None:
            cells.append(str(labels[i]))
        lines.append(sep.join(cells))
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def fitted_pca():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 5))
    return ms.get_algorithm("pca", n_components=2).fit(X), rng


@pytest.mark.parametrize("chunk_rows", [1, 7, 100, 10_000])
def test_csv_chunks_agree_with_reading_the_whole_file(tmp_path, chunk_rows):
    rng = np.random.default_rng(1)
    X = rng.normal(size=(53, 3))
    y = rng.choice(["a", "b"], size=53)
    path = _write_csv(tmp_path / "d.csv", X, y, sep=";", decimal=",")
    text = path.read_text().splitlines()
    text[10] = "NA;1,0;2,0;a"  # a missing cell: the row is dropped, in both readings
    path.write_text("\n".join(text) + "\n")
    whole = ms.load_data(str(path), label_column="y")
    chunks = [ds for _part, ds in iter_source(str(path), ms._host(), {"label_column": "y"}, chunk_rows)]
    np.testing.assert_array_equal(np.vstack([c.X for c in chunks]), whole.X)
    np.testing.assert_array_equal(np.concatenate([c.labels for c in chunks]), whole.labels)
    notes = [r for c in chunks for r in c.report]
    assert any("dropped: line 11 ('f0')" in r for r in notes)  # the file's own line number
    assert sum("uses decimal commas" in r for r in notes) == 3  # said once per column


def test_text_in_a_numeric_column_after_the_first_chunk_names_its_line(tmp_path):
    X = np.arange(40.0).reshape(20, 2)
    path = _write_csv(tmp_path / "d.csv", X)
    lines = path.read_text().splitlines()
    lines[15] = "oops,3.0"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(DataError, match=r"d\.csv, line 16: column 'f0' holds 'oops'"):
        list(iter_source(str(path), ms._host(), {}, 5))


def test_npy_is_read_in_chunks_and_npy_output_matches_one_extend(tmp_path, fitted_pca):
    pca, rng = fitted_pca
    X = rng.normal(size=(1234, 5))
    np.save(tmp_path / "big.npy", X)
    rep = extend_source(pca, str(tmp_path / "big.npy"), out=str(tmp_path / "map.npy"), chunk_rows=100)
    assert rep.n_rows == 1234 and rep.n_chunks == 13 and "100 rows at a time" in rep.notes[0]
    np.testing.assert_allclose(np.load(tmp_path / "map.npy"), pca.extend(X), rtol=1e-12, atol=1e-12)


def test_folder_and_glob_of_parts_with_csv_output(tmp_path, fitted_pca):
    pca, rng = fitted_pca
    parts = tmp_path / "parts"
    parts.mkdir()
    Xs = [rng.normal(size=(n, 5)) for n in (30, 1, 45)]
    for i, X in enumerate(Xs):
        np.save(parts / f"part_{i}.npy", X)
    (parts / "README.md").write_text("not a part")
    expected = pca.extend(np.vstack(Xs))
    for source in (str(parts), str(parts / "part_*.npy")):
        rep = extend_source(pca, source, out=str(tmp_path / "out.csv"), chunk_rows=20, keep_values=True)
        assert len(rep.parts) == 3 and rep.n_rows == 76
        # sample-wise: the same numbers as one extend, up to BLAS blocking (1e-12)
        np.testing.assert_allclose(rep.values, expected, rtol=1e-12, atol=1e-12)
        got = np.loadtxt(tmp_path / "out.csv", delimiter=",", skiprows=1)
        assert (tmp_path / "out.csv").read_text().startswith("row_id,")
        np.testing.assert_array_equal(got[:, 0], np.arange(76))  # positions over all the parts: unique
        np.testing.assert_array_equal(got[:, 1:], rep.values)  # repr() of floats: exact round trip
    np.save(parts / "part_9.npy", rng.normal(size=(3, 4)))
    with pytest.raises(DataError, match="part_9.npy has 4 column"):
        extend_source(pca, str(parts), out=str(tmp_path / "out.csv"))
    with pytest.raises(DataError, match="No file matches"):
        extend_source(pca, str(tmp_path / "nothing_*.npy"))


def test_memory_stays_bounded_by_the_chunk(tmp_path, fitted_pca):
    pca, rng = fitted_pca
    X = rng.normal(size=(400_000, 5))  # 16 MB
    np.save(tmp_path / "big.npy", X)
    del X
    tracemalloc.start()
    try:
        rep = extend_source(pca, str(tmp_path / "big.npy"), out=str(tmp_path / "map.npy"), chunk_rows=20_000)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert rep.n_rows == 400_000
    assert peak < 6e6, f"peak {peak / 1e6:.1f} MB for a 16 MB file read 0.8 MB at a time"


def test_cancel_leaves_no_output_and_keeps_an_old_file(tmp_path, fitted_pca):
    pca, rng = fitted_pca
    np.save(tmp_path / "big.npy", rng.normal(size=(1000, 5)))
    out = tmp_path / "map.csv"
    out.write_text("old result\n")
    with pytest.raises(FitCancelled):
        extend_source(pca, str(tmp_path / "big.npy"), out=str(out), chunk_rows=100, progress=CancelAfter(3))
    assert out.read_text() == "old result\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.npy", "map.csv"]  # no partial file left


def test_command_line_apply_streams_a_csv_with_labels(tmp_path, capsys):
    rng = np.random.default_rng(2)
    X = np.vstack([rng.normal(size=(60, 3)), rng.normal(size=(60, 3)) + 4])
    y = np.repeat(["low", "high"], 60)
    train = _write_csv(tmp_path / "train.csv", X, y)
    model = tmp_path / "m.npz"
    assert cli_main(["run", "kmeans", "--data", str(train), "--label-column", "y", "--param", "n_clusters=2",
                     "--out", str(tmp_path / "t.csv"), "--save-model", str(model)]) == 0
    big = _write_csv(tmp_path / "big.csv", np.vstack([X] * 5), np.concatenate([y] * 5))
    capsys.readouterr()
    assert cli_main(["apply", "--model", str(model), "--data", str(big), "--label-column", "y",
                     "--out", str(tmp_path / "big_map.csv"), "--chunk-rows", "50"]) == 0
    out = capsys.readouterr().out
    assert "applied to big (600 points, 12 chunk(s))" in out and "peak memory" in out
    lines = (tmp_path / "big_map.csv").read_text().splitlines()
    assert lines[0] == "row_id,cluster,y" and len(lines) == 601
    assert [int(ln.split(",")[0]) for ln in lines[1:]] == list(range(2, 602))  # big.csv's line numbers
    est = ms.get_algorithm("kmeans", n_clusters=2)
    from manifold_studio.files.model_file import load_model

    est = load_model(model)
    assert [ln.split(",")[1] for ln in lines[1:121]] == [str(v) for v in est.extend(X)]
    assert cli_main(["apply", "--model", str(model), "--data", str(big), "--out", "x.csv",
                     "--chunk-rows", "0"]) != 0


def test_the_windows_extend_to_a_file_streams_and_keeps_only_small_files(tmp_path, fitted_pca):
    from manifold_studio.extend.tasks import load_and_extend

    pca, rng = fitted_pca
    X = rng.normal(size=(500, 5))
    np.save(tmp_path / "new.npy", X)
    small = load_and_extend(str(tmp_path / "new.npy"), pca, ms._host())
    assert small.dataset is not None and small.dataset.X.shape == (500, 5)
    np.testing.assert_allclose(small.values, pca.extend(X), rtol=1e-12, atol=1e-12)
    big = load_and_extend(str(tmp_path / "new.npy"), pca, ms._host(), keep_data_mb=0.001)
    assert big.dataset is None and big.label == "new.npy" and big.values.shape == (500, 2)
    assert any("not kept as a data set" in n for n in big.notes)


def test_special_files_are_written_in_place_not_replaced(tmp_path, fitted_pca):
    """--out /dev/null or a named pipe: written into, never renamed over (that once replaced
    /dev/null with a regular file)."""
    import os
    import stat
    import threading

    pca, rng = fitted_pca
    np.save(tmp_path / "x.npy", rng.normal(size=(30, 5)))
    for command in (["apply", "--model", None, "--data", str(tmp_path / "x.npy")],
                    ["run", "pca", "--data", "sample:iris"]):
        fifo = tmp_path / "pipe.csv"
        os.mkfifo(fifo)
        received = []
        reader = threading.Thread(target=lambda: received.append(fifo.read_text()))
        reader.start()
        if command[0] == "apply":
            from manifold_studio.files.model_file import save_model

            command[2] = str(save_model(pca, tmp_path / "m.npz"))
        assert cli_main(command + ["--out", str(fifo)]) == 0
        reader.join(10)
        assert stat.S_ISFIFO(os.stat(fifo).st_mode)  # still the pipe
        assert received and received[0].count("\n") in (31, 151)
        fifo.unlink()


def test_npy_chunks_fortran_order_float32_and_truncation(tmp_path):
    X = np.arange(60.0).reshape(20, 3)
    np.save(tmp_path / "f.npy", np.asfortranarray(X))
    np.save(tmp_path / "s.npy", X.astype(np.float32))
    for name in ("f.npy", "s.npy"):
        chunks = [ds.X for _p, ds in iter_source(str(tmp_path / name), ms._host(), {}, 7)]
        np.testing.assert_array_equal(np.vstack(chunks), X)
    raw = (tmp_path / "s.npy").read_bytes()
    (tmp_path / "t.npy").write_bytes(raw[:-20])
    with pytest.raises(DataError, match=r"t\.npy (is truncated|cannot be read)"):
        list(iter_source(str(tmp_path / "t.npy"), ms._host(), {}, 7))


@pytest.mark.parametrize("algo,params", [("pca", {"n_components": 2}), ("kmeans", {"n_clusters": 2}),
                                         ("svm", {}), ("spectral_clustering", {"n_clusters": 2})])
def test_extend_to_a_sparse_file_keeps_its_rows_sparse(tmp_path, algo, params):
    """The window's Extend ▸ file and ``run --extend`` read a Matrix Market file in chunks: the
    values are the model's extension of the rows, and the rows kept as a data set stay sparse
    (their size used to be asked of ``nbytes``, which a sparse matrix lacks: every method failed)."""
    import scipy.io
    import scipy.sparse as sp

    from manifold_studio.extend.tasks import load_and_extend

    rng = np.random.default_rng(0)
    X = sp.random(60, 30, density=0.2, random_state=0, format="csr") * 4.0
    y = rng.integers(0, 2, 60)
    X = sp.csr_matrix(X + sp.csr_matrix((y[:, None] * np.eye(1, 30, 0)) * 3.0))
    new = sp.csr_matrix(sp.random(25, 30, density=0.2, random_state=1, format="csr") * 4.0)
    scipy.io.mmwrite(tmp_path / "new.mtx", new)
    est = ms.get_algorithm(algo, **params).fit(X, y)
    res = load_and_extend(str(tmp_path / "new.mtx"), est)
    np.testing.assert_allclose(np.asarray(res.values, dtype=float), np.asarray(est.extend(new), dtype=float),
                               rtol=1e-12, atol=1e-12)
    assert sp.issparse(res.dataset.X) and res.dataset.X.shape == (25, 30)
    np.testing.assert_array_equal(res.dataset.X.toarray(), new.toarray())
