"""Hidden docks make their heavy contents on first show or use (issue 32 item 7, the window's
first map within 2 s): after the window opens with the Iris map, the plots of docks nobody opened
do not exist yet; reading ``view.plot`` or opening the dock makes them, and they then work as
before (the same object on every read, in the dock's layout). Test & Score's settings form of a
classifier is made when the classifier is highlighted or its settings read."""
import pytest

pytest.importorskip("pytestqt")

from gui_helpers import discovered_host, wait_idle, wait_last_run  # noqa: E402
import pyqtgraph as pg  # noqa: E402

from manifold_studio.gui.lazy_slot import LazyPart, LazySlot  # noqa: E402
from manifold_studio.gui.param_form import ParamForm  # noqa: E402

WINDOW_DIALOGS = False
LAZY_VIEWS = ("decision", "training_curve", "correlations")


@pytest.fixture(scope="module")
def host():
    return discovered_host(("pca", "svm", "kmeans"), ("iris",))


def iris_window(qtbot, make_window, host):
    w = make_window(host)
    w.resize(1366, 768)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {"n_components": 2})
    wait_last_run(qtbot, w)
    return w


def test_hidden_docks_make_their_plots_on_first_read_or_show(qtbot, make_window, host):
    w = iris_window(qtbot, make_window, host)
    assert w.map_view.plot.isVisible()  # the map is drawn
    unbuilt = [w.views[v]._lazy_slot for v in LAZY_VIEWS] + [
        w.compare_clusterings._lazy_slot, w.choose_k_tool._graphics_slot,
        w.test_score.roc_view._plot_slot, w.test_score.calibration_view._plot_slot,
        w.views["extension_quality"]._plots_slot, w.views["scatter3d"]._pairs_slot]
    assert [s.built for s in unbuilt] == [False] * len(unbuilt)

    decision = w.views["decision"]
    plot = decision.plot   # a read makes it
    assert isinstance(plot, pg.PlotWidget) and decision._lazy_slot.built
    assert decision.plot is plot and decision.plot_item is plot.getPlotItem()
    assert plot.parentWidget() is decision._lazy_slot
    assert len(w.choose_k_tool.plots) == len(w.choose_k_tool.curves) == len(w.choose_k_tool.marks) == 4

    w.docks["view:correlations"].toggleViewAction().trigger()   # opening the dock makes it
    qtbot.waitUntil(lambda: w.views["correlations"]._lazy_slot.built, timeout=5000)
    qtbot.waitUntil(lambda: w.views["correlations"].plot.isVisible(), timeout=5000)
    assert w.views["correlations"].result is not None  # and the heatmap is drawn in it


def test_test_and_score_makes_a_form_when_its_classifier_is_highlighted(qtbot, make_window, host):
    w = make_window(host)
    learners = w.test_score.learners
    assert all(f is None for f in learners._form_of.values())
    learners.list.setCurrentRow(0)
    name = learners.list.item(0).data(0x0100)
    form = learners._form_of[name]
    assert isinstance(form, ParamForm) and learners.forms.currentWidget() is form
    assert learners.form(name) is form
    copy = learners.add_copy(name)
    assert learners.form(copy).values() == form.values()
    assert dict(learners.specs([name]))[learners.algorithm(name)] == form.values()


def test_a_maker_reading_its_own_content_is_refused(qtbot):
    class Loop(LazySlot.__base__):
        plot = LazyPart()

        def __init__(self):
            super().__init__()
            self._lazy_slot = LazySlot(lambda: self.plot)

    with pytest.raises(RuntimeError, match="before making it"):
        Loop().plot
