"""Saving and loading fitted models: one .npz, JSON metadata, no pickle, atomic writes."""
import json
import os
import zipfile

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.files import model_file as model_io
from manifold_studio.algorithms import ClusteringAlgorithm, Choice, Int, IntTuple
from manifold_studio.errors import NotFittedError, UnknownAlgorithmError
from manifold_studio.hookspecs import hookimpl
from manifold_studio.files.model_file import ModelFileError, load_model, load_model_with_metadata, save_model


class NearestCentre(ClusteringAlgorithm):
    """A tiny clustering algorithm whose state mixes arrays, scalars and lists."""

    id = "test_nearest_centre"
    name = "Nearest centre (test)"
    help = "Test algorithm."
    params = (Int("n_clusters", 2, "clusters", low=1), IntTuple("sizes", (3, 2), "a tuple parameter"),
              Choice("mode", "a", "a choice", choices=("a", "b")))

    def _fit(self, X, y, progress):
        k = self._p["n_clusters"]
        self.cluster_centers_ = X[:k].copy()
        self.labels_ = self._extend(X)
        self.names_ = [f"c{i}" for i in range(k)]
        self.inertia_ = 1.5
        self.tag_ = "text"

    def _extend(self, X):
        d = ((X[:, None, :] - self.cluster_centers_[None]) ** 2).sum(-1)
        return np.argmin(d, axis=1)


class _TestPlugin:
    @hookimpl
    def register_algorithms(self):
        return [NearestCentre]


@pytest.fixture
def host(fresh_host):
    fresh_host.register(_TestPlugin(), name="test_model_io_plugin")
    return fresh_host


def test_pca_round_trip(tmp_path, rng):
    ds = ms.load_data("sample:iris")
    est = ms.get_algorithm("pca", n_components=3, whiten=True).fit(ds.X)
    path = save_model(est, tmp_path / "pca.npz", data=ds)
    assert path == tmp_path / "pca.npz"
    loaded, meta = load_model_with_metadata(path)
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    X_new = rng.normal(size=(7, 4)) + 5
    np.testing.assert_array_equal(loaded.extend(X_new), est.extend(X_new))
    np.testing.assert_array_equal(loaded.embedding_, est.embedding_)
    assert meta["algorithm"] == "pca" and {k: meta["params"][k] for k in ("n_components", "whiten")} == {"n_components": 3, "whiten": True}
    assert meta["library_version"] == ms.__version__ and meta["kind"] == "embedding"
    assert meta["training_data"]["source"] == "sample:iris"
    assert meta["training_data"]["n_samples"] == 150 and meta["training_data"]["n_features"] == 4
    assert meta["training_data"]["feature_names"] == ds.feature_names
    assert "components_" in meta["arrays"] and meta["scalars"]["n_features_in_"] == 4
    assert model_io.read_metadata(path) == meta


def test_file_holds_no_pickle(tmp_path):
    est = ms.get_algorithm("pca").fit(ms.load_data("sample:iris").X)
    path = save_model(est, tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as npz:
        for key in npz.files:
            assert npz[key].dtype != object
    meta = json.loads(str(np.load(path, allow_pickle=False)[model_io.META_KEY]))
    assert meta["format"] == model_io.FORMAT


def test_custom_state_round_trip(host, tmp_path, rng):
    X = rng.normal(size=(20, 3))
    est = ms.get_algorithm("test_nearest_centre", n_clusters=3, sizes=(4, 1), mode="b").fit(X)
    save_model(est, tmp_path / "c.model", data="my_data.csv", extra={"note": "hello"})
    assert (tmp_path / "c.model").exists()  # the name is kept as given (no .npz appended)
    loaded, meta = load_model_with_metadata(tmp_path / "c.model")
    assert loaded.get_params() == {"n_clusters": 3, "sizes": (4, 1), "mode": "b"}
    assert loaded.names_ == ["c0", "c1", "c2"] and loaded.inertia_ == 1.5 and loaded.tag_ == "text"
    np.testing.assert_array_equal(loaded.predict(X), est.predict(X))
    assert meta["training_data"] == {"source": "my_data.csv"} and meta["extra"] == {"note": "hello"}


def test_unfitted_model_cannot_be_saved(tmp_path):
    with pytest.raises(NotFittedError, match="not fitted"):
        save_model(ms.get_algorithm("pca"), tmp_path / "m.npz")
    assert not (tmp_path / "m.npz").exists()


def test_atomic_write_replaces_and_leaves_nothing_behind(tmp_path, monkeypatch):
    X = ms.load_data("sample:iris").X
    path = tmp_path / "m.npz"
    save_model(ms.get_algorithm("pca", n_components=1).fit(X), path)
    save_model(ms.get_algorithm("pca", n_components=2).fit(X), path)
    assert load_model(path).n_components == 2
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]
    mask = os.umask(0)
    os.umask(mask)
    assert (path.stat().st_mode & 0o777) == 0o666 & ~mask

    def broken(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(np, "savez_compressed", broken)
    with pytest.raises(OSError, match="disk full"):
        save_model(ms.get_algorithm("pca", n_components=3).fit(X), path)
    assert sorted(os.listdir(tmp_path)) == ["m.npz"]  # no temporary file left
    monkeypatch.undo()
    assert load_model(path).n_components == 2  # the old model is intact


def test_missing_folder(tmp_path):
    est = ms.get_algorithm("pca").fit(ms.load_data("sample:iris").X)
    with pytest.raises(ms.ManifoldStudioError, match="does not exist"):
        save_model(est, tmp_path / "nope" / "m.npz")


def test_files_that_are_not_models(tmp_path):
    (tmp_path / "data.csv").write_text("a,b\n1,2\n")
    np.savez(tmp_path / "data.npz", X=np.ones((3, 2)))
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04 this is not really a zip")
    with pytest.raises(ModelFileError, match=r"data\.csv is not a Manifold Studio model"):
        load_model(tmp_path / "data.csv")
    with pytest.raises(ModelFileError, match=r"data\.npz is not a Manifold Studio model.*no model description"):
        load_model(tmp_path / "data.npz")
    with pytest.raises(ModelFileError, match=r"junk\.npz"):
        load_model(tmp_path / "junk.npz")
    with pytest.raises(ModelFileError, match="not found"):
        load_model(tmp_path / "missing.npz")
    with pytest.raises(ModelFileError, match="folder"):
        load_model(tmp_path)


def _rewrite_meta(path, **changes):
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    meta = json.loads(str(arrays[model_io.META_KEY]))
    meta.update(changes)
    arrays[model_io.META_KEY] = np.array(json.dumps(meta))
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)


