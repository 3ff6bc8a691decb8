"""AnnData (.h5ad) in and out: the loader plugin, the writer, the command line round trip and the
bad inputs of issue 32, on tiny files written with anndata itself (the reference reader)."""
import sys
import warnings

import numpy as np
import pytest

anndata = pytest.importorskip("anndata")
h5py = pytest.importorskip("h5py")
import pandas as pd  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.cli.main import main  # noqa: E402
from manifold_studio.errors import DataError, WriteError  # noqa: E402
from manifold_studio.files.anndata_out import add_to_h5ad, write_h5ad  # noqa: E402

N, D = 60, 25


def make_adata(seed=0, sparse=True, **extra):
    rng = np.random.default_rng(seed)
    counts = rng.negative_binomial(2, 0.5, size=(N, D)).astype(np.float32)
    counts[rng.random((N, D)) < 0.5] = 0
    X = sp.csr_matrix(counts) if sparse else counts
    obs = pd.DataFrame({"cell_type": pd.Categorical(rng.choice(["T", "B", "NK"], N)),
                        "n_counts": counts.sum(axis=1).astype(np.float64)},
                       index=[f"cell{i}" for i in range(N)])
    var = pd.DataFrame(index=[f"gene{j}" for j in range(D)])
    kw = dict(obsm={"X_umap": rng.normal(size=(N, 2)), "X_pca": rng.normal(size=(N, 5))},
              layers={"counts": X.copy()})
    kw.update(extra)
    return anndata.AnnData(X, obs=obs, var=var, **kw)


