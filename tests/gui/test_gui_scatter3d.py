"""pytest-qt tests of the 3-D view. Offscreen Qt has no OpenGL, so the view must say so and show
the three 2-D pairs of components (with the selection); a 2-component run needs 3 components.
The OpenGL path itself is checked under Xvfb (Mesa) in a subprocess when xvfb-run exists."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from gui_helpers import discovered_host

pytest.importorskip("pytestqt")


from manifold_studio.gui.views import scatter3d_view  # noqa: E402  (registers the view)
from manifold_studio.gui.views.scatter3d_view import Scatter3DView, install_scatter3d  # noqa: E402

WINDOW_DIALOGS = False
WINDOW_SIZE = (1300, 850)


@pytest.fixture
def host():
    return discovered_host(("pca",), ("iris",))


@pytest.fixture
def window(make_window, host):
    w = make_window(host)
    install_scatter3d(w)
    w.session.load("sample:iris")
    return w


def test_without_opengl_the_view_says_so_and_shows_the_three_pairs(qtbot, window):
    if not scatter3d_view.opengl_problem():
        pytest.skip("OpenGL works on this display: the fallback is not taken")
    run = window.session.run("pca", n_components=4)
    view: Scatter3DView = window.views["scatter3d"]
    assert view.applies_to(run)
    assert view.request() is False  # the 3-D request
    qtbot.waitUntil(view.isVisible, timeout=5_000)
    assert not view.uses_opengl and view.stack.currentWidget() is view.pairs_page
    assert "OpenGL is not available" in view.info.text() and "2-D pairs" in view.info.text()
    assert view.info.isVisible()
    assert "3-D view" in window.statusBar().currentMessage() and "OpenGL" in window.statusBar().currentMessage()
    emb = run.embedding
    pairs = {m.title_text: m for m in view.pairs}
    assert set(pairs) == {"components 1 – 2", "components 1 – 3", "components 2 – 3"}
    assert np.array_equal(pairs["components 1 – 2"].xy, emb[:, [0, 1]])
    assert np.array_equal(pairs["components 1 – 3"].xy, emb[:, [0, 2]])
    assert np.array_equal(pairs["components 2 – 3"].xy, emb[:, [1, 2]])
    assert all(np.array_equal(m.rows, np.arange(150)) for m in view.pairs)
    species = window.session.current_dataset.labels
    assert np.array_equal(view.pairs[0].coloring.codes, np.unique(species, return_inverse=True)[1].ravel())
    assert not view.rotate_check.isEnabled() and not view.timer.isActive()
    # other components on the axes
    view.set_components(2, 3, 4)
    pairs = {m.title_text: m for m in view.pairs}
    assert np.array_equal(pairs["components 2 – 4"].xy, emb[:, [1, 3]])
    assert np.array_equal(pairs["components 3 – 4"].xy, emb[:, [2, 3]])
    # the selection of the data set is highlighted in every pair
    selected = np.array([3, 60, 149])
    window.selection.select(run.dataset_name, selected)
    for m in view.pairs:
        assert np.array_equal(m.highlighted_rows(), selected)
    # nothing was lost
    assert run.id in window.session.runs and window.session.current_dataset is not None


def test_a_2_component_run_needs_3_components(qtbot, window):
    run3 = window.session.run("pca", n_components=3)
    run2 = window.session.run("pca", n_components=2)
    view = window.views["scatter3d"]
    assert view.applies_to(run3) and not view.applies_to(run2)
    window.scatter3d_action.trigger()  # View ▸ 3-D view of this run, on the current (2-component) run
    assert window.session.current_run is run2
    assert "needs 3 components" in view.info.text() and "has 2 components" in view.info.text()
    assert "needs 3 components" in window.statusBar().currentMessage()
    assert all(len(m.xy) == 0 for m in view.pairs) and view.xyz.shape == (0, 3)
    assert {run2.id, run3.id} <= set(window.session.runs)
    # and back to a 3-component run
    view.request(run3)
    assert view.xyz.shape == (150, 3) and np.array_equal(view.xyz, run3.embedding)


def test_a_failing_pyopengl_import_is_a_plain_message(qtbot, window, monkeypatch):
    def broken():
        raise ImportError("No module named 'OpenGL'")

    monkeypatch.setattr(scatter3d_view, "_import_gl", broken)
    monkeypatch.setattr(scatter3d_view, "_GL_PROBED", False)  # both restored after the test
    monkeypatch.setattr(scatter3d_view, "_GL_PROBLEM", None)
    problem = scatter3d_view.opengl_problem()
    assert "PyOpenGL" in problem and "pip install PyOpenGL" in problem
    run = window.session.run("pca", n_components=3)
    view = window.views["scatter3d"]
    view.request(run)
    assert "pip install PyOpenGL" in view.info.text() and view.stack.currentWidget() is view.pairs_page
    assert np.array_equal(view.pairs[2].xy, run.embedding[:, [1, 2]])


GL_SCRIPT = textwrap.dedent("""
    import sys, time
    import numpy as np
    from PySide6.QtWidgets import QApplication
    app = QApplication(sys.argv)
    from manifold_studio.plugins.host import PluginHost
    from manifold_studio.gui.views import scatter3d_view
    from manifold_studio.gui.main_window import MainWindow
    w = MainWindow(host=PluginHost().discover(), dialogs=False)
    scatter3d_view.install_scatter3d(w)
    w.resize(1200, 800); w.show()
    w.session.load("sample:iris")
    run = w.session.run("pca", n_components=3)
    view = w.views["scatter3d"]
    drawn = view.request()
    end = time.time() + 1.0
    while time.time() < end:
        app.processEvents()
    w.selection.select(run.dataset_name, [1, 2, 3, 50])
    img = view.gl_widget.grabFramebuffer()
    ink = int((np.frombuffer(img.constBits(), np.uint8).reshape(img.height(), -1)[:, :img.width() * 4] < 200).sum())
    print("RESULT", drawn, view.uses_opengl, view.gl_widget.isValid(), len(view.gl_scatter.pos),
          int(view.highlighted.sum()), view.timer.isActive(), ink > 1000)
    w.shutdown()
