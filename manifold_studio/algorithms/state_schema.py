"""What an estimator's fitted state may hold: the declared schema that model and project files
are checked against before anything is restored.

Every algorithm has a schema (:func:`declared_state`): the fitted attributes it may restore, each
with its rules (:class:`Fitted`). The names are derived automatically from the class's own code:
every attribute ending in ``_`` that a method of the class (or of its bases and mixins) assigns
on an object (``self.mean_ = ...``) or names as a constant. An algorithm adds rules, or names
that the derivation cannot see, with the class attribute ``fitted_schema``::

    fitted_schema = {
        "mean_": Fitted(shape=("n_features_in_",), required=True),
        "components_": Fitted(shape=("n_components_", "n_features_in_"), required=True),
        "coefs_#": Fitted(shape=(None, None)),        # coefs_0, coefs_1, ... ('#' is a number)
    }

A shape entry is an int, ``None`` (any length) or a symbol. A symbol that names an integer
fitted attribute (``n_features_in_``) or an integer parameter (``n_components``) stands for its
value; any other symbol is bound by the first member that uses it and must agree everywhere
else (``"n_train"`` in ``X_fit_`` and ``eigenvectors_``). Float arrays must be finite unless
``finite=False``. Names starting with ``_`` are never part of a state (``__dict__``,
``__class__``).
"""
from __future__ import annotations

import dis
import re
import types
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import sparse

__all__ = ["Fitted", "declared_state", "spec_for", "validate_state", "StateError"]

#: the largest number of dimensions a fitted array may have
MAX_NDIM = 8
#: fitted attributes the base classes always allow
BASE_NAMES = ("n_features_in_", "fit_time_", "fit_warnings_", "stopped_early_", "feature_names_in_")


class StateError(ValueError):
    """A fitted state that breaks its schema; the message names the member."""


@dataclass(frozen=True)
class Fitted:
    """The rules for one fitted attribute.

    ``kinds``: the numpy dtype kinds an array may have (``b`` bool, ``i``/``u`` integers, ``f``
    floats, ``U`` text; numbers by default); ``scalar``: whether a JSON scalar (or a list of
    them) is allowed instead of an array (never when a ``shape`` is declared); ``shape``: see the module's description (None: any shape); ``finite``: float
    values must be finite; ``required``: the state must hold it.
    """

    shape: tuple | None = None
    kinds: str = "biuf"
    scalar: bool = True
    finite: bool = True
    required: bool = False

    @property
    def array_only(self) -> bool:
        return not self.scalar


#: the rules of a fitted attribute only the code names (derived): any array or JSON value
ANY = Fitted(kinds="biufU")
_CACHE: dict[type, dict[str, Fitted]] = {}
_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*_\Z")


def _code_objects(obj):
    if isinstance(obj, (staticmethod, classmethod)):
        obj = obj.__func__
    if isinstance(obj, property):
        for f in (obj.fget, obj.fset, obj.fdel):
            if f is not None:
                yield from _code_objects(f)
        return
    code = getattr(obj, "__code__", None)
    if code is None:
        return
    stack = [code]
    while stack:
        c = stack.pop()
        yield c
        stack.extend(k for k in c.co_consts if isinstance(k, types.CodeType))


def _assigned_names(cls) -> set[str]:
    names: set[str] = set()
    for klass in cls.__mro__:
        if klass is object:
            continue
        for value in vars(klass).values():
            for code in _code_objects(value):
                for ins in dis.get_instructions(code):
                    if ins.opname in ("STORE_ATTR", "LOAD_CONST") and isinstance(ins.argval, str):
                        names.add(ins.argval)
    return {n for n in names if _NAME.match(n)}


def _class_level(cls, name: str) -> bool:
    for klass in cls.__mro__:
        if name in vars(klass):
            value = vars(klass)[name]
            return callable(value) or hasattr(value, "__get__")
    return False


def declared_state(cls) -> dict[str, Fitted]:
    """Name (or ``prefix#`` pattern) -> :class:`Fitted` for every attribute the class may restore."""
    cls = cls if isinstance(cls, type) else type(cls)
    cached = _CACHE.get(cls)
    if cached is not None:
        return cached
    # a name the class itself defines (a method, a property such as n_classes_) is no instance state
    derived = (n for n in _assigned_names(cls) if not _class_level(cls, n))
    declared: dict[str, Fitted] = {name: ANY for name in sorted(derived)}
    declared.update({name: ANY for name in BASE_NAMES})
    declared["n_features_in_"] = Fitted(kinds="iu", required=True)
    for klass in reversed(cls.__mro__):
        declared.update(vars(klass).get("fitted_schema", None) or {})
    params = {p.name for p in getattr(cls, "params", ())}
    out = {k: v for k, v in declared.items() if not k.startswith("_") and k not in params}
    _CACHE[cls] = out
    return out


def spec_for(declared: dict[str, Fitted], name: str) -> Fitted | None:
    """The rules for ``name`` (patterns ``prefix#`` match ``prefix`` followed by digits; the CSR
    parts of a sparse attribute follow that attribute's rules)."""
    if not isinstance(name, str) or name.startswith("_"):
        return None
    owner = sparse_owner(name)
    if owner is not None and owner in declared:
        return declared[owner]
    spec = declared.get(name)
    if spec is not None:
        return spec
    stem = name.rstrip("0123456789")
    if stem != name:
        return declared.get(stem + "#")
    return None


def _describe(value) -> str:
    if isinstance(value, np.ndarray):
        return f"an array of shape {value.shape} and type {value.dtype}"
    return f"a {type(value).__name__}"


