"""Fit on a sample / extend to all, the section 5.4 extension-quality experiment, saving models."""
import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.errors import FitCancelled
from manifold_studio.extend.quality import extension_quality
from manifold_studio.extend.sample_fit import fit_on_sample
from spectral_data import circles, swiss_roll
from fakes import RecordingProgress  # noqa: E402

SPECTRAL = ["kernel_pca", "mds", "isomap", "lle", "laplacian_eigenmaps", "spectral_clustering"]


@pytest.mark.parametrize("algo", SPECTRAL)
def test_fit_on_sample_extends_to_all(algo):
    X, _ = swiss_roll(3000)
    est = ms.get_algorithm(algo, **({"sigma": 3.0} if algo == "spectral_clustering" else {}))
    rec = RecordingProgress()
    fractions = rec.fractions
    res = fit_on_sample(est, X, 300, random_state=0, progress=rec)
    assert res.output.shape[0] == 3000 and res.sample_indices.size == 300
    assert res.fitted_mask.sum() == 300
    fitted = res.estimator
    train = fitted.embedding_ if fitted.kind == "embedding" else fitted.labels_
    np.testing.assert_array_equal(res.output[res.sample_indices], train)
    # the other rows are the model's extension
    others = np.flatnonzero(~res.fitted_mask)[:100]
    np.testing.assert_allclose(res.output[others], fitted.extend(X[others]))
    assert fractions[-1] == 1.0 and np.all(np.diff(fractions) >= -1e-12)
    assert not est.is_fitted  # the given estimator is untouched (a clone is fitted)


def test_fit_on_sample_cancel():
    X, _ = swiss_roll(5000)

    with pytest.raises(FitCancelled):
        fit_on_sample(ms.get_algorithm("lle"), X, 300, random_state=0, progress=RecordingProgress(cancel_above=0.5))


@pytest.mark.parametrize("algo,params", [("isomap", {}), ("lle", {}), ("mds", {}),
                                         ("spectral_clustering", {"sigma": 3.0})])
def test_extension_quality_experiment(algo, params):
    X, _ = swiss_roll(250)
    res = extension_quality(ms.get_algorithm(algo, **params), X, fractions=(0.02, 0.1), n_repeats=1,
                            n_heldout=4, random_state=0)
    assert [r.fraction for r in res.rows] == [0.02, 0.1]
    for row in res.rows:
        assert row.variability.shape == (4,) and row.extension_error.shape == (4,)
        assert np.all(row.extension_error >= 0) and np.all(np.isfinite(row.extension_error))
        lo, hi = row.difference_ci
        assert lo <= row.difference_mean <= hi
    text = res.explanation()
    assert text.endswith(".") and "extension" in text and text.count(".") >= 1
    assert len(res.table()) == 2


def test_extension_error_is_small_for_mds():
    # MDS = PCA: leaving one point out barely changes the map, so the extension is accurate
    X, _ = swiss_roll(300)
    res = extension_quality(ms.get_algorithm("mds"), X, fractions=(0.1,), n_repeats=1, n_heldout=5,
                            random_state=0)
    assert res.rows[0].extension_error_mean < 0.05


@pytest.mark.parametrize("algo", SPECTRAL)
def test_saved_model_extends_identically(algo, tmp_path):
    from manifold_studio.files import model_file as model_io

    X, _ = swiss_roll(300) if algo != "spectral_clustering" else circles(300)
    X_new = X[:20] + 0.01
    est = ms.get_algorithm(algo, **({"sigma": 0.2} if algo == "spectral_clustering" else {})).fit(X)
    path = tmp_path / "model.npz"
    model_io.save_model(est, path)
    loaded = model_io.load_model(path)
    np.testing.assert_allclose(loaded.extend(X_new), est.extend(X_new), rtol=1e-12, atol=1e-12)
