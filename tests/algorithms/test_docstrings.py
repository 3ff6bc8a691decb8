"""Every algorithm class has a numpydoc docstring whose Parameters section matches its
constraints (generated from them, or written by hand and checked here) and an Examples
section that runs as a doctest (issue 19)."""
import doctest

import pytest

import manifold_studio as ms
from manifold_studio.algorithms.docstrings import documented_parameters, parameters_section, with_parameters
from manifold_studio.algorithms.params import Float, Int

BUILTIN = sorted(a for a in ms.list_algorithms()
                 if ms.algorithm_class(a).__module__.startswith("manifold_studio_builtins."))


@pytest.mark.parametrize("algorithm_id", BUILTIN)
def test_parameters_section_matches_the_constraints(algorithm_id):
    cls = ms.algorithm_class(algorithm_id)
    assert documented_parameters(cls.__doc__) == [p.name for p in cls.params], (
        f"{algorithm_id}: the docstring's Parameters section and the constraints differ")


@pytest.mark.parametrize("algorithm_id", BUILTIN)
def test_examples_run_as_doctests(algorithm_id):
    cls = ms.algorithm_class(algorithm_id)
    assert "Examples\n" in (cls.__doc__ or ""), f"{algorithm_id} has no Examples section"
    finder = doctest.DocTestFinder(recurse=False)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(cls, cls.__name__, globs={}) if t.examples]
    assert tests, f"{algorithm_id}: no doctest found"
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0 and result.attempted >= 3, f"{algorithm_id}: {result}"


def test_a_missing_parameters_section_is_generated_from_the_constraints():
    params = (Int("n_things", 3, "How many things.", low=1), Float("width", 0.5, "How wide.", low=0.0))
    doc = "Summary line.\n\n    More text.\n\n    Examples\n    --------\n    >>> 1\n    1\n    "
    out = with_parameters(doc, params)
    assert documented_parameters(out) == ["n_things", "width"]
    assert out.index("Parameters") < out.index("Examples") and "How many things." in out
    assert "n_things : int >= 1, default=3" in parameters_section(params)
    assert with_parameters(out, params) == out  # an existing section is kept as it is
