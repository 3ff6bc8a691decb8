"""Missing values in the window: Run says which method uses them; ppca EM fits and imputes."""
import numpy as np

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.data import Dataset


def test_missing_values_block_other_methods_and_ppca_em_imputes(qtbot, make_window, fresh_host):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3)) @ rng.normal(size=(3, 6)) + 0.05 * rng.normal(size=(200, 6))
    holes = rng.random(X.shape) < 0.1
    Xm = np.where(holes, np.nan, X)
    w = make_window(fresh_host)
    w.session.add_dataset(Dataset("holes", Xm))
    w.algorithm_panel.select_algorithm("pca")
    reason = w.run_blocker()
    assert "has" in reason and "missing value(s)" in reason and "method = em" in reason
    assert not w.run_controls.run_button.isEnabled() or w.run_controls.run_button.toolTip() == reason
    w.algorithm_panel.select_algorithm("ppca")
    assert "missing" in w.run_blocker()           # closed form: still refused
    w.run_algorithm("ppca", {"n_components": 3, "method": "em"})
    run = wait_last_run(qtbot, w, timeout=60_000)
    assert run.embedding.shape == (200, 3)
    assert w.missing_values.action.isEnabled()
    job = w.missing_values.impute()
    assert job is not None
    wait_idle(qtbot, w)
    new = w.session.datasets["holes (imputed)"]
    assert not np.isnan(new.X).any()
    np.testing.assert_array_equal(new.X[~holes], X[~holes])       # observed cells unchanged
    assert np.abs(new.X[holes] - X[holes]).mean() < np.abs(X[holes]).mean()  # better than zeros
    w.session.set_current_dataset(new.name)
    w.algorithm_panel.select_algorithm("pca")
    assert w.run_blocker() == ""
