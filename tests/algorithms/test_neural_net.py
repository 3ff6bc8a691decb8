"""The feed-forward network: back-propagation against finite differences for every activation and
output, one SGD step against a literal hand-written update and against scikit-learn's MLP from
the same weights, Adam against its formula; per-layer activations (an autoencoder's linear code);
scikit-learn's stopping rule."""
import warnings

import numpy as np
import pytest
from sklearn.neural_network import MLPClassifier

from manifold_studio.algorithms.neural_net import (
    WORK_PER_CHECKPOINT, Adam, FeedForwardNetwork, NoImprovement, SGD, batches_per_checkpoint,
    make_optimizer, train_epoch,
)


def _data(m=7, d=4, k=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(m, d))
    y = rng.integers(0, k, m)
    Y = np.eye(k)[y]
    return X, y, Y


@pytest.mark.parametrize("activation", ["identity", "sigmoid", "tanh", "relu"])
@pytest.mark.parametrize("output", ["softmax", "identity", "sigmoid", "tanh"])
@pytest.mark.parametrize("lam", [1.0, 2.5])
def test_gradient_matches_finite_differences(activation, output, lam):
    _check_gradient(FeedForwardNetwork((4, 5, 6, 3), activation, output, sigmoid_lambda=lam), activation)


@pytest.mark.parametrize("activation", ["tanh", "relu", "sigmoid"])
def test_per_layer_activations_forward_and_gradient(activation):
    """An autoencoder's layers: non-linear, linear code, non-linear, linear output."""
    net = FeedForwardNetwork((4, 5, 2, 6, 3), (activation, "identity", activation), "identity", 1.5)
    assert net.activations == (activation, "identity", activation, "identity")
    _check_gradient(net, activation)
    # the code layer is linear: forward through the first two layers by hand
    X = _data()[0]
    f = {"tanh": np.tanh, "relu": lambda z: np.maximum(z, 0), "sigmoid": lambda z: 1 / (1 + np.exp(-1.5 * z))}[activation]
    code = f(X @ net.coefs[0] + net.intercepts[0]) @ net.coefs[1] + net.intercepts[1]
    np.testing.assert_allclose(net.forward_layers(X, 0, 2), code, rtol=1e-12)
    with pytest.raises(ValueError, match="one per hidden layer"):
        FeedForwardNetwork((4, 5, 2, 3), ("tanh",), "identity")
    with pytest.raises(ValueError, match="one per hidden layer"):
        FeedForwardNetwork((4, 5, 3), ("softmax",), "identity")


def _check_gradient(net, activation):
    X, _, Y = _data()
    net.init_glorot(np.random.default_rng(1))
    alpha = 0.3
    net.loss_and_gradient(X, Y, alpha)
    grad = net.grad.copy()
    num = np.zeros_like(grad)
    h = 1e-6
    for i in range(net.n_params):
        old = net.params[i]
        net.params[i] = old + h
        up = net.loss(X, Y, alpha)
        net.params[i] = old - h
        down = net.loss(X, Y, alpha)
        net.params[i] = old
        num[i] = (up - down) / (2 * h)
    if activation == "relu":   # kinks: a unit exactly at 0 has no derivative (almost never hit)
        np.testing.assert_allclose(grad, num, rtol=1e-4, atol=1e-6)
    else:
        np.testing.assert_allclose(grad, num, rtol=1e-5, atol=1e-8)
    # the loss returned with the gradient is the loss
    assert net.loss_and_gradient(X, Y, alpha) == pytest.approx(net.loss(X, Y, alpha), rel=1e-12)


def _literal_sigmoid_step(W1, b1, W2, b2, X, Y, lr, alpha, lam):
    """One full-batch gradient step written out by hand, example by example (the seed's
    propagation / retro-propagation, softmax outputs, mean cross-entropy + (α/2m)‖W‖²)."""
    m = X.shape[0]
    gW1, gb1 = np.zeros_like(W1), np.zeros_like(b1)
    gW2, gb2 = np.zeros_like(W2), np.zeros_like(b2)
    for x, u in zip(X, Y):
        h = np.array([1.0 / (1.0 + np.exp(-lam * (sum(x[i] * W1[i, j] for i in range(len(x))) + b1[j])))
                      for j in range(W1.shape[1])])
        z = np.array([sum(h[j] * W2[j, k] for j in range(len(h))) + b2[k] for k in range(W2.shape[1])])
        p = np.exp(z - z.max())
        p /= p.sum()
        dH = p - u                                            # δ at the outputs
        dN = np.array([lam * h[j] * (1 - h[j]) * sum(W2[j, k] * dH[k] for k in range(len(dH)))
                       for j in range(len(h))])               # δN = sigm′ Σ a_NM δM
        gW2 += np.outer(h, dH)
        gb2 += dH
        gW1 += np.outer(x, dN)
        gb1 += dN
    gW1 = gW1 / m + alpha / m * W1
    gW2 = gW2 / m + alpha / m * W2
    return W1 - lr * gW1, b1 - lr * gb1 / m, W2 - lr * gW2, b2 - lr * gb2 / m


