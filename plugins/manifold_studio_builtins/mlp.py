"""Multilayer perceptron trained by back-propagation (seed 003, "Réseaux de neurones").

The seed's network: hidden units N(x) = sigm(a_N·Pa(N)(x) + b_N) with sigm(α) = 1/(1 + e^(−λα)),
weights learned by gradient descent with the error back-propagated from the outputs (δN =
sigm′·Σ a_NM δM), weights initialised at random (never 0), one output per class, and its three
remedies: restarts from different initial weights keeping the network best on a validation set,
early stopping when the validation performance stops improving, and growing the hidden layer
one unit at a time while the validation performance improves.

The outputs are a softmax over one unit per class trained with the cross-entropy (the
probabilistic reading of "one output per class"); ``output="sigmoid"`` gives the seed's exact
network instead: a sigmoid unit per class trained with the squared error ½Σ(h(x) − u)².
The numerics are :mod:`manifold_studio.algorithms.neural_net` (mini-batch SGD with momentum or
Adam, L2 penalty α, Glorot initialisation, as scikit-learn's MLPClassifier).
"""
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from manifold_studio.algorithms.sparse_input import SparseInput
from manifold_studio.algorithms import Bool, Choice, ClassificationAlgorithm, FitCancelled, Float, Int, IntTuple
from manifold_studio.algorithms.checks import check_random_state
from manifold_studio.algorithms.curves import CurvePublisher, epoch_curve
from manifold_studio.algorithms.neural_net import FeedForwardNetwork, make_optimizer, train_epoch
from manifold_studio.algorithms.params import max_iter_param, random_state_param, tol_param
from manifold_studio.algorithms.state_schema import Fitted
from manifold_studio.errors import ConvergenceWarning, DataError, InvalidParameterError
from manifold_studio.hookspecs import hookimpl

#: rows × weights processed between two progress checkpoints inside an epoch (~0.1 s)
_WORK_PER_CHECKPOINT = 2.0e8


def stratified_split(y_idx: np.ndarray, fraction: float, rng: np.random.Generator):
    """(train_rows, validation_rows), sorted: about ``fraction`` of each class held out (at least
    one row of a class with two or more rows, never its last one)."""
    val = []
    for k in np.unique(y_idx):
        rows = np.flatnonzero(y_idx == k)
        take = int(round(fraction * rows.size))
        take = min(max(take, 1 if rows.size > 1 else 0), rows.size - 1)
        val.append(rng.permutation(rows)[:take])
    val = np.sort(np.concatenate(val))
    train = np.setdiff1d(np.arange(y_idx.size), val)
    return train, val


class _Run:
    """The outcome of training one network: its weights and its curves."""

    def __init__(self, net):
        self.net = net
        self.loss, self.val_score, self.val_loss, self.units = [], [], [], []
        self.best_score = -np.inf
        self.best_val_loss = np.inf
        self.epochs = 0
        self.converged = False

    def key(self, use_validation: bool):
        """Larger is better: validation (accuracy, −loss), or −training loss."""
        if use_validation:
            return (self.best_score, -self.best_val_loss)
        return (-self.loss[-1] if self.loss else -np.inf, 0.0)


