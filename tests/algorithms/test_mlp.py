"""The mlp plugin: accuracy comparable to scikit-learn's MLPClassifier, early stopping keeps the
best validation weights, restarts keep the best network, the hidden layer grows while validation
improves, string labels, binary decision = logit difference, save/restore, cancel, conformance."""
import warnings

import numpy as np
import pytest
from sklearn.datasets import load_digits, make_classification
from sklearn.neural_network import MLPClassifier

import manifold_studio as ms
from manifold_studio.algorithms.conformance import CancelAfter, check_algorithm
from manifold_studio.algorithms.curves import TrainingCurve
from manifold_studio.errors import ConvergenceWarning, FitCancelled, InvalidParameterError
from fakes import RecordingProgress  # noqa: E402


class _quiet(warnings.catch_warnings):
    def __enter__(self):
        out = super().__enter__()
        warnings.simplefilter("ignore")
        return out


def data(n=300, k=3, seed=0):
    X, y = make_classification(n, 8, n_informative=5, n_classes=k, n_clusters_per_class=1,
                               class_sep=1.2, random_state=seed)
    return X, y


def split(X, y, seed=0):
    idx = np.random.default_rng(seed).permutation(len(y))
    cut = int(0.7 * len(y))
    return X[idx[:cut]], y[idx[:cut]], X[idx[cut:]], y[idx[cut:]]


@pytest.mark.parametrize("activation,sk_act", [("relu", "relu"), ("sigmoid", "logistic"), ("tanh", "tanh")])
def test_accuracy_like_scikit_learn_on_generated_data(activation, sk_act):
    Xtr, ytr, Xte, yte = split(*data())
    ours, theirs = [], []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for seed in range(2):
            est = ms.get_algorithm("mlp", hidden_layer_sizes=(20,), activation=activation, max_iter=150,
                                   learning_rate=0.01, random_state=seed).fit(Xtr, ytr)
            sk = MLPClassifier((20,), activation=sk_act, max_iter=150, learning_rate_init=0.01,
                               random_state=seed).fit(Xtr, ytr)
            ours.append(est.score(Xte, yte))
            theirs.append(sk.score(Xte, yte))
    assert np.mean(ours) >= np.mean(theirs) - 0.04, (ours, theirs)
    assert np.mean(ours) > 0.8


def test_accuracy_like_scikit_learn_on_digits():
    X, y = load_digits(return_X_y=True)
    X = X[::2] / 16.0
    y = y[::2]
    Xtr, ytr, Xte, yte = split(X, y)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(50,), activation="relu", max_iter=60,
                               random_state=0).fit(Xtr, ytr)
        sk = MLPClassifier((50,), max_iter=60, random_state=0).fit(Xtr, ytr)
    assert est.score(Xte, yte) >= sk.score(Xte, yte) - 0.03
    assert est.score(Xte, yte) > 0.9
    assert est.n_iter_ == 60 and est.loss_curve_.shape == (60,)
    assert np.all(np.diff(est.loss_curve_[:20]) < 0.05)     # the training loss falls


def test_binary_decision_is_the_logit_difference_and_proba_sums_to_one():
    X, y = data(k=2)
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(8,), max_iter=50, random_state=0).fit(X, y)
    d = est.decision_function(X)
    P = est.predict_proba(X)
    assert d.shape == (300,) and P.shape == (300, 2)
    np.testing.assert_allclose(P.sum(axis=1), 1.0)
    np.testing.assert_allclose(d, np.log(P[:, 1]) - np.log(P[:, 0]), rtol=1e-7, atol=1e-9)
    np.testing.assert_array_equal(est.predict(X), est.classes_[(d > 0).astype(int)])


