"""Deliberately broken third-party preparation steps (and a decoding algorithm) in a plugin folder,
for the isolation tests (tests/cli/test_cli_isolated_steps.py, tests/session/test_isolated_steps.py,
tests/gui/test_gui_isolated_views.py)."""
import os
import textwrap

import pytest

from manifold_studio.plugins.host import PluginHost, get_host, reset_host

STEP_PLUGIN = '''
import ctypes
import os

import numpy as np

from manifold_studio.algorithms import ClusteringAlgorithm, EmbeddingAlgorithm, Fitted, Int
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


class _Step(Preprocessor):
    params = ()
    help = "A deliberately broken preparation step for the isolation tests."

    def _fit(self, X):
        with open(os.environ["CLI_STEP_PID_FILE"], "w") as fh:
            fh.write(str(os.getpid()))
        self.crash()
        self.scale_ = 2.0

    def _transform(self, X):
        if os.environ.get("STEP_CRASH_AFTER_FIT"):   # anywhere but the process that fitted it
            with open(os.environ["CLI_STEP_PID_FILE"]) as fh:
                if fh.read() != str(os.getpid()):
                    ctypes.string_at(0)
        how = os.environ.get("STEP_CRASH_IN_TRANSFORM")
        if how == "segv":
            ctypes.string_at(0)
        elif how == "exit7":
            os._exit(7)
        return X * 2.0

    def crash(self):
        pass


class Doubles(_Step):
    id, name = "tp_double", "Doubles every value"


class Segfault(_Step):
    id, name = "tp_segv", "Segfaults in fit"

    def crash(self):
        ctypes.string_at(0)


class Exit7(_Step):
    id, name = "tp_exit7", "Calls os._exit(7) in fit"

    def crash(self):
        os._exit(7)


@hookimpl
def register_preprocessors():
    return [Doubles, Segfault, Exit7]


def _crash_outside_fit():
    if os.environ.get("STEP_CRASH_AFTER_FIT"):   # anywhere but the process that fitted it
        with open(os.environ["CLI_STEP_PID_FILE"]) as fh:
            if fh.read() != str(os.getpid()):
                ctypes.string_at(0)


class Decoder(EmbeddingAlgorithm):
    """PCA by SVD, with inverse_transform: a third-party method the window reconstructs with."""
    id, name = "tp_decoder", "Third-party PCA that decodes"
    help = "PCA by SVD; segfaults outside its fitting process when STEP_CRASH_AFTER_FIT is set."
    params = (Int("n_components", 2, "Components.", low=1),)
    fitted_schema = {"components_": Fitted(shape=(None, "n_features_in_"), required=True),
                     "mean_": Fitted(shape=("n_features_in_",), required=True),
                     "embedding_": Fitted(shape=(None, None))}

    def _fit(self, X, y, progress):
        with open(os.environ["CLI_STEP_PID_FILE"], "w") as fh:
            fh.write(str(os.getpid()))
        self.mean_ = X.mean(axis=0)
        _, _, vt = np.linalg.svd(X - self.mean_, full_matrices=False)
        self.components_ = vt[:self._p["n_components"]]
        self.embedding_ = (X - self.mean_) @ self.components_.T

    def _extend(self, X):
        _crash_outside_fit()
        return (X - self.mean_) @ self.components_.T

    def inverse_transform(self, codes):
        _crash_outside_fit()
        return np.asarray(codes, dtype=float) @ self.components_ + self.mean_


class Bands(ClusteringAlgorithm):
    """Clusters by bands of the first column (quantiles): a third-party clustering with a number of
    clusters; segfaults in fit when STEP_CRASH_IN_FIT is set."""
    id, name = "tp_bands", "Third-party bands"
    help = "k bands of the first column; segfaults in fit when STEP_CRASH_IN_FIT is set."
    params = (Int("n_clusters", 3, "Bands.", low=1),)
    fitted_schema = {"edges_": Fitted(shape=(None,), required=True), "labels_": Fitted(shape=(None,))}

    def _fit(self, X, y, progress):
        with open(os.environ["CLI_STEP_PID_FILE"], "w") as fh:
            fh.write(str(os.getpid()))
        if os.environ.get("STEP_CRASH_IN_FIT"):
            ctypes.string_at(0)
        k = self._p["n_clusters"]
        self.edges_ = np.quantile(X[:, 0], np.linspace(0, 1, k + 1)[1:-1])
        self.labels_ = np.searchsorted(self.edges_, X[:, 0], side="right")

    def _extend(self, X):
        return np.searchsorted(self.edges_, X[:, 0], side="right")


@hookimpl
def register_algorithms():
    return [Decoder, Bands]
'''


def step_env(tmp_path):
    """The command's environment: a plugin folder under ``tmp_path`` holding STEP_PLUGIN."""
    folder = tmp_path / "plugins" / "tp-steps"
    folder.mkdir(parents=True)
    (folder / "tp_steps_plugin.py").write_text(textwrap.dedent(STEP_PLUGIN))
    di = folder / "tp_steps-1.0.dist-info"
    di.mkdir()
    (di / "METADATA").write_text("Metadata-Version: 2.1\nName: tp-steps\nVersion: 1.0\n")
    (di / "entry_points.txt").write_text("[manifold_studio.plugins]\ntp_steps = tp_steps_plugin\n")
    e = dict(os.environ)
    e.update({"MANIFOLD_STUDIO_PLUGIN_DIR": str(tmp_path / "plugins"),
              "MANIFOLD_STUDIO_RECOVERY_DIR": str(tmp_path / "recovery"),
              "CLI_STEP_PID_FILE": str(tmp_path / "step.pid")})
    for var in ("MANIFOLD_STUDIO_PLUGIN_SETTINGS", "MANIFOLD_STUDIO_DISABLE_PLUGINS", "MANIFOLD_STUDIO_DEBUG"):
        e.pop(var, None)
    return e


@pytest.fixture
def steps_host(tmp_path, monkeypatch):
    """The plugin host with the broken steps' plugin folder installed (a test imports it as a
    fixture: ``from broken_steps import steps_host``)."""
    env = step_env(tmp_path)
    for key in ("MANIFOLD_STUDIO_PLUGIN_DIR", "MANIFOLD_STUDIO_RECOVERY_DIR", "CLI_STEP_PID_FILE"):
        monkeypatch.setenv(key, env[key])
    old = get_host()
    host = reset_host(PluginHost().discover())
    yield host
    reset_host(old)
