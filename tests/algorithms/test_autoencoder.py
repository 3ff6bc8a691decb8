"""Autoencoder (seed 001): the linear autoencoder spans PCA's subspace; the defaults unroll the
S-curve and the swiss roll far below PCA's error (issue 23); the stopping rule; encoder/decoder,
early stopping, curves, cancel, saving, and the conformance kit."""
import numpy as np
import pytest
from scipy.linalg import subspace_angles

import manifold_studio as ms
from manifold_studio.algorithms import FitCancelled
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm
from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.algorithms.progress import CallbackProgress
from manifold_studio.algorithms.neural_net import NoImprovement
from manifold_studio.algorithms.params import Bool
from manifold_studio.errors import ConvergenceWarning, DataError


@pytest.fixture(scope="module")
def plane():
    rng = np.random.default_rng(0)
    B = rng.normal(size=(3, 10))
    return rng.normal(size=(800, 3)) * [3.0, 2.0, 1.0] @ B + 0.01 * rng.normal(size=(800, 10))


@pytest.mark.parametrize("activation", ["identity", "relu"])
def test_a_linear_autoencoder_spans_the_principal_subspace(plane, activation):
    # with no hidden layer only the code layer is left, and it is linear whatever the activation
    # (a relu code clipped the points below its kinks: 100x PCA's error after these 400 epochs)
    ae = ms.get_algorithm("autoencoder", n_components=3, hidden_layer_sizes=(), activation=activation,
                          max_iter=400, tol=0.0, random_state=0).fit(plane)
    pca = ms.get_algorithm("pca", n_components=3).fit(plane)
    angles = np.degrees(subspace_angles(ae.components_.T, pca.components_.T))
    assert angles.max() < 1.0, angles
    # and its reconstructions are nearly as good as PCA's (the best linear ones)
    assert ae.reconstruction_error(plane) < 3 * pca.reconstruction_error(plane) / plane.shape[1]


def _pca_mse(X):
    pca = ms.get_algorithm("pca", n_components=2).fit(X)
    return float(np.mean((pca.inverse_transform(pca.extend(X)) - X) ** 2))


@pytest.mark.parametrize("sample", ["s_curve", "swiss_roll"])
def test_the_defaults_unroll_curved_data_below_half_of_pcas_error(sample):
    """Issue 23: the former defaults stopped at PCA's error (ratio 1.00) on both sheets."""
    X = ms.load_data(f"sample:{sample}", n_samples=2000).X
    ae = ms.get_algorithm("autoencoder", random_state=0).fit(X)
    ratio = ae.reconstruction_error(X) / _pca_mse(X)
    assert ratio <= 0.5, ratio
    assert ae.n_iter_ < 200  # the stopping rule ended the fit, not max_iter


def test_the_stopping_rule_is_scikit_learns_and_max_iter_is_honoured(plane):
    ae = ms.get_algorithm("autoencoder", hidden_layer_sizes=(8,), max_iter=300, tol=0.0,
                          n_iter_no_change=3, random_state=0).fit(plane)
    rule = NoImprovement(0.0, 3)
    stops = [rule.update(loss) for loss in ae.loss_curve_]
    assert ae.n_iter_ < 300 and stops.index(True) == ae.n_iter_ - 1
    # n_iter_no_change >= max_iter: exactly max_iter epochs, with scikit-learn's warning
    with pytest.warns(ConvergenceWarning, match="max_iter=40"):
        ae = ms.get_algorithm("autoencoder", hidden_layer_sizes=(8,), max_iter=40, tol=0.0,
                              n_iter_no_change=40, random_state=0).fit(plane)
    assert ae.n_iter_ == 40 == ae.loss_curve_.size


def test_early_stopping_is_declared_as_the_mlps(capsys):
    """`manifold-studio list` showed off/on for the autoencoder and True/False for the MLP."""
    from manifold_studio.cli.main import main

    declared = [ms.algorithm_class(a).param_constraints()["early_stopping"] for a in ("autoencoder", "mlp")]
    assert all(type(p) is Bool and p.default is False for p in declared)
    assert main(["list"]) == 0
    lines = [line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("early_stopping")]
    assert len(lines) == 2 and all("False" in line and "off" not in line for line in lines), lines


