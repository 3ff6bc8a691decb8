"""Plugin host: discovery through entry points and isolation of every failure mode.

Third-party plugins are simulated with a real distribution (a ``*.dist-info`` folder with
``entry_points.txt``) placed on ``sys.path``, so discovery takes exactly the path an
installed plugin takes.
"""
import importlib
import sys
import textwrap

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.plugins import host as plugins
from manifold_studio.plugins.host import DISABLE_ENV, PluginHost

GOOD = '''
import numpy as np
from manifold_studio.algorithms import EmbeddingAlgorithm, Int
from manifold_studio.hookspecs import hookimpl

class FirstColumns(EmbeddingAlgorithm):
    id = "first_columns"
    name = "First columns"
    help = "Keeps the first n_components columns of the data; a minimal third-party plugin."
    params = (Int("n_components", 2, "How many leading columns to keep.", low=1),)

    def _fit(self, X, y, progress):
        progress.checkpoint(0.0, "copying")
        self.embedding_ = X[:, :self._p["n_components"]].copy()

    def _extend(self, X):
        return X[:, :self.n_components]

@hookimpl
def register_algorithms():
    return [FirstColumns]
'''

BROKEN_IMPORT = "import this_module_does_not_exist_anywhere\n"

RAISING_HOOK = '''
from manifold_studio.hookspecs import hookimpl

@hookimpl
def register_algorithms():
    raise RuntimeError("boom in the hook")
'''

INVALID_RETURN = '''
from manifold_studio.hookspecs import hookimpl

class NotAnAlgorithm:
    id = "nope"

@hookimpl
def register_algorithms():
    return [NotAnAlgorithm, 42]

@hookimpl
def register_loaders():
    return "not a list"
'''

DUPLICATE_ID = '''
from manifold_studio.hookspecs import hookimpl
from manifold_studio.algorithms import EmbeddingAlgorithm

class FakePCA(EmbeddingAlgorithm):
    id = "pca"
    name = "Fake PCA"
    help = "Tries to take over the id of the built-in PCA, which must be refused."
    def _fit(self, X, y, progress):
        self.embedding_ = X
    def _extend(self, X):
        return X

@hookimpl
def register_algorithms():
    return [FakePCA]
'''

MISSPELLED_HOOK = '''
from manifold_studio.hookspecs import hookimpl
from manifold_studio.algorithms import EmbeddingAlgorithm

class Misspelled(EmbeddingAlgorithm):
    id = "misspelled_hook_algo"
    name = "Registered through a misspelled hook"
    help = "Never reachable: its hook is register_algorithm, not register_algorithms."
    def _fit(self, X, y, progress):
        self.embedding_ = X
    def _extend(self, X):
        return X

@hookimpl
def register_algorithm():
    return [Misspelled]
'''

MODULES = {
    "thirdparty_good": GOOD,
    "thirdparty_misspelled_hook": MISSPELLED_HOOK,
    "thirdparty_broken_import": BROKEN_IMPORT,
    "thirdparty_raising_hook": RAISING_HOOK,
    "thirdparty_invalid_return": INVALID_RETURN,
    "thirdparty_duplicate_id": DUPLICATE_ID,
}


@pytest.fixture
def third_party(tmp_path, monkeypatch):
    """Install a fake 'thirdparty-plugins' distribution with six entry points."""
    for name, code in MODULES.items():
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(code))
    dist = tmp_path / "thirdparty_plugins-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-plugins\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        "[manifold_studio.plugins]\n" + "".join(f"{n} = {n}\n" for n in MODULES))
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.invalidate_caches()
    yield tmp_path
    for name in MODULES:
        sys.modules.pop(name, None)


def _failures(host, plugin):
    return [f for f in host.failures if f.plugin == plugin]


def test_builtins_arrive_through_entry_points():
    host = PluginHost().discover()
    assert "pca" in host.algorithms
    info = [p for p in host.plugins.values() if "pca" in p.algorithms][0]
    assert info.builtin and info.distribution.lower().replace("_", "-") == "manifold-studio"
    assert host.algorithms["pca"].__module__ == "manifold_studio_builtins.pca"


