"""Parameter constraints: validation messages, parsing from text, descriptions."""
import pytest

from manifold_studio.algorithms import AnyOf, Bool, Choice, Float, Int, IntTuple
from manifold_studio.algorithms.progress import CallbackProgress, FitCancelled, SubProgress
from manifold_studio.errors import InvalidParameterError


def test_int_bounds_and_message():
    p = Int("n_neighbors", 10, "help", low=1, high=100)
    assert p.validate(5) == 5 and p.validate(7.0) == 7
    for bad in (0, 101, 2.5, "x", True, None):
        with pytest.raises(InvalidParameterError, match=r"n_neighbors.*\[1, 100\]"):
            p.validate(bad)
    assert p.parse(" 12 ") == 12
    with pytest.raises(InvalidParameterError, match="n_neighbors"):
        p.parse("twelve")


def test_float_open_bounds_and_none():
    p = Float("gamma", None, "help", low=0.0, low_open=True, allow_none=True, log=True)
    assert p.validate(None) is None and p.parse("none") is None and p.parse("0.5") == 0.5
    with pytest.raises(InvalidParameterError, match=r"gamma.*> 0.0 or none"):
        p.validate(0.0)
    with pytest.raises(InvalidParameterError, match="gamma"):
        p.validate(float("nan"))


def test_choice_bool_tuple():
    c = Choice("kernel", "rbf", "help", choices=("rbf", "linear"))
    with pytest.raises(InvalidParameterError, match="kernel.*'rbf', 'linear'"):
        c.validate("cubic")
    b = Bool("whiten", False)
    assert b.parse("yes") is True and b.parse("off") is False
    with pytest.raises(InvalidParameterError, match="whiten"):
        b.parse("maybe")
    t = IntTuple("hidden_layer_sizes", (10,), low=1)
    assert t.parse("(20, 10)") == (20, 10) and t.validate(5) == (5,) and t.format((3, 4)) == "3, 4"
    with pytest.raises(InvalidParameterError, match="hidden_layer_sizes"):
        t.validate((3, 0))


def test_any_of_count_or_fraction():
    p = AnyOf("n_components", 2, options=(Int("", 2, low=1), Float("", 0.5, low=0, high=1, low_open=True, high_open=True)))
    assert p.validate(3) == 3 and isinstance(p.validate(3), int)
    assert p.validate(0.9) == 0.9 and p.parse("0.9") == 0.9 and p.parse("3") == 3
    with pytest.raises(InvalidParameterError, match=r"n_components.*integer >= 1 or a number in \(0, 1\)"):
        p.validate(1.5)


def test_callback_progress_cancel_and_sub_progress():
    seen = []
    prog = CallbackProgress(lambda f, m: seen.append((round(f, 2), m)), min_interval=0)
    sub = SubProgress(prog, 0.5, 1.0, "step 2: ")
    sub.checkpoint(0.5, "half")
    assert seen[-1] == (0.75, "step 2: half")
    prog.cancel()
    with pytest.raises(FitCancelled):
        sub.checkpoint(0.6)


@pytest.mark.parametrize("scale, match", [(1e300, "as large as .* their squares overflow"),
                                          (1e-300, "smaller than 1e-150 .* underflow to zero")])
def test_data_beyond_double_precision_squares_is_refused_by_every_algorithm(scale, match):
    """Issue 12: k-means on data scaled to 1e300 said 'only 200 distinct points' — the real reason now."""
    import numpy as np

    import manifold_studio as ms
    from manifold_studio.errors import DataError

    X = np.random.default_rng(0).normal(size=(40, 3)) * scale
    for algorithm_id in ms.list_algorithms():
        cls = ms.algorithm_class(algorithm_id)
        if getattr(cls, "requires_labels", False):
            continue
        with pytest.raises(DataError, match=match):
            ms.get_algorithm(algorithm_id).fit(X)


# -- data-dependent checks (issue 30: exposed so the form can show them before Run) ------------------

def test_data_limits_are_checked_by_one_public_method_and_by_fit():
    import numpy as np

    import manifold_studio as ms
    from manifold_studio.algorithms.params import DataLimit, data_problems
    from manifold_studio.errors import DataError

    X = np.random.default_rng(0).normal(size=(150, 4))
    tsne = ms.get_algorithm("tsne", perplexity=200.0)
    (msg,) = tsne.check_params_vs_input(150, 4)
    assert "perplexity must be below n = 150" in msg and "perplexity=200" in msg
    with pytest.raises(DataError) as err:   # fit runs the same check, first, with the same words
        tsne.fit(X)
    assert msg in str(err.value)
    assert ms.get_algorithm("tsne", perplexity=149.0).check_params_vs_input(150, 4) == []
    # one message per parameter out of bounds; sizes that are unknown (None) are skipped
    assert ms.get_algorithm("kmeans", n_clusters=151).check_params_vs_input(150, 4) == [
        "n_clusters=151 is too large: n_clusters must be at most n = 150 (the number of samples of the data)."]
    assert ms.get_algorithm("kmeans", n_clusters=150).check_params_vs_input(150, 4) == []
    assert "at most n_features = 4" in ms.get_algorithm("autoencoder", n_components=5).check_params_vs_input(150, 4)[0]
    assert ms.get_algorithm("autoencoder", n_components=5).check_params_vs_input(150, None) == []
    pca = ms.get_algorithm("pca", n_components=5)
    assert "min(n, n_features) = min(150, 4) = 4" in pca.check_params_vs_input(150, 4)[0]
    assert ms.get_algorithm("pca", n_components=0.9).check_params_vs_input(150, 4) == []   # a fraction
    with pytest.raises(ms.InvalidParameterError):   # a value invalid on its own is said as such
        ms.get_algorithm("tsne", perplexity=-1.0).check_params_vs_input(150, 4)
    # the declaration, for third-party plugins too
    limit = Float("ratio", 1.0, low=0.0, limit=DataLimit("n_samples", strict=True, offset=-1, why="a reason"))
    assert data_problems((limit,), {"ratio": 9.0}, 10, 2) == [
        "ratio=9 is too large: ratio must be below n - 1 = 9 (n = 10, the number of samples of the data): a reason."]
    assert data_problems((limit,), {"ratio": 8.5}, 10, 2) == []
    assert limit.to_dict()["limit"] == "< n - 1"
    with pytest.raises(ValueError, match="DataLimit.of"):
        DataLimit("rows")
