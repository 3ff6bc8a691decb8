"""Autoencoder (seed 001): a network trained to reproduce its input through a narrow code.

The encoder maps x through ``hidden_layer_sizes`` to ``n_components`` code units, the decoder
mirrors it back to the input (layers ``d, h_1, …, h_k, n_components, h_k, …, h_1, d``); the
squared reconstruction error is minimised with Adam on mini-batches. ``extend`` is the encoder
(sample-wise), ``inverse_transform`` the decoder. The hidden units use ``activation``; the code
units and the output are linear. Seed 001: with linear units the code spans the principal
subspace of the data — the same space as PCA's first n_components axes.

Why these defaults (issue 23). Gradient descent fits the linear part of the map first, so an
autoencoder passes by the PCA solution, and with near-linear units it lingers there. The former
defaults (tanh units, the code through tanh too, one hidden layer of 64, Adam at 1e-3) sat on
that plateau for about 750 epochs on the S-curve (2,000 points) — Glorot-sized weights on
standardised data keep tanh near its linear range — and the stopping rule (no improvement for
n_iter_no_change epochs) ended the fit there after 60-80 epochs, at PCA's error; with relu units
it was worse, the two relu code units died (8x PCA's error). Now the code units are linear
whatever the activation (a bounded or rectified bottleneck only loses information), the default
units are relu, whose kinks lie inside the data from the first epoch, in two hidden layers of
64 each way (one layer each way leaves about twice the error on the swiss roll), and Adam's step
is 3e-3 (at 1e-3 the same network takes about twice as long to stop). On 2,000 points of
the S-curve and the swiss roll, seeds 0-7, the defaults end at 0.02-0.06 and 0.03-0.11 of
PCA-2's reconstruction error after 60-190 epochs
(tests/test_autoencoder.py, benchmarks/bench_autoencoder.py).
"""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms import Bool, Choice, EmbeddingAlgorithm, Float, Int, IntTuple
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, epoch_curve
from manifold_studio.algorithms.neural_net import (
    FeedForwardNetwork, NoImprovement, batches_per_checkpoint, make_optimizer, train_epoch,
)
from manifold_studio.algorithms.params import (
    DataLimit, max_iter_param, n_components_param, random_state_param, tol_param,
)
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError, FitCancelled
from manifold_studio.hookspecs import hookimpl