""")


@pytest.mark.skipif(shutil.which("xvfb-run") is None, reason="xvfb-run is not installed")
def test_with_opengl_under_xvfb_the_cloud_is_drawn_and_turns(tmp_path):
    script = tmp_path / "gl3d.py"
    script.write_text(GL_SCRIPT)
    env = {k: v for k, v in os.environ.items() if k != "QT_QPA_PLATFORM"}  # a real X display (xcb)
    proc = subprocess.run(["xvfb-run", "-a", sys.executable, str(script)], capture_output=True, text=True,
                          timeout=120, env=env)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT")), None)
    if line is None:
        pytest.skip(f"no OpenGL under Xvfb here: {proc.stderr[-500:]}")
    # drawn, uses OpenGL, valid context, 150 points, 4 highlighted, rotating, something on the image
    assert line.split()[1:] == ["True", "True", "True", "150", "4", "True", "True"]


def test_a_large_run_is_prepared_in_a_job_and_the_pairs_draw_a_sample(qtbot, make_window, host):
    if not scatter3d_view.opengl_problem():
        pytest.skip("OpenGL works on this display: the fallback is not taken")
    from manifold_studio.data import Dataset
    from manifold_studio.session.records import DONE, Run

    w = make_window(host)
    install_scatter3d(w)
    n = scatter3d_view.PREPARE_JOB_POINTS + 50_000
    X = np.random.default_rng(0).normal(size=(n, 4))
    w.session.add_dataset(Dataset("big", X, labels=(X[:, 0] > 0).astype(int)))
    run = w.session.add_run(Run(id=1, algorithm_id="given", params={}, dataset_name="big", kind="embedding",
                                status=DONE, embedding=X), make_current=True)
    view = w.views["scatter3d"]
    view.request(run)
    assert view.latest.job is not None and "Preparing the 3-D view" in view.info.text()
    qtbot.waitUntil(lambda: not view.latest.busy and len(view.xyz) == n, timeout=20_000)
    assert "2-D pairs" in view.info.text()
    m = view.pairs[1]  # components 1 – 3, every point kept for selection, a sample drawn
    assert np.array_equal(m.xy, X[:, [0, 2]]) and m.drawn is not None and m.drawn_count() < 50_000
    w.selection.select("big", np.arange(0, n, 3))
    assert np.array_equal(m.highlighted_rows(), np.arange(0, n, 3))
