"""Shared test setup: headless Qt, a fresh plugin host per test where needed."""
import os
import sys
from pathlib import Path

if not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

TESTS_DIR = Path(__file__).resolve().parent
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def fresh_host():
    """A freshly discovered plugin host installed as the process-wide one (restored after)."""
    from manifold_studio import plugins

    old = plugins._host
    host = plugins.reset_host(plugins.PluginHost().discover())
    yield host
    plugins.reset_host(old)