def test_unknown_algorithm_id(tmp_path):
    path = save_model(ms.get_algorithm("pca").fit(ms.load_data("sample:iris").X), tmp_path / "m.npz")
    _rewrite_meta(path, algorithm="no_such_algorithm")
    with pytest.raises(UnknownAlgorithmError, match="'no_such_algorithm', which no loaded plugin provides.*pca"):
        load_model(path)


def test_newer_format_and_incompatible_parameters(tmp_path):
    X = ms.load_data("sample:iris").X
    path = save_model(ms.get_algorithm("pca").fit(X), tmp_path / "m.npz")
    _rewrite_meta(path, format_version=99)
    with pytest.raises(ModelFileError, match="format version 99"):
        load_model(path)
    path = save_model(ms.get_algorithm("pca").fit(X), tmp_path / "p.npz")
    _rewrite_meta(path, params={"n_components": -3})
    with pytest.raises(ModelFileError, match="cannot be restored.*n_components"):
        load_model(path)


def test_object_array_inside_a_model_is_refused(tmp_path):
    path = save_model(ms.get_algorithm("pca").fit(ms.load_data("sample:iris").X), tmp_path / "m.npz")
    with np.load(path, allow_pickle=False) as npz:
        arrays = {k: npz[k] for k in npz.files}
    arrays["state/mean_"] = np.array([{"x": 1}], dtype=object)  # a declared member, so it is read
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    assert zipfile.is_zipfile(path)
    with pytest.raises(ModelFileError, match="mean_.*cannot be loaded safely"):
        load_model(path)
    arrays["state/evil_"] = arrays.pop("state/mean_")  # an undeclared one is refused unread
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModelFileError, match="evil_.*not a fitted attribute of a pca model"):
        load_model(path)


#: algorithms whose data must be non-negative
NON_NEGATIVE = {"nmf"}


@pytest.mark.parametrize("algorithm_id", ms.list_algorithms())
def test_every_discovered_algorithm_round_trips(algorithm_id, tmp_path):
    """Any algorithm plugin's fitted model is saved and restored without pickle, and the
    restored model extends exactly like the original."""
    ds = ms.load_data("sample:s_curve", n_samples=150)
    y = (ds.labels > 0).astype(int)
    if algorithm_id in NON_NEGATIVE:  # NMF factorises non-negative data: shift the S-curve
        ds.X = ds.X - ds.X.min(axis=0)
    est = ms.get_algorithm(algorithm_id)
    if "random_state" in est.get_params():
        est.set_params(random_state=0)
    est.fit(ds.X, y if est.requires_labels else None)
    path = save_model(est, tmp_path / f"{algorithm_id}.npz", data=ds)
    loaded = load_model(path)
    assert type(loaded) is type(est) and loaded.get_params() == est.get_params()
    X_new = ds.X[::9] + 0.01
    np.testing.assert_allclose(np.asarray(loaded.extend(X_new), dtype=float),
                               np.asarray(est.extend(X_new), dtype=float), rtol=1e-10, atol=1e-10)


def test_an_unknown_compression_method_is_a_damaged_file(tmp_path, rng):
    """A flipped bit in a member's header can name a compression method zipfile does not know
    (it raises NotImplementedError): the file is reported as damaged, like any other damage."""
    path = tmp_path / "m.npz"
    save_model(ms.get_algorithm("pca").fit(rng.normal(size=(30, 4))), path)
    blob = bytearray(path.read_bytes())
    with zipfile.ZipFile(path) as zf:
        infos = zf.infolist()
    for info in infos:   # every member: local header and central directory say method 99
        blob[info.header_offset + 8:info.header_offset + 10] = (99).to_bytes(2, "little")
    central = blob.find(b"PK\x01\x02")
    while central != -1:
        blob[central + 10:central + 12] = (99).to_bytes(2, "little")
        central = blob.find(b"PK\x01\x02", central + 4)
    path.write_bytes(bytes(blob))
    with pytest.raises(ModelFileError, match="m.npz"):
        load_model(path)


def test_save_and_load_model_at_the_top_level(tmp_path):
    """ms.save_model / ms.load_model, where a scientist looks for them (issue 32)."""
    ds = ms.load_data("sample:iris")
    pipe = ms.make_pipeline("standardize", ms.get_algorithm("pca", n_components=2)).fit(ds)
    path = ms.save_model(pipe, tmp_path / "model.npz", data=ds)
    back = ms.load_model(path)
    np.testing.assert_allclose(back.extend(ds.X[:7]), pipe.extend(ds.X[:7]), rtol=1e-12, atol=1e-12)
    assert {"save_model", "load_model"} <= set(ms.__all__)