def _shape_text(shape) -> str:
    return "(" + ", ".join("any" if s is None else str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


#: the parts a sparse fitted attribute ``<name>`` is saved as: ``<name>csr_data``, ... (see
#: :class:`~manifold_studio.algorithms.sparse_input.SparseInput`)
CSR_PARTS = ("data", "indices", "indptr", "shape")


def sparse_owner(name: str) -> str | None:
    """``coef_`` for ``coef_csr_data`` (and the other CSR parts), else None."""
    for part in CSR_PARTS:
        if isinstance(name, str) and name.endswith(f"_csr_{part}"):
            return name[:-len(f"csr_{part}")]
    return None


def assemble_sparse(state: dict[str, Any]) -> dict[str, Any]:
    """``state`` with every saved sparse attribute's CSR parts joined back into one matrix (a
    missing or inconsistent part is a :class:`StateError` naming the attribute)."""
    owners = {o for o in map(sparse_owner, state) if o is not None}
    if not owners:
        return state
    out = {k: v for k, v in state.items() if sparse_owner(k) is None}
    for key in sorted(owners):
        try:
            data, indices, indptr, shape = (np.asarray(state[f"{key}csr_{part}"]) for part in CSR_PARTS)
            out[key] = sparse.csr_matrix((data, indices, indptr), shape=tuple(int(v) for v in shape))
        except (KeyError, ValueError, TypeError) as exc:
            raise StateError(f"member '{key}' (a sparse matrix) is damaged: {str(exc)[:80]}.") from None
    return out


def validate_state(cls, params: dict[str, Any], state: dict[str, Any], what: str = "") -> None:
    """Raise :class:`StateError` naming the first member of ``state`` that the schema of ``cls``
    refuses: an undeclared name, a wrong type, kind, dimension count or length, a non-finite
    value, or a missing required member. ``params`` are the estimator's (validated) parameters.
    A sparse attribute saved as its CSR parts is checked as the matrix they make."""
    state = assemble_sparse(state)
    declared = declared_state(cls)
    what = what or getattr(cls, "id", "") or cls.__name__
    for name in state:
        if spec_for(declared, name) is None:
            known = sorted(k for k in declared if not k.endswith("#"))
            raise StateError(f"member '{str(name)[:60]}' is not a fitted attribute of a {what} model "
                             f"({len(known)} are: {', '.join(known[:6])}{' ...' if len(known) > 6 else ''}).")
    missing = [k for k, spec in declared.items() if spec.required and not k.endswith("#") and k not in state]
    if missing:
        raise StateError(f"member '{missing[0]}' is missing: a {what} model needs it.")
    scalars = {k: v for k, v in state.items() if not isinstance(v, np.ndarray)}
    for name, value in state.items():
        _check_member(name, value, spec_for(declared, name))
    n_features = state.get("n_features_in_")
    if n_features is not None and (isinstance(n_features, bool) or not isinstance(n_features, (int, np.integer))
                                   or n_features < 1):
        raise StateError(f"member 'n_features_in_' must be a positive whole number, not {n_features!r:.40}.")
    bound: dict[str, int] = {}
    for name, value in state.items():
        spec = spec_for(declared, name)
        if spec.shape is None or not (isinstance(value, np.ndarray) or sparse.issparse(value)):
            continue
        if value.ndim != len(spec.shape):
            raise StateError(f"member '{name}' has {value.ndim} dimension(s) {value.shape}; a {what} model "
                             f"has {len(spec.shape)}: {_shape_text(spec.shape)}.")
        for axis, (size, want) in enumerate(zip(value.shape, spec.shape)):
            if want is None:
                continue
            if isinstance(want, int):
                expected, why = want, ""
            else:
                fixed = scalars.get(want, params.get(want))
                if isinstance(fixed, (int, np.integer)) and not isinstance(fixed, bool):
                    expected, why = int(fixed), f" ({want} is {int(fixed)})"
                elif want in bound:
                    expected, why = bound[want][0], f" ({want}, as in member '{bound[want][1]}')"
                else:
                    bound[want] = (size, name)
                    continue
            if size != expected:
                raise StateError(f"member '{name}' has shape {value.shape}, but its axis {axis} should have "
                                 f"{expected}{why}.")


def _check_member(name: str, value, spec: Fitted) -> None:
    if sparse.issparse(value):  # kinds and finiteness are its stored values'
        value = value.data
    if isinstance(value, np.ndarray):
        if value.dtype.kind not in spec.kinds or value.dtype.names is not None:
            raise StateError(f"member '{name}' has type {value.dtype}; allowed kinds: "
                             f"{', '.join(_KIND_NAMES[k] for k in spec.kinds)}.")
        if value.ndim > MAX_NDIM:
            raise StateError(f"member '{name}' has {value.ndim} dimensions (at most {MAX_NDIM}).")
        if spec.finite and value.dtype.kind == "f" and not np.isfinite(value).all():
            raise StateError(f"member '{name}' holds NaN or infinite values, which a fitted model cannot have.")
        return
    if not spec.scalar or spec.shape is not None:
        raise StateError(f"member '{name}' must be an array, not {_describe(value)}.")
    items = value if isinstance(value, list) else [value]
    for item in items:
        if not (item is None or isinstance(item, (bool, int, float, str))):
            raise StateError(f"member '{name}' must be a number, text or a list of them, not {_describe(item)}.")
    if spec.kinds == "iu" and not (isinstance(value, int) and not isinstance(value, bool)):
        raise StateError(f"member '{name}' must be a whole number, not {value!r:.40}.")


_KIND_NAMES = {"b": "bool", "i": "integer", "u": "unsigned integer", "f": "float", "U": "text",
               "c": "complex", "S": "bytes"}