def test_encoder_decoder_and_sample_wise_extend(plane):
    ae = ms.get_algorithm("autoencoder", n_components=2, hidden_layer_sizes=(16,), max_iter=30,
                          random_state=1).fit(plane)
    Z = ae.extend(plane[:20])
    np.testing.assert_allclose(Z, ae.embedding_[:20], atol=1e-12)
    np.testing.assert_allclose(ae.extend(plane[5:6])[0], Z[5], atol=1e-12)
    R = ae.inverse_transform(Z)
    assert R.shape == (20, 10)
    assert ae.decoder_weights_.shape == (16, 10) and not hasattr(ae, "components_")
    curve = ae.training_curve()
    assert isinstance(curve, TrainingCurve) and curve.series["train"].size == ae.n_iter_
    with pytest.raises(DataError, match="Codes have 3 column"):
        ae.inverse_transform(np.zeros((2, 3)))


def test_early_stopping_keeps_the_weights_best_on_validation(plane):
    ae = ms.get_algorithm("autoencoder", n_components=2, hidden_layer_sizes=(8,), early_stopping=True,
                          max_iter=60, n_iter_no_change=5, random_state=2).fit(plane)
    v = ae.validation_loss_curve_
    assert v.size == ae.n_iter_
    # the kept network is the best epoch's: its validation error equals the curve's minimum
    rng = np.random.default_rng(np.random.default_rng(2).integers(2**63))
    order = rng.permutation(plane.shape[0])[:80]
    Z = (plane[order] - ae.mean_) / ae.scale_
    net = ae._network()
    assert np.mean((net.forward(Z) - Z) ** 2) == pytest.approx(v.min(), rel=1e-9)


def test_curves_are_published_live_and_cancel_keeps_the_network(plane):
    partials = []
    progress = CallbackProgress(on_partial=partials.append)
    ms.get_algorithm("autoencoder", max_iter=5, random_state=0).fit(plane, progress=progress)
    assert partials and isinstance(partials[-1], TrainingCurve)
    ae = ms.get_algorithm("autoencoder", max_iter=10_000, random_state=0)
    ae.fit(plane, progress=CancelAfter(8))
    assert ae.stopped_early_ and ae.n_iter_ >= 1 and np.isfinite(ae.embedding_).all()
    with pytest.raises(FitCancelled):
        ms.get_algorithm("autoencoder").fit(plane, progress=CancelAfter(0))


def test_model_round_trip_and_bad_input(plane, tmp_path):
    from manifold_studio.files.model_file import load_model, save_model

    ae = ms.get_algorithm("autoencoder", n_components=2, max_iter=5, random_state=0).fit(plane)
    save_model(ae, tmp_path / "ae.npz")
    again = load_model(tmp_path / "ae.npz")
    np.testing.assert_allclose(again.extend(plane[:7]), ae.extend(plane[:7]), atol=1e-12)
    np.testing.assert_allclose(again.inverse_transform(ae.embedding_[:3]), ae.inverse_transform(ae.embedding_[:3]),
                               atol=1e-12)
    with pytest.raises(DataError, match="n_components=20 is too large: n_components must be at most n_features = 10"):
        ms.get_algorithm("autoencoder", n_components=20).fit(plane)


def test_reconstruction_view_applies(plane):
    from manifold_studio.analysis.reconstruction import reconstruction_series

    series = reconstruction_series(ms.get_algorithm("autoencoder", max_iter=5, random_state=0), plane[:200],
                                   counts=(1, 2))
    assert series.counts == [1, 2] and len(series.reconstructions) == 2


def test_conformance_kit():
    check_algorithm(ms.algorithm_class("autoencoder"), params={"max_iter": 5, "random_state": 0})
