"""Built-in sample data sets, reached through the plugin host as ``sample:NAME``."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.plugins.host import get_host

SAMPLES = ["blobs", "breast_cancer", "circles", "digits", "iris", "moons", "penguins", "s_curve", "swiss_roll",
           "wine"]
# real data shipped with the plugin (issue 20 replaced the synthetic font digits by the UCI ones)
REAL = {"iris", "digits", "wine", "breast_cancer", "penguins"}
GENERATED = [s for s in SAMPLES if s not in REAL]


def test_all_samples_are_registered():
    assert set(SAMPLES) <= set(ms.list_samples())


@pytest.mark.parametrize("sample_id", SAMPLES)
def test_sample_is_a_complete_dataset(sample_id):
    ds = ms.load_data(f"sample:{sample_id}")
    sample = get_host().samples[sample_id]
    assert sample.name and sample.description
    assert ds.source == f"sample:{sample_id}"
    assert ds.X.ndim == 2 and ds.n_samples >= 100 and np.isfinite(ds.X).all()
    assert ds.labels is not None and ds.labels.shape == (ds.n_samples,) and ds.label_name
    assert ds.feature_names is not None and len(ds.feature_names) == ds.n_features


@pytest.mark.parametrize("sample_id", GENERATED)
def test_generated_samples_are_reproducible_and_sized(sample_id):
    a = ms.load_data(f"sample:{sample_id}", n_samples=101)
    b = ms.load_data(f"sample:{sample_id}", n_samples=101)
    c = ms.load_data(f"sample:{sample_id}", n_samples=101, random_state=7)
    assert a.n_samples == 101
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.X, c.X)


def test_invalid_sample_options_and_unknown_sample():
    with pytest.raises(InvalidParameterError, match="n_samples"):
        ms.load_data("sample:moons", n_samples=0)
    with pytest.raises(InvalidParameterError, match="noise"):
        ms.load_data("sample:swiss_roll", noise=-1.0)
    with pytest.raises(InvalidParameterError, match="Unknown parameter"):
        ms.load_data("sample:iris", n_samples=10)
    with pytest.raises(DataError, match="Unknown sample data set 'nope'.*iris"):
        ms.load_data("sample:nope")


def test_iris_is_fishers_data():
    ds = ms.load_data("sample:iris")
    assert ds.X.shape == (150, 4)
    assert ds.feature_names == ["sepal_length", "sepal_width", "petal_length", "petal_width"]
    species, counts = np.unique(ds.labels, return_counts=True)
    assert list(species) == ["setosa", "versicolor", "virginica"] and list(counts) == [50, 50, 50]
    np.testing.assert_array_equal(ds.X[0], [5.1, 3.5, 1.4, 0.2])
    np.testing.assert_array_equal(ds.X[-1], [5.9, 3.0, 5.1, 1.8])
    # Fisher's paper values for samples 35 and 38 (the UCI copy has two errors there)
    np.testing.assert_array_equal(ds.X[34], [4.9, 3.1, 1.5, 0.2])
    np.testing.assert_array_equal(ds.X[37], [4.9, 3.6, 1.4, 0.1])
    np.testing.assert_allclose(ds.X.mean(axis=0), [5.8433, 3.0573, 3.758, 1.1993], atol=1e-4)
    from sklearn.datasets import load_iris

    np.testing.assert_array_equal(ds.X, load_iris().data)


def test_swiss_roll_geometry_and_continuous_labels():
    ds = ms.load_data("sample:swiss_roll", n_samples=500, noise=0.0)
    t = ds.labels
    assert t.dtype.kind == "f" and "continuous" in ds.label_name
    assert 1.5 * np.pi <= t.min() and t.max() <= 4.5 * np.pi
    np.testing.assert_allclose(ds.X[:, 0], t * np.cos(t))
    np.testing.assert_allclose(ds.X[:, 2], t * np.sin(t))
    assert 0 <= ds.X[:, 1].min() and ds.X[:, 1].max() <= 21


def test_s_curve_geometry():
    ds = ms.load_data("sample:s_curve", n_samples=500, noise=0.0)
    t = ds.labels
    np.testing.assert_allclose(ds.X[:, 0], np.sin(t))
    np.testing.assert_allclose(ds.X[:, 2], np.sign(t) * (np.cos(t) - 1))


def test_circles_radii_and_classes():
    ds = ms.load_data("sample:circles", n_samples=300, noise=0.0, factor=0.3)
    r = np.linalg.norm(ds.X, axis=1)
    np.testing.assert_allclose(r[ds.labels == 0], 1.0)
    np.testing.assert_allclose(r[ds.labels == 1], 0.3)
    assert (ds.labels == 0).sum() == 150


def test_moons_classes_are_the_two_half_circles():
    ds = ms.load_data("sample:moons", n_samples=200, noise=0.0)
    upper, lower = ds.X[ds.labels == 0], ds.X[ds.labels == 1]
    np.testing.assert_allclose(np.linalg.norm(upper, axis=1), 1.0)
    np.testing.assert_allclose(np.linalg.norm(lower - [1.0, 0.5], axis=1), 1.0)
    assert (upper[:, 1] >= -1e-12).all() and (lower[:, 1] <= 0.5 + 1e-12).all()


def test_blobs_are_clusters_around_their_centres():
    ds = ms.load_data("sample:blobs", n_samples=900, n_features=3, centers=4, cluster_std=0.5)
    assert ds.X.shape == (900, 3) and set(np.unique(ds.labels)) == {0, 1, 2, 3}
    for k in range(4):
        spread = ds.X[ds.labels == k].std(axis=0)
        np.testing.assert_allclose(spread, 0.5, rtol=0.2)


def test_digits_are_the_uci_images_with_digit_labels():
    """Issue 20: the digits are the real UCI optical-recognition digits (scikit-learn's copy)."""
    from sklearn.datasets import load_digits

    full = ms.load_data("sample:digits")
    ref = load_digits()
    assert full.X.shape == (1797, 64) and full.images.shape == (1797, 8, 8)
    np.testing.assert_array_equal(full.X, ref.data)
    np.testing.assert_array_equal(full.labels, ref.target)
    ds = ms.load_data("sample:digits", n_samples=200)
    assert ds.X.shape == (200, 64) and ds.images.shape == (200, 8, 8)
    np.testing.assert_array_equal(ds.X, ds.images.reshape(200, 64))
    np.testing.assert_array_equal(ds.X, ref.data[:200])
    assert ds.X.min() >= 0 and ds.X.max() <= 16
    assert set(np.unique(ds.labels)) == set(range(10))
    with pytest.raises(InvalidParameterError, match="n_samples"):
        ms.load_data("sample:digits", n_samples=1798)
