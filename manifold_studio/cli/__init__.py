"""The ``manifold-studio`` command line (no Qt import unless the window is started)."""