def test_string_labels_and_state_round_trip():
    X, y = data(k=3)
    names = np.array(["cat", "dog", "emu"])[y]
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(10, 6), max_iter=80, learning_rate=0.01,
                               random_state=1).fit(X, names)
    assert list(est.classes_) == ["cat", "dog", "emu"]
    assert set(est.predict(X)) <= {"cat", "dog", "emu"} and est.score(X, names) > 0.8
    assert [c.shape for c in est.coefs_] == [(8, 10), (10, 6), (6, 3)]
    state = est.fitted_state()
    assert all(isinstance(v, np.ndarray) and v.dtype != object or not isinstance(v, np.ndarray)
               for v in state.values())
    other = ms.get_algorithm("mlp", hidden_layer_sizes=(10, 6)).restore_state(state)
    np.testing.assert_array_equal(other.predict(X), est.predict(X))
    np.testing.assert_allclose(other.predict_proba(X), est.predict_proba(X))


def test_early_stopping_keeps_the_best_validation_weights():
    X, y = data(n=240, seed=3)
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(30,), early_stopping=True, validation_fraction=0.25,
                               learning_rate=0.05, n_iter_no_change=5, max_iter=300, random_state=0).fit(X, y)
    assert est.converged_ and est.n_iter_ < 300
    scores = est.validation_scores_
    assert scores.shape == est.loss_curve_.shape == est.validation_loss_curve_.shape
    assert est.best_validation_score_ == scores.max()
    # the stopping rule: the last n_iter_no_change + 1 epochs did not beat the best by tol
    assert np.all(scores[-6:] < est.best_validation_score_ + 1e-4)
    # the kept weights are those of the best epoch: re-scoring the validation rows reproduces it
    from manifold_studio_builtins.mlp import stratified_split

    _, va = stratified_split(y, 0.25, np.random.default_rng(0))   # the split is the seed's first draw
    assert est.score(X[va], y[va]) == est.best_validation_score_
    assert est.score(X[va], y[va]) > scores[-1] or scores[-1] == scores.max()


def test_restarts_keep_the_best_network():
    X, y = data(n=200, seed=5)
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(3,), n_restarts=4, max_iter=30, learning_rate=0.01,
                               random_state=0).fit(X, y)
    assert est.restart_scores_.shape == (4,)
    # without validation the criterion is the final training loss (scores are −loss)
    assert est.best_restart_ == int(np.argmax(est.restart_scores_))
    assert -est.restart_scores_[est.best_restart_] == pytest.approx(est.loss_curve_[-1])
    assert len(set(np.round(est.restart_scores_, 10))) == 4      # different initial weights
    with _quiet():
        val = ms.get_algorithm("mlp", hidden_layer_sizes=(3,), n_restarts=3, early_stopping=True, max_iter=40,
                               learning_rate=0.01, random_state=0).fit(X, y)
    assert val.best_restart_ == int(np.argmax(val.restart_scores_))
    assert val.best_validation_score_ == val.restart_scores_.max()


def test_grow_hidden_adds_units_while_validation_improves():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 2))
    y = (np.sin(3 * X[:, 0]) > X[:, 1]).astype(int) + 2 * (X[:, 0] ** 2 + X[:, 1] ** 2 < 0.3)
    with _quiet():
        est = ms.get_algorithm("mlp", grow_hidden=True, max_hidden_units=12, activation="tanh",
                               learning_rate=0.02, max_iter=150, n_iter_no_change=8, validation_fraction=0.3,
                               random_state=0).fit(X, y)
    g = est.growth_scores_
    assert est.n_hidden_ == est.coefs_[0].shape[1] > 1
    # units were added one at a time, each size while validation improved, and it stopped at the first
    # size that did not improve (or at max_hidden_units)
    assert np.all(np.diff(np.unique(est.hidden_units_curve_)) == 1)
    assert np.all(np.diff(g[:est.n_hidden_]) >= 0)
    assert len(g) == est.n_hidden_ + 1 or est.n_hidden_ == 12
    if len(g) == est.n_hidden_ + 1:
        assert g[-1] <= g[est.n_hidden_ - 1]
    assert est.best_validation_score_ == pytest.approx(g[est.n_hidden_ - 1])
    with pytest.raises(InvalidParameterError, match="grow_hidden"):
        ms.get_algorithm("mlp", grow_hidden=True, hidden_layer_sizes=(4, 4)).fit(X, y)