def test_one_sgd_step_equals_the_literal_update():
    X, _, Y = _data(m=9, d=3, k=3, seed=4)
    lr, alpha, lam = 0.3, 0.05, 1.7
    net = FeedForwardNetwork((3, 4, 3), "sigmoid", "softmax", sigmoid_lambda=lam)
    net.init_glorot(np.random.default_rng(2))
    W1, b1, W2, b2 = (a.copy() for a in (net.coefs[0], net.intercepts[0], net.coefs[1], net.intercepts[1]))
    opt = SGD(net.n_params, lr, momentum=0.0)
    train_epoch(net, opt, X, Y, batch_size=X.shape[0], alpha=alpha)      # no batching: one step
    for got, want in zip((net.coefs[0], net.intercepts[0], net.coefs[1], net.intercepts[1]),
                         _literal_sigmoid_step(W1, b1, W2, b2, X, Y, lr, alpha, lam)):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("activation,sk_activation", [("relu", "relu"), ("tanh", "tanh"),
                                                       ("sigmoid", "logistic")])
@pytest.mark.parametrize("solver,momentum", [("sgd", 0.0), ("sgd", 0.9), ("adam", 0.9)])
def test_epochs_equal_scikit_learn_from_the_same_weights(activation, sk_activation, solver, momentum):
    """Full-batch epochs (so no shuffling is involved) from scikit-learn's own initial weights."""
    X, y, Y = _data(m=40, d=5, k=3, seed=7)
    sk = MLPClassifier((6,), activation=sk_activation, solver=solver, momentum=momentum, alpha=0.01,
                       learning_rate_init=0.05, batch_size=40, max_iter=1, warm_start=True, random_state=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sk.fit(X, y)
        W = [c.copy() for c in sk.coefs_], [b.copy() for b in sk.intercepts_]
        sk.max_iter = 5
        sk.fit(X, y)                                           # 5 steps from W (fresh optimiser)
    net = FeedForwardNetwork((5, 6, 3), activation, "softmax").set_weights(*W)
    opt = make_optimizer(solver, net.n_params, 0.05, momentum, nesterov=True)
    losses = [train_epoch(net, opt, X, Y, 40, alpha=0.01) for _ in range(5)]
    for a, b in zip(net.coefs + net.intercepts, sk.coefs_ + sk.intercepts_):
        np.testing.assert_allclose(a, b, rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(losses, sk.loss_curve_[-5:], rtol=1e-9)


def test_adam_follows_its_formula():
    rng = np.random.default_rng(0)
    theta = rng.normal(size=6)
    opt = Adam(6, 0.01)
    p = theta.copy()
    m = v = np.zeros(6)
    for t in range(1, 4):
        g = rng.normal(size=6)
        opt.step(p, g)
        m = 0.9 * m + 0.1 * g
        v = 0.999 * v + 0.001 * g * g
        theta = theta - 0.01 * np.sqrt(1 - 0.999 ** t) / (1 - 0.9 ** t) * m / (np.sqrt(v) + 1e-8)
        np.testing.assert_allclose(p, theta, rtol=1e-13)


def test_shuffled_minibatches_visit_every_row_once():
    X, _, Y = _data(m=23, d=3, k=3)
    net = FeedForwardNetwork((3, 4, 3), "tanh").init_glorot(np.random.default_rng(0))
    seen = []
    orig = net.loss_and_gradient

    def spy(Xb, Yb, alpha=0.0):
        seen.append(Xb.copy())
        return orig(Xb, Yb, alpha)

    net.loss_and_gradient = spy
    train_epoch(net, SGD(net.n_params, 0.0, 0.0), X, Y, 5, rng=np.random.default_rng(3))
    assert [len(b) for b in seen] == [5, 5, 5, 5, 3]
    rows = np.concatenate(seen)
    np.testing.assert_array_equal(np.sort(rows, axis=0), np.sort(X, axis=0))


def _stops(losses, tol, patience):
    rule = NoImprovement(tol, patience)
    return [rule.update(loss) for loss in losses]


def test_the_stopping_rule_is_scikit_learns():
    """scikit-learn's MLP (``_update_no_improvement_count``): an epoch counts as no improvement
    when its loss > best − tol, the best follows every decrease, stop when the count > patience."""
    losses = [1.0, 0.95, 0.85, 0.84, 0.83, 0.80]
    # counts 0, 1 (0.95 > 1.0 − 0.1), 0 (0.85 = 0.95 − 0.1), 1, 2, 3 > 2: stop at the sixth epoch
    assert _stops(losses, 0.1, 2) == [False] * 5 + [True]
    # a cumulative rule (the best moved only by tol) would have let 0.80 through; patience 3 does
    assert not any(_stops(losses, 0.1, 3))
    # tol 0: only epochs that do not lower the loss count (an equal loss resets, as in scikit-learn)
    assert _stops([1.0, 1.0, 1.1, 1.2, 0.9, 0.95, 0.95, 0.95], 0.0, 2) == [False] * 7 + [True]
    # patience at least the number of epochs never stops
    assert not any(_stops(np.ones(50), 1.0, 50))


def test_checkpoints_inside_long_epochs_only():
    assert batches_per_checkpoint(1000, 100, 50) == 0
    every = batches_per_checkpoint(100_000, 200, 100_000)
    assert every == int(WORK_PER_CHECKPOINT // (200 * 100_000)) and every * 200 * 100_000 <= WORK_PER_CHECKPOINT
    assert batches_per_checkpoint(10, 10, 10**9) == 1  # one long batch: a checkpoint after it
