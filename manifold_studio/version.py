"""The version of Manifold Studio (one place: the package, the plugin manager and the installer read it)."""

__version__ = "0.1.0"
