"""Autoencoder (seed 001): a network trained to reproduce its input through a narrow code.

The encoder maps x through ``hidden_layer_sizes`` to ``n_components`` code units, the decoder
mirrors it back to the input (layers ``d, h_1, …, h_k, n_components, h_k, …, h_1, d``); the
squared reconstruction error is minimised with Adam on mini-batches. ``extend`` is the encoder
(sample-wise), ``inverse_transform`` the decoder. Seed 001: with linear units the code spans the
principal subspace of the data — the same space as PCA's first n_components axes.
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Choice, EmbeddingAlgorithm, Float, Int, IntTuple
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, epoch_curve
from manifold_studio.algorithms.neural_net import FeedForwardNetwork, make_optimizer, train_epoch
from manifold_studio.algorithms.params import (
    max_iter_param, n_components_param, random_state_param, tol_param,
)
from manifold_studio.errors import ConvergenceWarning, DataError, FitCancelled
from manifold_studio.hookspecs import hookimpl


class Autoencoder(EmbeddingAlgorithm):
    """Autoencoder with a mirrored decoder, trained by Adam on the squared reconstruction error.

    The data are standardised with one mean per column and one global scale (``mean_``,
    ``scale_``) so that the default learning rate suits any units; ``inverse_transform`` undoes
    it. With ``early_stopping`` a ``validation_fraction`` of the rows (seeded) is held out and
    the weights best on it are kept. ``loss_curve_`` (and ``validation_loss_curve_``) are the
    mean squared errors per epoch, published live as a training curve. ``decoder_weights_``
    (last layer, one row per unit feeding the output) can be drawn as images; with no hidden
    layer they are the code's directions and also ``components_``.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> est = ms.get_algorithm("autoencoder", n_components=2, max_iter=20, random_state=0).fit(X)
    >>> est.embedding_.shape
    (150, 2)
    >>> est.extend(X[:5]).shape
    (5, 2)
    """

    id = "autoencoder"
    name = "Autoencoder"
    help = ("A neural network trained to reproduce its input through a narrow code layer: the code "
            "is the map. With linear units it finds the same subspace as PCA; with non-linear ones it "
            "can follow curved data. New points are placed by the encoder; the decoder reconstructs "
            "data from the code.")
    params = (
        n_components_param(),
        IntTuple("hidden_layer_sizes", (64,), "Units of the encoder's hidden layers, mirrored in the "
                 "decoder (empty: a single linear layer each way).", min_length=0, low=1),
        Choice("activation", "tanh", "Activation of the hidden and code units: 'identity' gives a "
               "linear autoencoder (PCA's subspace).", choices=("identity", "tanh", "sigmoid", "relu")),
        Float("learning_rate", 1e-3, "Adam's step size.", low=0.0, low_open=True, log=True),
        Int("batch_size", 64, "Rows per mini-batch.", low=1),
        Float("alpha", 0.0, "L2 penalty on the weights.", low=0.0),
        max_iter_param(200, "Epochs at most."),
        tol_param(1e-5, "Stop when the loss has not improved by this much for n_iter_no_change epochs."),
        Int("n_iter_no_change", 10, "Epochs without improvement before stopping.", low=1),
        Choice("early_stopping", "off", "'on': hold out validation_fraction of the rows and keep the "
               "weights best on them.", choices=("off", "on")),
        Float("validation_fraction", 0.1, "Share of rows held out for early stopping.", low=0.0,
              high=0.5, low_open=True),
        random_state_param("Seed of the initial weights, the batches and the validation split."),
    )
    min_samples = 2

    # -- network ---------------------------------------------------------------------------------
    def _layers(self, d: int) -> tuple[int, ...]:
        hidden = tuple(self._p["hidden_layer_sizes"])
        return (d, *hidden, self._p["n_components"], *reversed(hidden), d)

    def _network(self) -> FeedForwardNetwork:
        net = getattr(self, "_net", None)
        if net is None or net.params is not self.params_:
            net = FeedForwardNetwork(tuple(self.layer_sizes_), self.activation_, "identity")
            net.params[:] = self.params_
            self.params_ = net.params  # the network's views and the saved state share memory
            self._net = net
        return net

    @property
    def n_encoder_layers_(self) -> int:
        return (len(self.layer_sizes_) - 1) // 2

    # -- fit -------------------------------------------------------------------------------------
    def _fit(self, X, y, progress):
        p = self._p
        n, d = X.shape
        if p["n_components"] > d:
            raise DataError(f"n_components={p['n_components']} is larger than the {d} feature(s) of the data: "
                            "a code wider than the input compresses nothing.")
        rng = check_random_state(p["random_state"])
        rng = np.random.default_rng(rng.integers(2**63))
        self.mean_ = X.mean(axis=0)
        scale = float(np.sqrt(((X - self.mean_) ** 2).mean()))
        self.scale_ = scale if scale > 0 else 1.0
        Z = (X - self.mean_) / self.scale_
        valid = None
        if p["early_stopping"] == "on":
            n_val = max(1, int(round(p["validation_fraction"] * n)))
            if n - n_val < 1:
                raise DataError(f"{n} rows are too few to hold out a validation fraction.")
            order = rng.permutation(n)
            valid, Z = Z[order[:n_val]], Z[order[n_val:]]
        net = FeedForwardNetwork(self._layers(d), p["activation"], "identity").init_glorot(rng)
        opt = make_optimizer("adam", net.n_params, p["learning_rate"])
        buffers = (np.empty_like(Z), np.empty_like(Z))
        curve = CurvePublisher(progress, "Reconstruction error per epoch", x_label="epoch",
                               y_label="mean squared error", log_y=True)
        losses, val_losses = [], []
        best, best_params, stall = np.inf, net.params.copy(), 0
        batch = min(p["batch_size"], Z.shape[0])
        self.stopped_early_ = False
        epoch = 0
        try:
            for epoch in range(1, p["max_iter"] + 1):
                progress.checkpoint((epoch - 1) / p["max_iter"], f"epoch {epoch} of {p['max_iter']}")
                loss = 2.0 * train_epoch(net, opt, Z, Z, batch, p["alpha"], rng, buffers)  # 2·(½ MSE)
                losses.append(loss / d)
                if valid is not None:
                    val = float(np.mean((net.forward(valid) - valid) ** 2))
                    val_losses.append(val)
                    curve.add(epoch, train=losses[-1], validation=val)
                    score = val
                else:
                    curve.add(epoch, train=losses[-1])
                    score = losses[-1]
                if score < best - p["tol"]:
                    best, stall = score, 0
                    best_params[:] = net.params
                else:
                    stall += 1
                    if stall >= p["n_iter_no_change"]:
                        break
            else:
                self._warn(f"The autoencoder reached max_iter={p['max_iter']} epochs while its loss still "
                           "improved; raise max_iter for a closer fit.", ConvergenceWarning)
        except FitCancelled:
            if not losses:
                raise
            self._stop_early(f"after {len(losses)} of {p['max_iter']} epochs")
        curve.flush()
        if valid is not None or self.stopped_early_ or stall:
            net.params[:] = best_params
        self.layer_sizes_ = list(net.layer_sizes)
        self.activation_ = p["activation"]
        self.params_ = net.params
        self._net = net
        self.n_iter_ = len(losses)
        self.loss_curve_ = np.asarray(losses)
        if val_losses:
            self.validation_loss_curve_ = np.asarray(val_losses)
        self.embedding_ = self._encode(X)
        self._set_decoder_weights()

    def _set_decoder_weights(self):
        net = self._network()
        self.decoder_weights_ = net.coefs[-1] * self.scale_
        if not self._p["hidden_layer_sizes"]:
            self.components_ = self.decoder_weights_

    # -- use -------------------------------------------------------------------------------------
    def _encode(self, X):
        return self._network().forward_layers((X - self.mean_) / self.scale_, 0, self.n_encoder_layers_)

    def _extend(self, X):
        return self._encode(X)

    def inverse_transform(self, codes):
        """Data reconstructed from codes (m, n_components) by the decoder."""
        self.check_is_fitted("inverse_transform")
        codes = np.atleast_2d(np.asarray(codes, dtype=float))
        if codes.shape[1] != self._p["n_components"]:
            raise DataError(f"Codes have {codes.shape[1]} column(s); the autoencoder has "
                            f"{self._p['n_components']} code units.")
        net = self._network()
        return net.forward_layers(codes, self.n_encoder_layers_, net.n_layers) * self.scale_ + self.mean_

    def reconstruction_error(self, X):
        """Mean squared reconstruction error per value of X (in the data's units)."""
        X = self._check_new_data(X, "reconstruction_error")
        return float(np.mean((self.inverse_transform(self._encode(X)) - X) ** 2))

    def restore_state(self, state):
        super().restore_state(state)
        self._net = None
        self.params_ = np.asarray(self.params_, dtype=float)
        self._set_decoder_weights()
        return self

    def fitted_state(self):
        state = super().fitted_state()
        for key in ("decoder_weights_", "components_"):
            state.pop(key, None)  # derived from the parameters
        return state

    def training_curve(self):
        return epoch_curve(self, "Reconstruction error per epoch", "mean squared error", log_y=True)

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_iter"] = self.n_iter_
            out["final_mse"] = round(float(self.loss_curve_[-1]) * self.scale_ ** 2, 6) if self.n_iter_ else None
        return out


@hookimpl
def register_algorithms():
    return [Autoencoder]
