"""Fixtures of the session tests: a fresh session with one sample loaded."""
from __future__ import annotations

import pytest

from manifold_studio.session.model import Session


def _session_with(sample: str) -> Session:
    s = Session()
    s.load(f"sample:{sample}")
    return s


@pytest.fixture
def iris() -> Session:
    return _session_with("iris")


@pytest.fixture
def wine() -> Session:
    return _session_with("wine")
