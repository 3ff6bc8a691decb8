"""Plugin hook specifications: the contract between Manifold Studio and its plugins.

A plugin is any importable module (or object) advertised under the entry-point group
``manifold_studio.plugins`` in its distribution's metadata::

    [project.entry-points."manifold_studio.plugins"]
    my_plugin = "my_package.my_module"

and implementing one or more of the hooks below, marked with :data:`hookimpl`::

    from manifold_studio.hookspecs import hookimpl

    @hookimpl
    def register_algorithms():
        return [MyAlgorithm]
"""
import pluggy

PROJECT_NAME = "manifold_studio"
ENTRY_POINT_GROUP = "manifold_studio.plugins"

hookspec = pluggy.HookspecMarker(PROJECT_NAME)
hookimpl = pluggy.HookimplMarker(PROJECT_NAME)


@hookspec
def register_algorithms():
    """Return a list of algorithm classes (subclasses of
    :class:`manifold_studio.algorithms.Algorithm`), each with a unique ``id``."""


@hookspec
def register_loaders():
    """Return a list of :class:`manifold_studio.data.Loader` instances (file readers)."""


@hookspec
def register_samples():
    """Return a list of :class:`manifold_studio.data.Sample` instances (sample data sets)."""


@hookspec
def register_preprocessors():
    """Return a list of preparation-step classes (subclasses of
    :class:`manifold_studio.algorithms.preprocessing.Preprocessor`), each with a unique ``id``."""