class Autoencoder(EmbeddingAlgorithm):
    """Autoencoder with a mirrored decoder, trained by Adam on the squared reconstruction error.

    The data are standardised with one mean per column and one global scale (``mean_``,
    ``scale_``) so that the default learning rate suits any units; ``inverse_transform`` undoes
    it. Training stops by scikit-learn's MLP rule (``tol``, ``n_iter_no_change``) on the training
    error, or with ``early_stopping`` on the error of a held-out ``validation_fraction`` of the
    rows (seeded), whose best weights are then kept. ``loss_curve_`` (and
    ``validation_loss_curve_``) are the mean squared errors per epoch, published live as a
    training curve. ``decoder_weights_`` (last layer, one row per unit feeding the output) can be
    drawn as images; with no hidden layer they are the code's directions and also ``components_``.

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
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "mean_": Fitted(shape=("n_features_in_",), required=True),
        "params_": Fitted(shape=(None,), required=True),
        "embedding_": Fitted(shape=(None, "n_components")),
    }

    params = (
        n_components_param(limit=DataLimit("n_features", why="a code wider than the input compresses nothing")),
        IntTuple("hidden_layer_sizes", (64, 64), "Units of the encoder's hidden layers, mirrored in the "
                 "decoder; the default's two relu layers each way can unroll the S-curve and the swiss "
                 "roll (empty: the code is a linear map of the input, PCA's subspace).",
                 min_length=0, low=1),
        Choice("activation", "relu", "Activation of the hidden units (the code units and the output "
               "are linear): 'relu' (the default) bends the map from the first epoch; 'tanh' and "
               "'sigmoid' start nearly linear and may stay at PCA's solution for many epochs; "
               "'identity' gives a linear autoencoder (PCA's subspace).",
               choices=("identity", "tanh", "sigmoid", "relu")),
        Float("learning_rate", 3e-3, "Adam's step size (on data scaled to unit mean square).",
              low=0.0, low_open=True, log=True),
        Int("batch_size", 64, "Rows per mini-batch.", low=1),
        Float("alpha", 0.0, "L2 penalty on the weights.", low=0.0),
        max_iter_param(200, "Epochs at most."),
        tol_param(1e-5, "Improvement of the mean squared reconstruction error (on the data scaled to "
                  "mean square 1) that counts, as in scikit-learn's MLP: stop when the error has not "
                  "fallen below its best minus tol for more than n_iter_no_change epochs in a row "
                  "(tol 0: any decrease counts)."),
        Int("n_iter_no_change", 10, "Epochs without an improvement of tol tolerated before stopping "
            "(n_iter_no_change >= max_iter: always max_iter epochs).", low=1),
        Bool("early_stopping", False, "Hold out validation_fraction of the rows, stop when their "
             "reconstruction error stops improving and keep the weights best on them."),
        Float("validation_fraction", 0.1, "Share of rows held out for early stopping.", low=0.0,
              high=0.5, low_open=True),
        random_state_param("Seed of the initial weights, the batches and the validation split."),
    )
    min_samples = 2

    # -- network ---------------------------------------------------------------------------------
    def _layers(self, d: int) -> tuple[int, ...]:
        hidden = tuple(self._p["hidden_layer_sizes"])
        return (d, *hidden, self._p["n_components"], *reversed(hidden), d)

    @staticmethod
    def _activations(activation: str, n_hidden: int, code: str = "identity") -> tuple[str, ...]:
        """Per hidden layer of the whole network: the encoder's, the code's, the decoder's."""
        return (activation,) * n_hidden + (code,) + (activation,) * n_hidden

    def _network(self) -> FeedForwardNetwork:
        net = getattr(self, "_net", None)
        if net is None or net.params is not self.params_:
            acts = self._activations(self.activation_, (len(self.layer_sizes_) - 3) // 2, self.code_activation_)
            net = FeedForwardNetwork(tuple(self.layer_sizes_), acts, "identity")
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
        if p["early_stopping"]:
            n_val = max(1, int(round(p["validation_fraction"] * n)))
            if n - n_val < 1:
                raise DataError(f"{n} rows are too few to hold out a validation fraction.")
            order = rng.permutation(n)
            valid, Z = Z[order[:n_val]], Z[order[n_val:]]
        hidden = tuple(p["hidden_layer_sizes"])
        net = FeedForwardNetwork(self._layers(d), self._activations(p["activation"], len(hidden)),
                                 "identity").init_glorot(rng)
        opt = make_optimizer("adam", net.n_params, p["learning_rate"])
        curve = CurvePublisher(progress, "Reconstruction error per epoch", x_label="epoch",
                               y_label="mean squared error", log_y=True)
        batch = min(p["batch_size"], Z.shape[0])
        max_iter, rows = p["max_iter"], Z.shape[0]
        check_every = batches_per_checkpoint(rows, batch, net.n_params)
        stop = NoImprovement(p["tol"], p["n_iter_no_change"])
        losses, val_losses = [], []
        best_params = net.params.copy() if valid is not None else None
        self.stopped_early_ = False
        epoch = 0

        def inner(done):
            progress.checkpoint((epoch - 1 + done / rows) / max_iter, f"epoch {epoch} of {max_iter}")

        try:
            for epoch in range(1, max_iter + 1):
                progress.checkpoint((epoch - 1) / max_iter, f"epoch {epoch} of {max_iter}")
                # train_epoch's loss is ½ the mean squared norm of the error (+ the penalty)
                loss = 2.0 * train_epoch(net, opt, Z, Z, batch, p["alpha"], rng, inner, check_every) / d
                if not np.isfinite(loss):
                    raise DataError("The reconstruction error became infinite or NaN: lower learning_rate.")
                losses.append(loss)
                if valid is None:
                    curve.add(epoch, train=loss)
                    score = loss
                else:
                    score = float(np.mean((net.forward(valid) - valid) ** 2))
                    val_losses.append(score)
                    curve.add(epoch, train=loss, validation=score)
                    if score < stop.best:
                        best_params[:] = net.params
                if stop.update(score):
                    break
            else:
                self._warn(f"The autoencoder reached max_iter={max_iter} epochs before its error stopped "
                           "improving; raise max_iter for a closer fit.", ConvergenceWarning)
        except FitCancelled:
            if not losses:
                raise
            self._stop_early(f"after {len(losses)} of {max_iter} epochs")
        curve.flush()
        if best_params is not None:
            net.params[:] = best_params
        self.layer_sizes_ = list(net.layer_sizes)
        self.activation_ = p["activation"]
        self.code_activation_ = "identity"
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
