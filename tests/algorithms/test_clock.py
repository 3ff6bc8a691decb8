"""Nothing depends on the host's uptime: time.monotonic() counts from boot, so a machine booted
a minute ago reads a few seconds. The throttles publish their first report at once whatever the
clock reads (issue 19: CurvePublisher and CallbackProgress started their 'last sent' at 0.0)."""
import time

import pytest

from manifold_studio.algorithms.curves import CurvePublisher
from manifold_studio.algorithms.progress import CallbackProgress
from fakes import RecordingProgress  # noqa: E402


@pytest.fixture(params=[0.0, 3.0, 59.0, 1e6])
def booted(request, monkeypatch):
    """time.monotonic() as on a machine booted ``param`` seconds ago; each call advances 1 ms."""
    clock = [request.param]

    def monotonic():
        clock[0] += 0.001
        return clock[0]

    monkeypatch.setattr(time, "monotonic", monotonic)
    return clock


def test_curve_publisher_sends_its_first_point_at_once(booted):
    rec = RecordingProgress()
    pub = CurvePublisher(rec, "Loss", min_interval=3600)
    for i in range(20):
        pub.add(i, loss=1.0 / (i + 1))
    assert len(rec.partials) == 1 and rec.partials[0].x.tolist() == [0.0]
    booted[0] += 3600  # an hour later the next point goes out
    pub.add(20, loss=0.01)
    assert len(rec.partials) == 2 and rec.partials[1].x.shape == (21,)


def test_callback_progress_reports_its_first_checkpoint_at_once(booted):
    seen = []
    prog = CallbackProgress(on_progress=lambda f, m: seen.append((f, m)), min_interval=3600)
    prog.checkpoint(0.1, "first")
    prog.checkpoint(0.2, "throttled")
    prog.checkpoint(1.0, "done")  # the final report always goes out
    assert seen == [(0.1, "first"), (1.0, "done")]