def write(adata, path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        adata.write_h5ad(path)
    return path


@pytest.fixture
def h5ad(tmp_path):
    return write(make_adata(), tmp_path / "cells.h5ad")


def test_reads_x_sparse_names_obs_and_maps(h5ad):
    ref = anndata.read_h5ad(h5ad)
    ds = ms.load_data(str(h5ad), label_column="cell_type")
    assert ds.is_sparse and ds.X.format == "csr"
    np.testing.assert_array_equal(ds.X.toarray(), ref.X.toarray().astype(np.float64))
    assert ds.feature_names == list(ref.var_names)
    assert list(ds.row_ids) == list(ref.obs_names)
    assert list(ds.labels) == list(ref.obs["cell_type"].astype(str))
    roles = {c.name: (c.type, c.role) for c in ds.columns}
    assert roles == {"cell_type": ("categorical", "target"), "n_counts": ("numeric", "meta")}
    np.testing.assert_allclose(ds.column_values("n_counts"), ref.obs["n_counts"].to_numpy())
    assert set(ds.ready_maps) == {"X_umap", "X_pca"}
    np.testing.assert_array_equal(ds.ready_maps["X_umap"], ref.obsm["X_umap"])
    by_index = ms.load_data(str(h5ad), label_column="0")   # --label-column 0, as for a CSV file
    assert by_index.label_name == "cell_type" and list(by_index.labels) == list(ds.labels)
    with pytest.raises(DataError, match="obs has no column 7 \\(it has 2 columns\\)"):
        ms.load_data(str(h5ad), label_column="7")
    # a subset keeps its maps' rows; a new target changes the labels, not X
    sub = ds.subset(np.arange(10, 20))
    np.testing.assert_array_equal(sub.ready_maps["X_pca"], ref.obsm["X_pca"][10:20])
    X_before = ds.X.copy()
    ds.set_target(None)
    assert ds.labels is None and (ds.X != X_before).nnz == 0
    with pytest.raises(DataError, match="cannot become features"):
        ds.set_role("n_counts", "feature")


def test_dense_x_and_a_layer(tmp_path):
    adata = make_adata(sparse=False)
    adata.obsm["X_one"] = np.ones((N, 1))   # one column: not a map (noted)
    adata.layers["counts"] = sp.csr_matrix(adata.X)
    path = write(adata, tmp_path / "dense.h5ad")
    ds = ms.load_data(str(path))
    assert not ds.is_sparse and ds.labels is None
    assert set(ds.ready_maps) == {"X_umap", "X_pca"} and any("obsm['X_one']" in r for r in ds.report)
    layer = ms.load_data(str(path), layer="counts")
    assert layer.is_sparse
    np.testing.assert_array_equal(layer.X.toarray(), ds.X)


def test_backed_sample_and_chunks(h5ad):
    ref = anndata.read_h5ad(h5ad)
    ds = ms.load_data(str(h5ad), backed=True, sample_rows=17, random_state=3)
    assert ds.n_samples == 17
    rows = [list(ref.obs_names).index(r) for r in ds.row_ids]
    assert rows == sorted(rows)
    np.testing.assert_array_equal(ds.X.toarray(), ref.X[rows].toarray())
    np.testing.assert_array_equal(ds.ready_maps["X_umap"], ref.obsm["X_umap"][rows])
    loader = ms._host().loader_for(str(h5ad))
    chunks = list(loader.iter_chunks(h5ad, 25, label_column="cell_type"))
    assert [c.n_samples for c in chunks] == [25, 25, 10]
    np.testing.assert_array_equal(sp.vstack([c.X for c in chunks]).toarray(), ref.X.toarray())
    assert list(np.concatenate([c.labels for c in chunks])) == list(ref.obs["cell_type"].astype(str))


def test_round_trip_through_the_command_line(h5ad, tmp_path, capsys):
    before = anndata.read_h5ad(h5ad)
    out = tmp_path / "result.h5ad"
    assert main(["run", "pca", "--data", str(h5ad), "--out", str(out), "-q"]) == 0
    csv_out = tmp_path / "result.csv"
    assert main(["run", "pca", "--data", str(h5ad), "--out", str(csv_out), "--no-metas", "-q"]) == 0
    expected = np.loadtxt(csv_out, delimiter=",", skiprows=1, usecols=(1, 2))
    after = anndata.read_h5ad(out)
    np.testing.assert_allclose(after.obsm["X_pca"], expected, rtol=1e-12, atol=1e-12)
    assert after.X.dtype == before.X.dtype
    with h5py.File(h5ad) as a, h5py.File(out) as b:  # X byte for byte: its three arrays
        for key in ("data", "indices", "indptr"):
            assert a["X"][key][()].tobytes() == b["X"][key][()].tobytes()
    np.testing.assert_array_equal(after.obsm["X_umap"], before.obsm["X_umap"])   # the rest is kept
    assert list(after.obs["cell_type"]) == list(before.obs["cell_type"])
    # cluster labels added to the same file in place
    assert main(["run", "kmeans", "-p", "n_clusters=3", "random_state=0", "--data", str(out), "--out", str(out),
                 "--h5ad-add", "-q"]) == 0
    again = anndata.read_h5ad(out)
    est = ms.get_algorithm("kmeans", n_clusters=3, random_state=0).fit(ms.load_data(str(h5ad)).X)
    assert list(again.obs["kmeans_clusters"]) == [str(v) for v in est.labels_]
    np.testing.assert_array_equal(again.obsm["X_pca"], after.obsm["X_pca"])


def test_apply_writes_h5ad(h5ad, tmp_path):
    model, out = tmp_path / "m.npz", tmp_path / "applied.h5ad"
    assert main(["run", "pca", "--data", str(h5ad), "--out", str(tmp_path / "r.csv"), "--save-model", str(model),
                 "-q"]) == 0
    assert main(["apply", "--model", str(model), "--data", str(h5ad), "--out", str(out), "--chunk-rows", "16",
                 "-q"]) == 0
    est = ms.load_model(model)
    np.testing.assert_allclose(anndata.read_h5ad(out).obsm["X_pca"], est.extend(ms.load_data(str(h5ad)).X),
                               rtol=1e-10, atol=1e-12)


def test_new_h5ad_from_other_data(tmp_path, rng):
    ds = ms.load_data("sample:iris")
    emb = rng.normal(size=(ds.n_samples, 2))
    write_h5ad(tmp_path / "iris.h5ad", emb, "tsne", "embedding", ds)
    back = anndata.read_h5ad(tmp_path / "iris.h5ad")
    np.testing.assert_array_equal(back.X, ds.X)
    np.testing.assert_array_equal(back.obsm["X_tsne"], emb)
    assert list(back.var_names) == ds.feature_names


def test_new_h5ad_keeps_the_datas_meta_columns_in_obs(tmp_path):
    ds = ms.load_data("sample:penguins", missing="keep")   # island, sex (with missing values), year
    out = tmp_path / "penguins.h5ad"
    assert main(["run", "pca", "--data", "sample:penguins", "-D", "missing=keep", "--prep", "impute",
                 "--out", str(out), "-q"]) == 0
    back = anndata.read_h5ad(out)
    assert {"island", "sex", "year", "species"} <= set(back.obs.columns)
    for name in ("island", "sex"):   # a missing sex stays missing
        expected = [None if v is None else str(v) for v in ds.column_values(name)]
        assert [None if isinstance(v, float) else v for v in back.obs[name].astype(object)] == expected
    assert back.obs["year"].astype(str).tolist() == np.asarray(ds.column_values("year")).astype(str).tolist()


# -- bad input ----------------------------------------------------------------------------
def test_not_hdf5(tmp_path):
    path = tmp_path / "table.h5ad"
    path.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="table.h5ad is not an AnnData file.*HDF5"):
        ms.load_data(str(path))


