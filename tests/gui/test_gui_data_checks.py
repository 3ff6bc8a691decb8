"""pytest-qt (issue 30, item 7): data-dependent checks of more methods are shown under the form
before Run, and Run stays off until the value fits (isomap's n_neighbors, NMF's SVD start)."""
from __future__ import annotations

import pytest

from gui_helpers import discovered_host

pytest.importorskip("pytestqt")

import manifold_studio as ms  # noqa: E402

WINDOW_DIALOGS = False


@pytest.fixture(scope="module")
def host():
    return discovered_host(("isomap", "nmf", "kernel_pca"), ("iris",))


@pytest.mark.parametrize("algo,name,bad,good,said", [
    ("isomap", "n_neighbors", 150, 10, "n_neighbors must be below n = 150"),
    ("nmf", "n_components", 5, 2, "init='nndsvda' needs n_components ≤ min(n_samples, n_features) = 4"),
    ("kernel_pca", "n_components", 151, 2, "n_components must be at most n = 150"),
])
def test_a_value_the_data_cannot_take_is_said_before_run(qtbot, make_window, host, algo, name, bad, good, said):
    w = make_window(host)
    w.session.add_dataset(ms.load_data("sample:iris"))     # 150 points, 4 features
    panel = w.algorithm_panel
    assert panel.select_algorithm(algo)
    run = w.run_controls.run_button
    panel.form.editor(name).set_value(bad)
    label = panel.form.data_label
    assert not label.isHidden() and said in label.text()
    assert not run.isEnabled() and said in run.toolTip()
    assert not w.session.runs
    panel.form.editor(name).set_value(good)
    assert label.isHidden() and run.isEnabled()