def test_good_third_party_plugin_loads_and_works(third_party):
    host = PluginHost().discover()
    assert "first_columns" in host.algorithms
    est = host.algorithms["first_columns"](n_components=1).fit(np.arange(12.0).reshape(4, 3))
    np.testing.assert_array_equal(est.extend([[7.0, 8.0, 9.0]]), [[7.0]])


def test_import_failure_is_recorded_and_others_load(third_party):
    host = PluginHost().discover()
    (fail,) = _failures(host, "thirdparty_broken_import")
    assert fail.stage == "import" and "this_module_does_not_exist_anywhere" in fail.error
    assert "pca" in host.algorithms and "first_columns" in host.algorithms


def test_raising_hook_is_recorded_and_others_load(third_party):
    host = PluginHost().discover()
    (fail,) = _failures(host, "thirdparty_raising_hook")
    assert fail.stage == "hook" and "boom in the hook" in fail.error
    assert "register_algorithms" in fail.error
    assert "first_columns" in host.algorithms


def test_invalid_returns_are_recorded(third_party):
    host = PluginHost().discover()
    fails = _failures(host, "thirdparty_invalid_return")
    assert {f.stage for f in fails} == {"invalid"}
    text = " ".join(f.error for f in fails)
    assert "NotAnAlgorithm" in text and "42" in text and "must return a list" in text
    assert "nope" not in host.algorithms


def test_duplicate_id_cannot_replace_a_builtin(third_party):
    host = PluginHost().discover()
    (fail,) = _failures(host, "thirdparty_duplicate_id")
    assert "already provided" in fail.error
    assert host.algorithms["pca"].__module__ == "manifold_studio_builtins.pca"


def test_environment_variable_disables_third_party_plugins(third_party, monkeypatch):
    monkeypatch.setenv(DISABLE_ENV, "1")
    host = PluginHost().discover()
    assert "first_columns" not in host.algorithms
    assert "pca" in host.algorithms
    assert not any(f.plugin.startswith("thirdparty") for f in host.failures)
    assert set(MODULES) <= set(host.disabled)


def test_public_api_uses_the_host(third_party, fresh_host):
    # fresh_host was discovered after the fake distribution was installed
    assert "first_columns" in ms.list_algorithms()
    assert "first_columns" in ms.list_algorithms(kind="embedding")
    assert "first_columns" not in ms.list_algorithms(kind="clustering")
    est = ms.get_algorithm("first_columns", n_components=1)
    assert est.get_params() == {"n_components": 1}
    with pytest.raises(ms.UnknownAlgorithmError, match="Unknown algorithm 'nope'.*pca"):
        ms.get_algorithm("nope")


def test_register_object_directly():
    host = PluginHost()

    class Plugin:
        @plugins.hookspecs.hookimpl
        def register_algorithms(self):
            raise ValueError("bad object plugin")

    host.register(Plugin(), name="object_plugin")
    (fail,) = host.failures
    assert fail.plugin == "object_plugin" and "bad object plugin" in fail.error


def test_misspelled_hook_is_refused_naming_it_and_others_load(third_party):
    host = PluginHost().discover()
    (fail,) = _failures(host, "thirdparty_misspelled_hook")
    assert fail.quarantined and fail.stage == "import"   # refused by its import probe
    assert "unknown hook 'register_algorithm' (did you mean 'register_algorithms'?)" in fail.error
    assert "thirdparty_misspelled_hook" not in host.plugins
    assert "misspelled_hook_algo" not in host.algorithms
    assert "first_columns" in host.algorithms and "pca" in host.algorithms
    host.pm.check_pending()   # nothing unknown is left registered


def test_plugin_with_a_good_and_a_misspelled_hook_is_refused_whole():
    host = PluginHost()
    seen = []

    class Plugin:
        @plugins.hookspecs.hookimpl
        def register_samples(self):
            seen.append("called")
            return []

        @plugins.hookspecs.hookimpl
        def register_preprocesors(self):
            return []

    assert host.register(Plugin(), name="half_right") is None
    (fail,) = host.failures
    assert "'register_preprocesors' (did you mean 'register_preprocessors'?)" in fail.error
    assert not seen and "half_right" not in host.plugins
    assert host.pm.get_plugin("half_right") is None