def test_no_x(tmp_path):
    path = write(make_adata(), tmp_path / "nox.h5ad")
    with h5py.File(path, "r+") as f:
        del f["X"]
    with pytest.raises(DataError, match="nox.h5ad has no X matrix.*layers: 'counts'"):
        ms.load_data(str(path))
    with h5py.File(path, "r+") as f:
        del f["layers"]["counts"]
    with pytest.raises(DataError, match="nox.h5ad has no X matrix .*; it has no layers either, so it holds no matrix"):
        ms.load_data(str(path))   # not told to choose a layer it does not have


def test_non_numeric_x(tmp_path):
    path = write(make_adata(), tmp_path / "text.h5ad")
    with h5py.File(path, "r+") as f:
        del f["X"]
        f.create_dataset("X", data=np.full((N, D), b"a"))
        f["X"].attrs["encoding-type"] = "array"
        f["X"].attrs["encoding-version"] = "0.2.0"
    with pytest.raises(DataError, match=r"text.h5ad: X holds values of type \|S1 \(not numbers\)"):
        ms.load_data(str(path))


def test_obs_length_differs(tmp_path):
    path = write(make_adata(), tmp_path / "short.h5ad")
    with h5py.File(path, "r+") as f:
        group = f["obs"]["_index"] if isinstance(f["obs"]["_index"], h5py.Group) else f["obs"]   # anndata 0.13: a
        key = "values" if group.name.endswith("_index") else "_index"                           # nullable string array
        index = group[key][()][:-5]
        del group[key]
        group.create_dataset(key, data=index)
    with pytest.raises(DataError, match=f"short.h5ad: obs has {N - 5} entries but X has {N} rows"):
        ms.load_data(str(path))


def test_duplicated_var_names(tmp_path):
    adata = make_adata()
    adata.var_names = ["gene0"] * 2 + [f"gene{j}" for j in range(2, D)]
    path = write(adata, tmp_path / "dup.h5ad")
    with pytest.raises(DataError, match="var_names are not unique.*'gene0'.*var_names_make_unique"):
        ms.load_data(str(path))


def test_missing_layer(h5ad):
    with pytest.raises(DataError, match="cells.h5ad has no layer 'spliced': its layers are 'counts'"):
        ms.load_data(str(h5ad), layer="spliced")


def test_sparse_explicit_nan(tmp_path):
    adata = make_adata()
    adata.X.data[3] = np.nan
    path = write(adata, tmp_path / "nan.h5ad")
    with pytest.raises(DataError, match=r"nan.h5ad: X holds 1 stored \(explicit\) NaN"):
        ms.load_data(str(path))


def test_read_only_folder_in_place(tmp_path, locked):
    locked.chmod(0o700)
    path = write(make_adata(), locked / "cells.h5ad")
    before = path.read_bytes()
    locked.chmod(0o500)
    with pytest.raises(WriteError, match="Cannot add the result to cells.h5ad in place.*read-only"):
        add_to_h5ad(path, np.zeros((N, 2)), "pca", "embedding")
    assert path.read_bytes() == before


def test_add_to_another_files_cells_is_refused(h5ad, tmp_path):
    other = make_adata()
    other.obs_names = [f"x{i}" for i in range(N)]
    target = write(other, tmp_path / "other.h5ad")
    ds = ms.load_data(str(h5ad))
    with pytest.raises(DataError, match="the cells are not the rows of the data"):
        add_to_h5ad(target, np.zeros((N, 2)), "pca", "embedding", ds)


def test_missing_anndata_names_the_pip_command(h5ad, monkeypatch):
    monkeypatch.setitem(sys.modules, "anndata", None)
    with pytest.raises(DataError, match=r'pip install "manifold-studio\[anndata\]"'):
        ms.load_data(str(h5ad))


