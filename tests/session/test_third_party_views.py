"""Issue 29: in the window (``session.isolate_third_party``), a view never recomputes a run's
prepared data through a third-party preparation step in the window's process — the step runs in
a worker process only; scripts and the command line (the flag off) compute it as before."""
import pytest

from manifold_studio.errors import DataError
from manifold_studio.session.model import Session


@pytest.fixture
def session(monkeypatch):
    s = Session()
    s.load("sample:iris")
    s.set_chain([("standardize", {})])
    run = s.run("kmeans", n_clusters=3)
    # standardize plays a step from another distribution
    monkeypatch.setattr(s.host, "is_third_party", lambda step: step == "standardize")
    return s, run


def test_the_window_refuses_to_apply_a_third_party_step_for_a_view(session):
    s, run = session
    s.isolate_third_party = True
    with pytest.raises(DataError, match="third-party preparation step 'standardize'.*worker process"):
        s.prepared_data(run.id)
    with pytest.raises(DataError, match="third-party preparation step 'standardize'"):
        s.prepared_dataset()


def test_scripts_compute_it_as_before(session):
    s, run = session
    X, cols, caption = s.prepared_data(run.id)
    assert X.shape == (150, 4) and abs(X.mean()) < 1e-12 and "standardize" in caption
