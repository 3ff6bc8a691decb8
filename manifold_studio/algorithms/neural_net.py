"""A feed-forward neural network in numpy (seed 003, "Réseaux de neurones"): layers, forward
propagation, back-propagation, L2 penalty, SGD with momentum and Adam, mini-batch epochs.

Reusable: the ``mlp`` classifier uses a softmax output with the cross-entropy loss; an
autoencoder can use an ``identity`` output with the squared error. Everything runs on one
flat float64 parameter vector (all weight matrices first, then all biases) and one flat
gradient vector of the same layout, so an optimiser step is a handful of vectorised
operations whatever the number of layers, and a copy of the network is one array copy.

Notation. Layer l maps its input A (m, fan_in) to Z = A W_l + b_l and applies its activation:

- ``sigmoid``: the seed's sigm(z) = 1 / (1 + e^(−λz)), sigm′ = λ·sigm·(1 − sigm);
- ``tanh``, ``relu`` (max(z, 0)), ``identity``.

Outputs and losses (per batch of m rows, weights W, L2 strength α, as scikit-learn's MLP):

- ``softmax`` with the cross-entropy: L = −(1/m) Σ_i log p_i[y_i] + (α / 2m) Σ ‖W‖²;
- any activation with the squared error (the seed's E = ½ Σ (h(x) − u)²):
  L = (1/2m) Σ_i ‖h(x_i) − u_i‖² + (α / 2m) Σ ‖W‖².

Initialisation (Glorot, as scikit-learn): W and b uniform in ±sqrt(f / (fan_in + fan_out)),
f = 6, or f = 2 for the sigmoid (whose bound is also divided by λ, so that λz keeps the same
spread whatever λ).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

__all__ = ["ACTIVATIONS", "OUTPUTS", "FeedForwardNetwork", "SGD", "Adam", "make_optimizer",
           "train_epoch", "NoImprovement", "batches_per_checkpoint"]

#: rows × weights processed between two progress checkpoints inside an epoch (~0.1 s)
WORK_PER_CHECKPOINT = 2.0e8

ACTIVATIONS = ("identity", "sigmoid", "tanh", "relu")
#: output activations: softmax pairs with the cross-entropy, the others with the squared error
OUTPUTS = ("softmax",) + ACTIVATIONS


def _activate(Z: np.ndarray, activation: str, lam: float) -> None:
    """Apply the activation to Z in place."""
    if activation == "relu":
        np.maximum(Z, 0.0, out=Z)
    elif activation == "sigmoid":
        if lam != 1.0:
            Z *= lam
        from scipy.special import expit  # lazy: kept off the start-up

        expit(Z, out=Z)
    elif activation == "tanh":
        np.tanh(Z, out=Z)
    elif activation == "softmax":
        Z -= Z.max(axis=1, keepdims=True)
        np.exp(Z, out=Z)
        Z /= Z.sum(axis=1, keepdims=True)


def _times_derivative(D: np.ndarray, A: np.ndarray, activation: str, lam: float, tmp: np.ndarray) -> None:
    """D *= f′(z), written with the activation's output A = f(z) (in place; tmp: scratch of D's shape)."""
    if activation == "relu":
        np.greater(A, 0.0, out=tmp)
        D *= tmp
    elif activation == "sigmoid":
        np.subtract(1.0, A, out=tmp)
        tmp *= A
        if lam != 1.0:
            tmp *= lam
        D *= tmp
    elif activation == "tanh":
        np.multiply(A, A, out=tmp)
        np.subtract(1.0, tmp, out=tmp)
        D *= tmp


class FeedForwardNetwork:
    """Fully connected layers ``layer_sizes = (n_inputs, h_1, …, n_outputs)``.

    ``activation`` is the hidden layers' activation, or a sequence of them, one per hidden layer
    (an autoencoder's linear code layer between non-linear ones); ``output`` the last layer's.

    ``coefs[l]`` (fan_in, fan_out) and ``intercepts[l]`` (fan_out,) are views into the flat
    ``params``; ``grad`` has the same layout (filled by :meth:`loss_and_gradient`).
    """

    def __init__(self, layer_sizes, activation: str = "relu", output: str = "softmax",
                 sigmoid_lambda: float = 1.0):
        sizes = tuple(int(s) for s in layer_sizes)
        if len(sizes) < 2 or min(sizes) < 1:
            raise ValueError(f"layer_sizes must hold at least an input and an output size >= 1, got {sizes}")
        hidden = ((activation,) * (len(sizes) - 2) if isinstance(activation, str)
                  else tuple(activation))
        if len(hidden) != len(sizes) - 2 or any(a not in ACTIVATIONS for a in hidden):
            raise ValueError(f"activation must be one of {ACTIVATIONS} or a sequence of them, one per "
                             f"hidden layer ({len(sizes) - 2}), got {activation!r}")
        if output not in OUTPUTS:
            raise ValueError(f"output must be one of {OUTPUTS}, got {output!r}")
        self.layer_sizes, self.activation, self.output = sizes, activation, output
        self.activations = hidden + (output,)  # one per weight layer
        self.sigmoid_lambda = float(sigmoid_lambda)
        shapes = list(zip(sizes[:-1], sizes[1:]))
        self.n_coef = sum(a * b for a, b in shapes)
        self.n_params = self.n_coef + sum(sizes[1:])
        self.params = np.zeros(self.n_params)
        self.grad = np.zeros(self.n_params)
        self.coefs, self.intercepts = self._views(self.params)
        self.coef_grads, self.intercept_grads = self._views(self.grad)
        self._rows = 0

    def _views(self, flat):
        coefs, intercepts = [], []
        pos, bpos = 0, self.n_coef
        for fan_in, fan_out in zip(self.layer_sizes[:-1], self.layer_sizes[1:]):
            coefs.append(flat[pos:pos + fan_in * fan_out].reshape(fan_in, fan_out))
            intercepts.append(flat[bpos:bpos + fan_out])
            pos += fan_in * fan_out
            bpos += fan_out
        return coefs, intercepts

    @property
    def n_layers(self) -> int:
        """Number of weight layers (hidden layers + 1)."""
        return len(self.layer_sizes) - 1

    def layer_activation(self, layer: int) -> str:
        return self.activations[layer]

    # -- weights -----------------------------------------------------------------------------
    def init_glorot(self, rng: np.random.Generator) -> "FeedForwardNetwork":
        """Glorot-uniform weights and biases (scikit-learn's bounds; see the module docstring)."""
        for layer, (W, b) in enumerate(zip(self.coefs, self.intercepts)):
            fan_in, fan_out = W.shape
            sigmoid = self.layer_activation(layer) == "sigmoid"
            bound = np.sqrt((2.0 if sigmoid else 6.0) / (fan_in + fan_out))
            if sigmoid:
                bound /= self.sigmoid_lambda
            W[...] = rng.uniform(-bound, bound, (fan_in, fan_out))
            b[...] = rng.uniform(-bound, bound, fan_out)
        return self

    def set_weights(self, coefs, intercepts) -> "FeedForwardNetwork":
        for W, b, W_new, b_new in zip(self.coefs, self.intercepts, coefs, intercepts):
            W[...] = W_new
            b[...] = b_new
        return self

    def copy(self) -> "FeedForwardNetwork":
        other = FeedForwardNetwork(self.layer_sizes, self.activation, self.output, self.sigmoid_lambda)
        other.params[:] = self.params
        return other

    # -- forward -----------------------------------------------------------------------------
    def forward(self, X: np.ndarray, logits: bool = False) -> np.ndarray:
        """Network output for X (m, n_inputs); ``logits``: the output layer before its activation."""
        return self.forward_layers(X, 0, self.n_layers, logits)

    def forward_layers(self, X: np.ndarray, start: int = 0, stop: int | None = None,
                       logits: bool = False) -> np.ndarray:
        """The activations after weight layers ``start .. stop-1`` for an input X of layer
        ``start`` (an autoencoder's encoder is layers 0..k-1, its decoder k..L-1)."""
        stop = self.n_layers if stop is None else stop
        A = X if sp.issparse(X) else np.asarray(X, dtype=float)   # sparse rows: a sparse first product
        for layer in range(start, stop):
            Z = np.asarray(A @ self.coefs[layer])
            Z += self.intercepts[layer]
            last = layer == self.n_layers - 1
            if not (last and logits):
                _activate(Z, self.layer_activation(layer), self.sigmoid_lambda)
            A = Z
        return A

    def loss(self, X: np.ndarray, Y: np.ndarray, alpha: float = 0.0) -> float:
        """Mean loss on (X, Y) plus the L2 penalty (α / 2m) Σ ‖W‖² (Y one-hot for softmax)."""
        m = X.shape[0]
        if self.output == "softmax":
            Z = self.forward(X, logits=True)
            Z -= Z.max(axis=1, keepdims=True)
            data = float(np.log(np.exp(Z).sum(axis=1)).sum() - np.vdot(Z, Y))
        else:
            data = 0.5 * float(np.sum((self.forward(X) - Y) ** 2))
        w = self.params[:self.n_coef]
        return (data + 0.5 * alpha * float(np.vdot(w, w))) / m

    # -- back-propagation ----------------------------------------------------------------------
    def _buffers(self, m: int):
        if m > self._rows:
            self._rows = m
            self._A = [np.empty((m, s)) for s in self.layer_sizes[1:]]
            self._D = [np.empty((m, s)) for s in self.layer_sizes[1:]]
            self._T = [np.empty((m, s)) for s in self.layer_sizes[1:]]
            self._ones = np.ones(m)
            self._lse = np.empty(m)
        return ([a[:m] for a in self._A], [d[:m] for d in self._D], [t[:m] for t in self._T],
                self._ones[:m], self._lse[:m])

    def loss_and_gradient(self, X: np.ndarray, Y: np.ndarray, alpha: float = 0.0) -> float:
        """Loss on the batch (as :meth:`loss`) and its gradient in ``self.grad`` (back-propagation).

        The output error is δ = (p − y) / m for softmax + cross-entropy and
        δ = (h − u)·f′(z) / m for the squared error; it is propagated back through
        δ_l = (δ_{l+1} W_{l+1}ᵀ)·f′(z_l) (the seed's δN = f′·Σ a_NM δM), and
        ∂L/∂W_l = A_{l−1}ᵀ δ_l + (α/m) W_l, ∂L/∂b_l = Σ_rows δ_l."""
        m = X.shape[0]
        A, D, T, ones, lse = self._buffers(m)
        L = self.n_layers
        prev = X
        for layer in range(L):
            if sp.issparse(prev):       # sparse input rows: the first layer's product is sparse
                A[layer][...] = prev @ self.coefs[layer]
            else:
                np.matmul(prev, self.coefs[layer], out=A[layer])
            A[layer] += self.intercepts[layer]
            if layer < L - 1 or self.output != "softmax":
                _activate(A[layer], self.layer_activation(layer), self.sigmoid_lambda)
            prev = A[layer]
        out, delta = A[-1], D[-1]
        if self.output == "softmax":
            # out holds the logits: shift, exponentiate, normalise; the loss uses log-sum-exp
            out -= out.max(axis=1, keepdims=True)
            data = -float(np.vdot(out, Y))
            np.exp(out, out=out)
            np.sum(out, axis=1, out=lse)
            out /= lse[:, None]
            np.log(lse, out=lse)
            data += float(lse.sum())
            np.subtract(out, Y, out=delta)
        else:
            np.subtract(out, Y, out=delta)
            data = 0.5 * float(np.vdot(delta, delta))
            _times_derivative(delta, out, self.output, self.sigmoid_lambda, T[-1])
        delta *= 1.0 / m
        for layer in range(L - 1, -1, -1):
            below = X if layer == 0 else A[layer - 1]
            if sp.issparse(below):
                self.coef_grads[layer][...] = below.T @ D[layer]
            else:
                np.matmul(below.T, D[layer], out=self.coef_grads[layer])
            np.matmul(ones, D[layer], out=self.intercept_grads[layer])
            if layer > 0:
                np.matmul(D[layer], self.coefs[layer].T, out=D[layer - 1])
                _times_derivative(D[layer - 1], A[layer - 1], self.activations[layer - 1],
                                  self.sigmoid_lambda, T[layer - 1])
        w = self.params[:self.n_coef]
        if alpha:
            g = self.grad[:self.n_coef]
            g += (alpha / m) * w
            data += 0.5 * alpha * float(np.vdot(w, w))
        return data / m


# -- optimisers (on the flat parameter vector) ---------------------------------------------------

class SGD:
    """Stochastic gradient descent with momentum μ (scikit-learn's rule):
    v ← μ v − η g;  θ ← θ + v, or with Nesterov θ ← θ + μ v − η g. μ = 0 is the plain step θ ← θ − η g."""

    def __init__(self, n_params: int, learning_rate: float, momentum: float = 0.9, nesterov: bool = True):
        self.learning_rate, self.momentum, self.nesterov = float(learning_rate), float(momentum), bool(nesterov)
        self.velocity = np.zeros(n_params)
        self._tmp = np.empty(n_params)

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        lr, mu = self.learning_rate, self.momentum
        if mu == 0.0:
            np.multiply(grad, lr, out=self._tmp)
            params -= self._tmp
            return
        v, tmp = self.velocity, self._tmp
        v *= mu
        np.multiply(grad, lr, out=tmp)
        v -= tmp
        if self.nesterov:
            np.multiply(v, mu, out=tmp)
            params += tmp
            np.multiply(grad, lr, out=tmp)
            params -= tmp
        else:
            params += v


class Adam:
    """Adam (Kingma & Ba 2014) as scikit-learn applies it: m ← β₁m + (1−β₁)g, v ← β₂v + (1−β₂)g²,
    θ ← θ − η_t m / (√v + ε) with η_t = η √(1−β₂ᵗ) / (1−β₁ᵗ)."""

    def __init__(self, n_params: int, learning_rate: float, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-8):
        self.learning_rate, self.beta_1, self.beta_2, self.epsilon = (
            float(learning_rate), float(beta_1), float(beta_2), float(epsilon))
        self.t = 0
        self.m = np.zeros(n_params)
        self.v = np.zeros(n_params)
        self._tmp = np.empty(n_params)

    def step(self, params: np.ndarray, grad: np.ndarray) -> None:
        b1, b2, tmp = self.beta_1, self.beta_2, self._tmp
        self.t += 1
        lr_t = self.learning_rate * np.sqrt(1.0 - b2 ** self.t) / (1.0 - b1 ** self.t)
        self.m *= b1
        np.multiply(grad, 1.0 - b1, out=tmp)
        self.m += tmp
        self.v *= b2
        np.multiply(grad, grad, out=tmp)
        tmp *= 1.0 - b2
        self.v += tmp
        np.sqrt(self.v, out=tmp)
        tmp += self.epsilon
        np.divide(self.m, tmp, out=tmp)
        tmp *= lr_t
        params -= tmp


def make_optimizer(solver: str, n_params: int, learning_rate: float, momentum: float = 0.9,
                   nesterov: bool = True):
    if solver == "sgd":
        return SGD(n_params, learning_rate, momentum, nesterov)
    if solver == "adam":
        return Adam(n_params, learning_rate)
    raise ValueError(f"solver must be 'sgd' or 'adam', got {solver!r}")


def train_epoch(net: FeedForwardNetwork, optimizer, X: np.ndarray, Y: np.ndarray, batch_size: int,
                alpha: float = 0.0, rng: np.random.Generator | None = None,
                checkpoint=None, check_every: int = 0) -> float:
    """One pass over (X, Y) in mini-batches of ``batch_size`` rows (shuffled first with ``rng``;
    data order without), one optimiser step per batch. Returns the mean batch loss weighted by
    batch size (scikit-learn's ``loss_``). ``checkpoint(rows_done)`` is called every ``check_every``
    batches (progress and cancel inside long epochs)."""
    n = X.shape[0]
    if rng is not None:
        order = rng.permutation(n)
        Xs = X[order] if sp.issparse(X) else np.take(X, order, axis=0)   # (faster than take(out=))
        Ys = np.take(Y, order, axis=0)
    else:
        Xs, Ys = X, Y
    total = 0.0
    params, grad = net.params, net.grad
    for k, start in enumerate(range(0, n, batch_size)):
        stop = min(start + batch_size, n)
        total += net.loss_and_gradient(Xs[start:stop], Ys[start:stop], alpha) * (stop - start)
        optimizer.step(params, grad)
        if check_every and checkpoint is not None and (k + 1) % check_every == 0:
            checkpoint(stop)
    return total / n


def batches_per_checkpoint(n_rows: int, batch_size: int, n_params: int) -> int:
    """``check_every`` for :func:`train_epoch`: the batches between two checkpoints inside an
    epoch that does more than WORK_PER_CHECKPOINT rows × weights (0: the epoch is short)."""
    per_batch = batch_size * n_params
    if per_batch * np.ceil(n_rows / batch_size) <= WORK_PER_CHECKPOINT:
        return 0
    return max(1, int(WORK_PER_CHECKPOINT // per_batch))


class NoImprovement:
    """scikit-learn's MLP stopping rule on a loss (lower is better): an epoch whose loss is not
    below ``best − tol`` counts as one without improvement, an epoch that is resets the count; the
    best loss follows every decrease. :meth:`update` is True (stop) once more than ``patience``
    consecutive epochs went without improvement. ``tol=0`` stops only when the loss has not
    decreased at all for ``patience + 1`` epochs; ``patience ≥ max_iter`` never stops."""

    def __init__(self, tol: float, patience: int):
        self.tol, self.patience = float(tol), int(patience)
        self.best = np.inf
        self.no_change = 0

    def update(self, loss: float) -> bool:
        self.no_change = self.no_change + 1 if loss > self.best - self.tol else 0
        self.best = min(self.best, loss)
        return self.no_change > self.patience