def test_backed_run_fits_on_a_sample_and_extends_in_chunks(h5ad, tmp_path, capsys):
    out, model = tmp_path / "backed.h5ad", tmp_path / "backed.npz"
    assert main(["run", "pca", "--data", str(h5ad), "-D", "backed=true", "sample_rows=20", "--out", str(out),
                 "--save-model", str(model)]) == 0
    said = capsys.readouterr().out
    assert "fitted on a sample of 20 rows of cells.h5ad, extended to all 60 rows" in said and "peak memory" in said
    est = ms.load_model(model)
    full = ms.load_data(str(h5ad))
    np.testing.assert_allclose(anndata.read_h5ad(out).obsm["X_pca"], est.extend(full.X), rtol=1e-10, atol=1e-12)
    sample = ms.load_data(str(h5ad), backed=True, sample_rows=20)
    np.testing.assert_allclose(est.extend(sample.X), ms.get_algorithm("pca").fit(sample.X).embedding_,
                               rtol=1e-8, atol=1e-10)
    csv_out = tmp_path / "backed.csv"
    assert main(["run", "pca", "--data", str(h5ad), "-D", "backed=true", "sample_rows=20", "--out", str(csv_out),
                 "-q"]) == 0
    lines = csv_out.read_text().splitlines()
    assert len(lines) == 61 and lines[1].startswith("cell0,")


def test_count_chain_on_h5ad_and_apply_with_it(h5ad, tmp_path):
    model, out, applied = tmp_path / "chain.npz", tmp_path / "chain.h5ad", tmp_path / "applied.h5ad"
    assert main(["run", "pca", "--data", str(h5ad), "--prep", "normalize_total", "--prep", "log", "--prep",
                 "select_columns:top_k=10", "--out", str(out), "--save-model", str(model), "-q"]) == 0
    assert main(["apply", "--model", str(model), "--data", str(h5ad), "--out", str(applied), "--chunk-rows", "25",
                 "-q"]) == 0
    emb = anndata.read_h5ad(out).obsm["X_pca"]
    np.testing.assert_allclose(anndata.read_h5ad(applied).obsm["X_pca"], emb, rtol=1e-9, atol=1e-10)
    pipe = ms.make_pipeline("normalize_total", "log", ("select_columns", {"top_k": 10}), ms.get_algorithm("pca"))
    np.testing.assert_allclose(emb, pipe.fit(ms.load_data(str(h5ad))).embedding_, rtol=1e-10, atol=1e-12)


def test_csc_x_is_read_as_csr_whole_and_in_chunks(tmp_path):
    adata = make_adata()
    adata.X = sp.csc_matrix(adata.X)
    path = write(adata, tmp_path / "csc.h5ad")
    ds = ms.load_data(str(path))
    assert ds.X.format == "csr" and any("CSC: converted to CSR" in r for r in ds.report)
    np.testing.assert_array_equal(ds.X.toarray(), adata.X.toarray())
    chunks = list(ms._host().loader_for(str(path)).iter_chunks(path, 25))
    np.testing.assert_array_equal(sp.vstack([c.X for c in chunks]).toarray(), adata.X.toarray())


def test_h5ad_add_on_a_read_only_folder_is_refused_before_fitting(tmp_path, locked, capsys):
    locked.chmod(0o700)
    path = write(make_adata(), locked / "cells.h5ad")
    before = path.read_bytes()
    locked.chmod(0o500)
    code = main(["run", "pca", "--data", str(path), "--out", str(path), "--h5ad-add"])
    err = capsys.readouterr().err
    assert code != 0 and "Cannot add the result to cells.h5ad in place" in err and "read-only" in err
    assert "fitted" not in err and path.read_bytes() == before


def test_damaged_sparse_indices(tmp_path):
    path = write(make_adata(), tmp_path / "bad_idx.h5ad")
    with h5py.File(path, "r+") as f:
        idx = f["X"]["indices"][()]
        idx[0] = D + 7
        f["X"]["indices"][...] = idx
    with pytest.raises(DataError, match="bad_idx.h5ad: X (is not a valid sparse matrix|cannot be read)"):
        ms.load_data(str(path))
    with pytest.raises(DataError, match="bad_idx.h5ad: X is not a valid sparse matrix"):
        list(ms._host().loader_for(str(path)).iter_chunks(path, 25))