def test_convergence_warning_and_training_curve():
    X, y = data(n=120)
    est = ms.get_algorithm("mlp", hidden_layer_sizes=(5,), max_iter=3, random_state=0)
    with pytest.warns(ConvergenceWarning, match="max_iter"):
        est.fit(X, y)
    assert not est.converged_ and est.fit_warnings_
    curve = est.training_curve()
    assert isinstance(curve, TrainingCurve) and curve.final
    np.testing.assert_array_equal(curve.series["train"], est.loss_curve_)


def test_live_curves_are_published():
    X, y = data(n=120)
    rec = RecordingProgress()
    seen = rec.partials
    with _quiet():
        ms.get_algorithm("mlp", hidden_layer_sizes=(5,), early_stopping=True, max_iter=20,
                         random_state=0).fit(X, y, progress=rec)
    assert seen and seen[-1].final and set(seen[-1].series) == {"train", "validation", "validation_accuracy"}


def test_cancel_propagates_before_the_first_epoch_and_keeps_the_network_after():
    X, y = data(n=120)
    with pytest.raises(FitCancelled):
        ms.get_algorithm("mlp", hidden_layer_sizes=(5,)).fit(X, y, progress=CancelAfter(0))
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(5,), max_iter=100, random_state=0).fit(
            X, y, progress=CancelAfter(4))
    assert est.stopped_early_ and est.n_iter_ == 4 and est.predict(X).shape == (120,)


def test_sgd_one_step_from_warm_start_equals_literal_update():
    """The estimator itself: with the same initial weights, sgd, momentum 0, one full batch,
    one epoch equals W − η ∇L."""
    from manifold_studio.algorithms.neural_net import FeedForwardNetwork

    X, y = data(n=50)
    est = ms.get_algorithm("mlp", hidden_layer_sizes=(4,), activation="sigmoid", solver="sgd", momentum=0.0, batch_size=50,
                           learning_rate=0.1, alpha=0.01, max_iter=1, warm_start=True, random_state=0)
    with _quiet():
        est.fit(X, y)
    W0 = [c.copy() for c in est.coefs_], [b.copy() for b in est.intercepts_]
    with _quiet():
        est.fit(X, y)
    net = FeedForwardNetwork((8, 4, 3), "sigmoid").set_weights(*W0)
    net.loss_and_gradient(X, np.eye(3)[y], 0.01)
    want = net.params - 0.1 * net.grad
    got = np.concatenate([c.ravel() for c in est.coefs_] + [b.ravel() for b in est.intercepts_])
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


def test_conformance_kit():
    check_algorithm(type(ms.get_algorithm("mlp")), params={"hidden_layer_sizes": (10,), "max_iter": 50})


def test_long_epochs_checkpoint_between_minibatches(monkeypatch):
    import manifold_studio_builtins.mlp as mlp_module

    monkeypatch.setattr(mlp_module, "_WORK_PER_CHECKPOINT", 1.0)    # every mini-batch is "long"
    X, y = data(n=100)
    progress = CancelAfter(1000)
    with _quiet():
        ms.get_algorithm("mlp", hidden_layer_sizes=(4,), batch_size=10, max_iter=2, random_state=0).fit(
            X, y, progress=progress)
    # the start, 10 mini-batches per epoch, one checkpoint between the two epochs
    assert progress.calls == 1 + 2 * 10 + 1
    with _quiet():
        est = ms.get_algorithm("mlp", hidden_layer_sizes=(4,), batch_size=10, max_iter=5, random_state=0).fit(
            X, y, progress=CancelAfter(15))                      # cancelled inside the second epoch
    assert est.stopped_early_ and est.n_iter_ == 1


def test_seed_output_sigmoid_units_with_squared_error():
    X, y = data(n=200)
    with _quiet():
        est = ms.get_algorithm("mlp", output="sigmoid", hidden_layer_sizes=(10,), learning_rate=0.01,
                               max_iter=200, random_state=0).fit(X, y)
    assert est.out_activation_ == "sigmoid" and est.score(X, y) > 0.8
    H = est.decision_function(X)
    assert H.shape == (200, 3) and np.all((H > 0) & (H < 1))      # sigmoid outputs in (0, 1)
    with pytest.raises(AttributeError):
        est.predict_proba(X)
