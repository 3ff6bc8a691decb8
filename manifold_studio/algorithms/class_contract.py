"""Whether a plugin class meets the contract it declares (Qt-free): its id, name, kind and
parameter constraints, checked when the plugin host registers it and by the conformance kit."""
from __future__ import annotations

from manifold_studio.algorithms.base import KINDS, Algorithm
from manifold_studio.algorithms.params import Param, validate_params
from manifold_studio.errors import InvalidParameterError

__all__ = ["class_problems", "validate_algorithm_class"]


def class_problems(cls) -> list[str]:
    """What a plugin class (an algorithm or a preparation step) may get wrong in the contract
    they share: its id, its name, its constraints and their defaults."""
    problems = []
    if not isinstance(cls.id, str) or not cls.id or not cls.id.replace("_", "").isalnum():
        problems.append("'id' must be a non-empty identifier string")
    if not cls.name:
        problems.append("'name' is empty")
    if not all(isinstance(p, Param) for p in cls.params):
        problems.append("'params' must hold Param constraints")
    else:
        try:
            validate_params(cls.params, {p.name: p.default for p in cls.params})
        except InvalidParameterError as exc:
            problems.append(f"a default violates its own constraint: {exc}")
    return problems


def validate_algorithm_class(cls) -> None:
    """Raise TypeError when ``cls`` does not meet the declared contract (used by the plugin host)."""
    if not (isinstance(cls, type) and issubclass(cls, Algorithm)):
        raise TypeError(f"{cls!r} is not a subclass of manifold_studio.algorithms.Algorithm")
    problems = class_problems(cls)
    if cls.kind not in KINDS:
        problems.append(f"'kind' must be one of {', '.join(KINDS)}")
    if problems:
        raise TypeError(f"Algorithm class {cls.__name__}: " + "; ".join(problems))