def test_fit_sample_on_h5ad(h5ad, tmp_path):
    out, model = tmp_path / "fs.h5ad", tmp_path / "fs.npz"
    assert main(["run", "pca", "--data", str(h5ad), "--fit-sample", "25", "--out", str(out), "--save-model",
                 str(model), "-q"]) == 0
    est = ms.load_model(model)
    np.testing.assert_allclose(anndata.read_h5ad(out).obsm["X_pca"], est.extend(ms.load_data(str(h5ad)).X),
                               rtol=1e-9, atol=1e-12)
    table = tmp_path / "fs.csv"   # the same sample: obs['pca_fitted'] is the CSV's 'fitted' column
    assert main(["run", "pca", "--data", str(h5ad), "--fit-sample", "25", "--out", str(table), "-q"]) == 0
    fitted = anndata.read_h5ad(out).obs["pca_fitted"].to_numpy()
    assert fitted.dtype == bool and fitted.sum() == 25
    np.testing.assert_array_equal(fitted, pd.read_csv(table)["fitted"].to_numpy() == 1)
    added = tmp_path / "added.h5ad"
    added.write_bytes(h5ad.read_bytes())
    assert main(["run", "kmeans", "--data", str(added), "--fit-sample", "25", "--out", str(added), "--h5ad-add",
                 "-q"]) == 0
    back = anndata.read_h5ad(added)
    assert {"kmeans_clusters", "kmeans_fitted"} <= set(back.obs.columns) and back.obs["kmeans_fitted"].sum() == 25


def test_project_keeps_obs_annotations_and_ready_maps(h5ad, tmp_path):
    from manifold_studio.project.project_file import load_project, save_project
    from manifold_studio.session.model import Session

    session = Session()
    ds = session.load(str(h5ad), label_column="cell_type")
    ready = sorted(r.meta["ready_map"] for r in session.runs.values() if r.algorithm_id == "ready_map")
    assert ready == ["X_pca", "X_umap"]
    save_project(session, tmp_path / "p.npz")
    again, _ = load_project(tmp_path / "p.npz")
    back = again.datasets[ds.name]
    assert not back.table_features and (back.X != ds.X).nnz == 0
    np.testing.assert_array_equal(back.column_values("n_counts"), ds.column_values("n_counts"))
    assert list(back.labels) == list(ds.labels)
    maps = {r.meta["ready_map"]: r.embedding for r in again.runs.values() if r.algorithm_id == "ready_map"}
    np.testing.assert_array_equal(maps["X_umap"], ds.ready_maps["X_umap"])


def test_out_on_the_data_file_points_to_h5ad_add(h5ad, capsys):
    before = h5ad.read_bytes()
    assert main(["run", "pca", "--data", str(h5ad), "--out", str(h5ad)]) == 2
    err = capsys.readouterr().err
    assert f"--out {h5ad} is the input file of --data" in err and "or add --h5ad-add to add the result to it" in err
    assert h5ad.read_bytes() == before


def test_loading_shows_the_files_umap_map_and_a_second_load_keeps_the_shown_run(h5ad):
    from manifold_studio.session.model import Session

    session = Session()
    session.load(str(h5ad), label_column="cell_type")   # obsm holds X_pca and X_umap
    shown = session.current_run
    assert shown is not None and shown.meta["ready_map"] == "X_umap"   # not an empty map
    np.testing.assert_array_equal(shown.embedding, anndata.read_h5ad(h5ad).obsm["X_umap"])
    run = session.run("pca", n_components=2)
    session.set_current_run(run.id)
    session.add_dataset(ms.load_data(str(h5ad)), make_current=False)   # loaded beside: the shown run stays
    assert session.current_run is run


def test_apply_to_reordered_genes_names_a_bounded_list(h5ad, tmp_path, capsys):
    model, out = tmp_path / "m.npz", tmp_path / "applied.csv"
    assert main(["run", "pca", "--data", str(h5ad), "--save-model", str(model), "--out", str(tmp_path / "r.csv"),
                 "-q"]) == 0
    ref = anndata.read_h5ad(h5ad)
    reordered = write(ref[:, ref.var_names[::-1]].copy(), tmp_path / "reordered.h5ad")
    capsys.readouterr()
    assert main(["apply", "--model", str(model), "--data", str(reordered), "--out", str(out)]) == 0
    note = next(line for line in capsys.readouterr().err.splitlines() if "matched to the training data" in line)
    assert f"'gene0', 'gene1'" in note and f"and {ref.n_vars - 12} more" in note and len(note) < 300
    np.testing.assert_allclose(pd.read_csv(out)[["pca_1", "pca_2"]].to_numpy(),
                               pd.read_csv(tmp_path / "r.csv")[["pca_1", "pca_2"]].to_numpy(), atol=1e-9)