class MLP(SparseInput, ClassificationAlgorithm):
    """Multilayer perceptron classifier (back-propagation, seed 003).

    Sparse X (CSR) is never densified: the first layer multiplies the sparse rows (forward and
    gradient); the rest of the network is dense.

    Parameters
    ----------
    hidden_layer_sizes : tuple of int
        Units of each hidden layer, e.g. (100,) or (64, 32).
    activation : {"sigmoid", "tanh", "relu"}
        Hidden units. Default "relu" (as scikit-learn): the seed defines the network with sigmoid
        units 1/(1 + e^(−λz)), but with Adam's default step and the stopping rule, sigmoid units
        sit on the flat start of the loss long enough for the rule to end training near chance on
        simple problems (two nested circles: 50% with sigmoid, 95% with relu, as scikit-learn's
        logistic MLP does). The seed's network is ``activation="sigmoid"`` (with
        ``output="sigmoid"`` for its exact form) and a larger ``learning_rate`` (0.01 to 0.03);
        on digits both reach the same accuracy (benchmarks/results/mlp.txt).
    sigmoid_lambda : float
        Slope λ of the sigmoid (larger: closer to a step).
    output : {"softmax", "sigmoid"}
        One output unit per class: softmax with the cross-entropy (probabilities), or the seed's
        sigmoid units with the squared error ½Σ(h(x) − u)².
    solver : {"adam", "sgd"}
        Adam, or mini-batch gradient descent with momentum.
    learning_rate : float
        Step η (the seed's τ).
    momentum, nesterov : momentum of "sgd" and whether it is Nesterov's.
    batch_size : int or None
        Rows per gradient step; None: min(200, n). 1 is the seed's example-by-example rule.
    alpha : float
        L2 penalty (α/2m)Σ‖W‖² on the weights (not the biases).
    max_iter : int
        Maximum number of epochs (per network, and per size when growing).
    tol, n_iter_no_change : stop when the training loss (or, with early stopping, the validation
        accuracy) has not improved by ``tol`` for ``n_iter_no_change`` consecutive epochs.
    early_stopping : bool
        Hold out ``validation_fraction`` of the rows (stratified, seeded), stop when the
        validation accuracy stops improving and keep the weights best on it.
    validation_fraction : float
    n_restarts : int
        Networks trained from different random weights; the one best on validation (accuracy,
        then loss) is kept — or with the lowest training loss when there is no validation set.
    grow_hidden : bool
        One hidden layer grown one unit at a time from 1 (each new unit with random incoming and
        zero outgoing weights, then all weights retrained) while the validation accuracy (then
        loss) improves, at most ``max_hidden_units``. Uses a validation set even without
        ``early_stopping``.
    max_hidden_units : int
    shuffle : bool
        Shuffle the rows at every epoch.
    warm_start : bool
        Start from the fitted weights when the architecture and classes are unchanged.
    random_state : int or None

    Attributes
    ----------
    coefs_, intercepts_ : lists of (fan_in, fan_out) and (fan_out,) arrays.
    loss_curve_ : training loss per epoch of the kept network.
    validation_scores_, validation_loss_curve_ : validation accuracy and loss per epoch (when a
        validation set is used).
    best_validation_score_, best_loss_ : float.
    n_iter_ : epochs of the kept network.
    best_restart_ : index of the kept restart; restart_scores_ : its criterion for every restart.
    n_hidden_ : hidden units of the grown network (grow_hidden); hidden_units_curve_ : units at
        each epoch; growth_scores_ : validation accuracy for each size tried.
    converged_ : whether the stopping rule ended training before max_iter.

    Examples
    --------
    >>> import manifold_studio as ms
    >>> iris = ms.load_data("sample:iris")
    >>> X, y = iris.X, iris.labels
    >>> clf = ms.get_algorithm("mlp", hidden_layer_sizes=(10,), max_iter=300, random_state=0).fit(X, y)
    >>> bool(clf.score(X, y) > 0.9)
    True
    >>> clf.predict(X[:3]).shape
    (3,)
    """

    preserves_float32 = True
    float32_attributes = ('coefs_', 'intercepts_')
    id = "mlp"
    name = "Multilayer perceptron"
    help = ("A neural network with hidden layers of sigmoid (or tanh, ReLU) units and one output per "
            "class, trained by back-propagation of the error (mini-batch gradient descent with "
            "momentum, or Adam). As in the seed: several restarts from random weights keep the "
            "network best on a validation set, early stopping halts when the validation accuracy "
            "stops improving, and the hidden layer can be grown one unit at a time while validation "
            "improves. Learns non-linear boundaries; scale the features first.")
    #: the fitted state a saved model may hold (checked before it is restored)
    fitted_schema = {
        "classes_": Fitted(shape=(None,), kinds="biufU", required=True),
        "n_layers_": Fitted(kinds="iu", required=True),
        # the weights of layer i (saved by fitted_state as coefs_0, intercepts_0, ...)
        "coefs_#": Fitted(shape=(None, None), scalar=False),
        "intercepts_#": Fitted(shape=(None,), scalar=False),
    }

    params = (
        IntTuple("hidden_layer_sizes", (100,), "Units of each hidden layer, comma-separated (e.g. 100 "
                 "or 64, 32)."),
        Choice("activation", "relu", "Hidden units: relu max(z, 0) (trains reliably with the default "
               "step), tanh, or the seed's sigmoid 1/(1+e^(−λz)) (give it a larger learning rate, e.g. 0.01).",
               choices=("sigmoid", "tanh", "relu")),
        Float("sigmoid_lambda", 1.0, "Slope λ of the sigmoid; larger is closer to a step.", low=0.0,
              low_open=True, log=True),
        Choice("output", "softmax", "Output units (one per class): softmax trained with the "
               "cross-entropy (gives probabilities), or the seed's sigmoid units trained with the "
               "squared error.", choices=("softmax", "sigmoid")),
        Choice("solver", "adam", "Adam (adaptive steps, robust default) or sgd (gradient descent "
               "with momentum).", choices=("adam", "sgd")),
        Float("learning_rate", 0.001, "Step size η (the seed's τ).", low=0.0, low_open=True, log=True),
        Float("momentum", 0.9, "Momentum of the sgd solver (0: plain gradient steps).", low=0.0, high=1.0),
        Bool("nesterov", True, "Use Nesterov's momentum with the sgd solver."),
        Int("batch_size", None, "Rows per gradient step; empty: min(200, number of rows); 1: the "
            "seed's example-by-example updates.", low=1, allow_none=True, log=True),
        Float("alpha", 1e-4, "L2 penalty on the weights (larger: smoother boundaries).", low=0.0, log=True),
        max_iter_param(200, "Maximum number of epochs (passes over the data) per network."),
        tol_param(1e-4, "Minimum improvement of the training loss (or of the validation accuracy "
                  "with early stopping) that counts as progress."),
        Int("n_iter_no_change", 10, "Stop after this many epochs without progress of at least tol.",
            low=1),
        Bool("early_stopping", False, "Hold out part of the data, stop when the validation accuracy "
             "stops improving, and keep the weights best on it."),
        Float("validation_fraction", 0.1, "Fraction of the rows held out for validation (stratified).",
              low=0.0, high=1.0, low_open=True, high_open=True),
        Int("n_restarts", 1, "Networks trained from different random initial weights; the best on "
            "validation (or on training loss without validation) is kept.", low=1),
        Bool("grow_hidden", False, "Grow a single hidden layer one unit at a time while the "
             "validation accuracy improves (uses a validation set)."),
        Int("max_hidden_units", 50, "Largest hidden layer grow_hidden may reach.", low=1),
        Bool("shuffle", True, "Shuffle the rows at every epoch."),
        Bool("warm_start", False, "Continue from the fitted weights when the architecture and the "
             "classes are unchanged."),
        random_state_param("Seed of the initial weights, shuffling and validation split (empty: "
                           "different every run)."),
    )

    # -- fitting ------------------------------------------------------------------------------
    def fit(self, X, y=None, progress=None):
        self._warm = None
        if getattr(self, "warm_start", False) and hasattr(self, "coefs_"):
            self._warm = ([c.copy() for c in self.coefs_], [b.copy() for b in self.intercepts_],
                          np.asarray(self.classes_).copy())
        return super().fit(X, y, progress)

    def _fit_classes(self, X, y_idx, progress):
        p = self._p
        if p["grow_hidden"] and len(p["hidden_layer_sizes"]) != 1:
            raise InvalidParameterError("grow_hidden grows a single hidden layer: give one hidden "
                                        f"layer size (got hidden_layer_sizes={p['hidden_layer_sizes']}).")
        rng = check_random_state(p["random_state"])
        X = sp.csr_matrix(X) if sp.issparse(X) else np.ascontiguousarray(X, dtype=float)
        K = self.classes_.size
        Y = np.zeros((X.shape[0], K))
        Y[np.arange(X.shape[0]), y_idx] = 1.0
        use_val = p["early_stopping"] or p["grow_hidden"]
        if use_val:
            tr, va = stratified_split(y_idx, p["validation_fraction"], rng)
            if va.size < 2 or tr.size < 2:
                raise DataError(f"The validation set is too small ({va.size} rows of {y_idx.size}): "
                                "increase validation_fraction or give more rows.")
            data = (X[tr], Y[tr], X[va], y_idx[va], Y[va])
        else:
            data = (X, Y, None, None, None)
        runs, best = [], None
        n_restarts = p["n_restarts"]
        progress.checkpoint(0.0, "Training the network")   # a Cancel here propagates (nothing to keep)
        cancelled = False
        for r in range(n_restarts):
            run = _Run(None)
            runs.append(run)
            try:
                self._train(run, data, rng, r, progress)
            except FitCancelled:
                cancelled = True
            if run.net is not None and run.epochs > 0 and (best is None or run.key(use_val) > best.key(use_val)):
                best = run
            if cancelled:
                break
        if best is None:   # cancelled before a single epoch ended
            raise FitCancelled("Cancelled before the first epoch ended.")
        if cancelled:
            self._stop_early(f"after {len(runs)} of {n_restarts} restarts, {runs[-1].epochs} epochs of the last")
        self._warm = None
        self._set_fitted(best, runs, use_val)
        if not best.converged and not cancelled and not p["grow_hidden"]:
            self._warn(f"The multilayer perceptron reached max_iter={p['max_iter']} epochs without "
                       "converging (the stopping rule never triggered); increase max_iter.",
                       ConvergenceWarning)

    def _train(self, run, data, rng, restart, progress):
        p = self._p
        X_tr = data[0]
        sizes = (X_tr.shape[1],) + tuple(p["hidden_layer_sizes"]) + (data[1].shape[1],)
        if p["grow_hidden"]:
            sizes = (X_tr.shape[1], 1, data[1].shape[1])
        net = FeedForwardNetwork(sizes, p["activation"], p["output"], p["sigmoid_lambda"]).init_glorot(rng)
        warm = self._warm
        if warm is not None and restart == 0 and not p["grow_hidden"] and np.array_equal(warm[2], self.classes_) \
                and [c.shape for c in warm[0]] == [c.shape for c in net.coefs]:
            net.set_weights(warm[0], warm[1])
        run.net = net
        n_restarts = p["n_restarts"]
        pub = CurvePublisher(progress, "Loss per epoch" + (f" (restart {restart + 1})" if n_restarts > 1 else ""),
                             x_label="epoch", y_label="loss")
        if not p["grow_hidden"]:
            span = (restart / n_restarts, (restart + 1) / n_restarts)
            self._epochs(run, net, data, rng, progress, pub, span, f"restart {restart + 1}/{n_restarts}, "
                         if n_restarts > 1 else "")
            pub.flush()
            return
        # grow the hidden layer one unit at a time while validation improves (seed 003)
        best_key, best_net, best_units = None, None, 0
        run.growth = []
        max_units = p["max_hidden_units"]
        for units in range(1, max_units + 1):
            if units > 1:
                net = self._add_unit(net, rng)
                run.net = net
            part = (restart + (units - 1) / max_units) / n_restarts
            span = (part, part + 1.0 / (max_units * n_restarts))
            run.best_score, run.best_val_loss = -np.inf, np.inf
            self._epochs(run, net, data, rng, progress, pub, span, f"{units} hidden units, ")
            key = (run.best_score, -run.best_val_loss)
            run.growth.append(run.best_score)
            if best_key is not None and key <= best_key:
                break
            best_key, best_net, best_units = key, net.copy(), units
        pub.flush()
        run.net = best_net
        run.best_score, run.best_val_loss = best_key[0], -best_key[1]
        run.n_hidden = best_units
        run.converged = True

    @staticmethod
    def _add_unit(net, rng):
        """The same network with one more hidden unit: random incoming weights (Glorot bound of
        the new size), zero outgoing weight, so the function is unchanged before retraining."""
        n_in, h, n_out = net.layer_sizes
        new = FeedForwardNetwork((n_in, h + 1, n_out), net.activation, net.output, net.sigmoid_lambda)
        new.init_glorot(rng)
        new.coefs[0][:, :h] = net.coefs[0]
        new.intercepts[0][:h] = net.intercepts[0]
        new.coefs[1][:h] = net.coefs[1]
        new.coefs[1][h] = 0.0
        new.intercepts[1][:] = net.intercepts[1]
        return new

    def _epochs(self, run, net, data, rng, progress, pub, span, prefix):
        """Train ``net`` for at most max_iter epochs with the stopping rule; with a validation set
        the weights best on it are restored at the end."""
        p = self._p
        X_tr, Y_tr, X_va, y_va, Y_va = data
        n = X_tr.shape[0]
        batch = min(p["batch_size"] or 200, n)
        opt = make_optimizer(p["solver"], net.n_params, p["learning_rate"], p["momentum"], p["nesterov"])
        alpha, tol, patience, max_iter = p["alpha"], p["tol"], p["n_iter_no_change"], p["max_iter"]
        shuffle = rng if p["shuffle"] else None
        per_batch = batch * net.n_params
        long_epoch = per_batch * np.ceil(n / batch) > _WORK_PER_CHECKPOINT
        check_every = max(1, int(_WORK_PER_CHECKPOINT // per_batch)) if long_epoch else 0
        use_val = X_va is not None
        best_params = net.params.copy() if use_val else None
        best_loss, no_change = np.inf, 0
        lo, hi = span
        epoch = 0

        def inner(rows):
            progress.checkpoint(lo + (hi - lo) * (epoch + rows / n) / max_iter, f"{prefix}epoch {epoch + 1}/{max_iter}")

        try:
            for epoch in range(max_iter):
                if epoch:
                    progress.checkpoint(lo + (hi - lo) * epoch / max_iter,
                                        f"{prefix}epoch {epoch + 1}/{max_iter}, loss {run.loss[-1]:.4g}")
                loss = train_epoch(net, opt, X_tr, Y_tr, batch, alpha, shuffle, inner, check_every)
                if not np.isfinite(loss):
                    raise DataError("The training loss became infinite or NaN: lower learning_rate or "
                                    "scale the features.")
                run.loss.append(loss)
                run.epochs += 1
                values = {"train": loss}
                if use_val:
                    score, vloss = self._evaluate(net, X_va, y_va, Y_va)
                    run.val_score.append(score)
                    run.val_loss.append(vloss)
                    values.update(validation=vloss, validation_accuracy=score)
                    no_change = no_change + 1 if score < run.best_score + tol else 0
                    if score > run.best_score or (score == run.best_score and vloss < run.best_val_loss):
                        run.best_score, run.best_val_loss = score, vloss
                        best_params[:] = net.params
                else:
                    no_change = no_change + 1 if loss > best_loss - tol else 0
                    best_loss = min(best_loss, loss)
                run.units.append(net.layer_sizes[1])
                pub.add(len(run.loss), **values)
                if no_change > patience:
                    run.converged = True
                    break
        finally:
            if use_val and run.best_score > -np.inf:
                net.params[:] = best_params

    @staticmethod
    def _evaluate(net, X, y_idx, Y):
        out = net.forward(X)
        score = float(np.mean(np.argmax(out, axis=1) == y_idx))
        if net.output == "softmax":
            vloss = float(-np.mean(np.log(np.clip(out[np.arange(y_idx.size), y_idx], 1e-300, None))))
        else:
            vloss = float(0.5 * np.sum((out - Y) ** 2) / y_idx.size)
        return score, vloss

    def _set_fitted(self, best, runs, use_val):
        net = best.net
        self.coefs_ = [c.copy() for c in net.coefs]
        self.intercepts_ = [b.copy() for b in net.intercepts]
        self.n_layers_ = net.n_layers + 1
        self.n_outputs_ = net.layer_sizes[-1]
        self.out_activation_ = net.output
        self.loss_curve_ = np.asarray(best.loss, dtype=float)
        self.best_loss_ = float(self.loss_curve_.min())
        self.n_iter_ = int(best.epochs)
        self.converged_ = bool(best.converged)
        self.best_restart_ = runs.index(best)
        self.restart_scores_ = np.array([r.key(use_val)[0] for r in runs], dtype=float)
        if use_val:
            self.validation_scores_ = np.asarray(best.val_score, dtype=float)
            self.validation_loss_curve_ = np.asarray(best.val_loss, dtype=float)
            self.best_validation_score_ = float(best.best_score)
        if self._p["grow_hidden"]:
            self.n_hidden_ = int(net.layer_sizes[1])
            self.hidden_units_curve_ = np.asarray(best.units, dtype=np.int64)
            self.growth_scores_ = np.asarray(best.growth, dtype=float)

    def _network(self):
        """The fitted network (built from ``coefs_`` / ``intercepts_`` at each call: predicting
        leaves the estimator's ``__dict__`` unchanged)."""
        sizes = (self.coefs_[0].shape[0],) + tuple(c.shape[1] for c in self.coefs_)
        net = FeedForwardNetwork(sizes, self._p["activation"], self._p["output"], self._p["sigmoid_lambda"])
        return net.set_weights(self.coefs_, self.intercepts_)

    # -- scores -------------------------------------------------------------------------------
    def _decision(self, X):
        net = self._network()
        Z = net.forward(X, logits=net.output == "softmax")
        return Z[:, 1] - Z[:, 0] if Z.shape[1] == 2 else Z

    def _has_proba(self) -> bool:
        return self._p["output"] == "softmax" if hasattr(self, "_p") else self.output == "softmax"

    def _proba(self, X):
        return self._network().forward(X)

    # -- results ------------------------------------------------------------------------------
    def fitted_state(self):
        state = {k: v for k, v in super().fitted_state().items()}
        for i, (W, b) in enumerate(zip(self.coefs_, self.intercepts_)):
            state[f"coefs_{i}"] = W
            state[f"intercepts_{i}"] = b
        return state

    def restore_state(self, state):
        state = dict(state)
        n = int(state["n_layers_"]) - 1
        coefs = [np.asarray(state.pop(f"coefs_{i}"), dtype=float) for i in range(n)]
        intercepts = [np.asarray(state.pop(f"intercepts_{i}"), dtype=float) for i in range(n)]
        super().restore_state(state)
        self.coefs_, self.intercepts_ = coefs, intercepts
        return self

    def training_curve(self):
        return epoch_curve(self, "Loss per epoch", "loss", validation_accuracy="validation_scores_")

    def result_summary(self):
        out = super().result_summary()
        if self.is_fitted:
            out["n_iter"] = self.n_iter_
            out["final_loss"] = round(float(self.loss_curve_[-1]), 6)
            if hasattr(self, "best_validation_score_"):
                out["best_validation_accuracy"] = round(self.best_validation_score_, 6)
            if hasattr(self, "n_hidden_"):
                out["n_hidden"] = self.n_hidden_
            if len(self.restart_scores_) > 1:
                out["best_restart"] = self.best_restart_
        return out


@hookimpl
def register_algorithms():
    return [MLP]
