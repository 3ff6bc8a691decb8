"""WorkerModel (issue 29): a fitted model whose predict / decision_function / extend /
inverse_transform / impute run in a worker process (session.isolated_extend.extend_model), as the
window's decision regions, projected cluster centres, reconstruction and imputation call a
third-party model. The values are the model's own; its other methods are not called here."""
from __future__ import annotations

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.analysis.classification_tasks import decision_grid_task
from manifold_studio.session.isolated_extend import METHODS, WorkerModel, extend_model


def _classifier():
    ds = ms.load_data("sample:iris")
    X = ds.X[:100, 2:4]          # two classes, two columns: a decision function and a 2-D grid
    y = ds.labels[:100]
    return ms.get_algorithm("linear_classifier").fit(X, y), X, y


def test_a_worker_model_passes_data_on_and_refuses_other_methods():
    est, X, _ = _classifier()
    model = WorkerModel(est)
    assert np.array_equal(model.classes_, est.classes_) and model.model is est
    with pytest.raises(AttributeError, match="not called here"):
        model.fit(X)
    with pytest.raises(AttributeError):
        WorkerModel(ms.get_algorithm("pca").fit(X)).decision_function   # PCA has none: as the model says
    with pytest.raises(ValueError, match="Unknown extension 'fit'"):
        extend_model(est, X, isolated=False, method="fit")
    # in this process (isolated=False) every method is the model's own
    np.testing.assert_array_equal(extend_model(est, X, isolated=False, method="predict"), est.predict(X))
    assert "inverse_transform" in METHODS and "impute" in METHODS


@pytest.mark.slow  # two worker processes
def test_decision_regions_through_a_worker_model_are_the_models():
    est, X, y = _classifier()
    here = decision_grid_task(est, X, y, size=40)
    there = decision_grid_task(WorkerModel(est), X, y, size=40)
    assert here.decision is not None
    np.testing.assert_array_equal(there.class_index, here.class_index)
    np.testing.assert_allclose(there.decision, here.decision, atol=1e-12)
    np.testing.assert_array_equal(there.point_class, here.point_class)


@pytest.mark.slow  # two worker processes
def test_inverse_transform_and_impute_in_a_worker():
    X = ms.load_data("sample:iris").X
    pca = ms.get_algorithm("pca", n_components=2).fit(X)
    codes = pca.embedding_[:7]
    np.testing.assert_allclose(WorkerModel(pca).inverse_transform(codes), pca.inverse_transform(codes), atol=1e-12)
    holed = X.copy()
    holed[[1, 5], [0, 2]] = np.nan
    ppca = ms.get_algorithm("ppca", n_components=2, method="em", random_state=0).fit(holed)
    np.testing.assert_allclose(WorkerModel(ppca).impute(holed), ppca.impute(holed), atol=1e-12)
