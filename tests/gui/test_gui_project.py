"""File ▸ Save project / Open project in the real main window."""
import numpy as np
import pytest

from gui_helpers import wait_idle

from manifold_studio.plugins.host import PluginHost
from manifold_studio.session.records import DONE

WINDOW_DIALOGS = False


@pytest.fixture
def host():
    return PluginHost().discover()


def test_save_then_open_in_a_new_window(qtbot, make_window, host, tmp_path):
    w = make_window(host, initial_sample="iris")
    qtbot.waitUntil(lambda: any(r.status == DONE for r in w.session.runs.values()), timeout=15_000)
    wait_idle(qtbot, w)
    w.algorithm_panel.select_algorithm("kmeans")
    assert w.map_view.set_color_column("petal_length")  # the colour-by is saved with the project
    path = tmp_path / "iris.msproj"
    w.project.save_project(path)
    wait_idle(qtbot, w)
    assert path.exists() and "iris.msproj" in w.windowTitle()

    other = make_window(host)
    other.session.load("sample:moons")
    other.project.open_project(path)
    wait_idle(qtbot, other)
    assert list(other.session.datasets) == ["Iris"]
    run = other.session.current_run
    assert run is not None and run.algorithm_id == "pca" and run.status == DONE
    np.testing.assert_allclose(run.embedding, w.session.current_run.embedding)
    qtbot.waitUntil(lambda: other.map_view.point_count() == 150, timeout=5_000)
    assert other.algorithm_panel.algorithm_id == "kmeans"
    assert other.map_view.color_combo.currentData() == w.map_view.color_combo.currentData() == "col:petal_length"
    np.testing.assert_array_equal(other.map_view.coloring.codes, w.map_view.coloring.codes)
    assert other.map_view.coloring.mode == "continuous" and other.map_view.coloring.title == w.map_view.coloring.title
    # the restored model still extends
    np.testing.assert_allclose(run.estimator.extend(other.session.dataset().X[:3]), run.embedding[:3], atol=1e-10)


def test_opening_a_bad_file_changes_nothing(qtbot, make_window, host, tmp_path):
    w = make_window(host, initial_sample="iris")
    qtbot.waitUntil(lambda: any(r.status == DONE for r in w.session.runs.values()), timeout=15_000)
    wait_idle(qtbot, w)
    bad = tmp_path / "broken.msproj"
    bad.write_text("not a project")
    w.project.open_project(bad)
    wait_idle(qtbot, w)
    assert list(w.session.datasets) == ["Iris"] and len(w.session.runs) == 1
    assert any("broken.msproj" in e.message and e.level == "error" for e in w.session.history)
