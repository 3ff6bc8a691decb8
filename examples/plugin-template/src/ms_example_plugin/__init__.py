"""A template Manifold Studio plugin (see AUTHORS_GUIDE.md)."""
__version__ = "0.1.0"
