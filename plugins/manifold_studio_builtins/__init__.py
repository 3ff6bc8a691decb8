"""Manifold Studio's built-in plugins.

Each module here is a plugin of its own, advertised in the project's ``pyproject.toml``
under the entry-point group ``manifold_studio.plugins``, exactly as a third-party plugin
would be. Manifold Studio never imports this package by name.
"""
