"""Entry script of the installed (frozen) application: the same ``main`` as the
``manifold-studio`` command of a pip install (no arguments: the window; ``--self-test``: the
installation check; every other command of the command line works too)."""
import multiprocessing
import sys

from manifold_studio.algorithms.jit_cache import configure as configure_jit_cache

# before anything imports numba: its cache in the user's folder, seeded from the shipped one
configure_jit_cache()

from manifold_studio.cli.main import main  # noqa: E402

if __name__ == "__main__":
    multiprocessing.freeze_support()
    sys.exit(main())
