"""The Qt desktop interface (the only package that imports Qt or pyqtgraph).

Start it with :func:`manifold_studio.gui.app.main` (``manifold-studio`` without arguments, or
``python -m manifold_studio.gui``). The window is :class:`manifold_studio.gui.main_window.MainWindow`;
its module docstring explains how views, tools and jobs plug in.
"""
from manifold_studio.gui.app import main as _main


def main(argv=None) -> int:
    return _main(argv)
