"""How a finished fit is said (issue 33): a fit Cancel stopped early says "stopped ... at your
request", never "done in" — in the session's log as in the window (tests/gui/test_gui_messages.py)."""
from __future__ import annotations

import numpy as np
import pytest

from manifold_studio.session.model import Session
from manifold_studio.session.records import FitOutcome, Run, run_end_text


def test_run_end_text_says_done_or_stopped():
    run = Run(1, "tsne", {}, "iris", timings={"duration_s": 4.7149})
    assert run_end_text(run) == "done in 4.71 s"
    run.meta["stopped_early"] = True
    run.embedding = np.zeros((3, 2))
    assert run_end_text(run) == ("stopped after 4.71 s at your request "
                                 "(the map when Cancel was pressed is kept)")
    run.embedding = None  # a clustering: its labels are the result kept
    assert run_end_text(run) == ("stopped after 4.71 s at your request "
                                 "(the result when Cancel was pressed is kept)")


class _Stopped:
    stopped_early_ = True
    fit_time_ = 0.25


@pytest.mark.parametrize("stopped", [False, True])
def test_the_log_of_a_completed_run_says_how_it_ended(stopped):
    session = Session()
    session.load("sample:iris")
    run = session.create_run("pca", {})
    session.start_run(run.id)
    est = _Stopped() if stopped else type("Done", (), {"fit_time_": 0.25})()
    session.complete_run(run.id, FitOutcome(est, embedding=np.zeros((150, 2))))
    last = session.history[-1].message
    assert last == f"Run {run.title()} {run_end_text(run)}"
    assert ("stopped after" in last and "at your request" in last and "done in" not in last) == stopped
    assert ("done in" in last) != stopped
