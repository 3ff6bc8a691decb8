"""Save a fitted estimator to one ``.npz`` file and load it back — without pickle.

The file holds the estimator's fitted arrays (from ``fitted_state()``, each stored as
``state/<attribute>``) and one JSON metadata string (``__manifold_studio_model__``) with the
algorithm id, its parameters, the scalar part of the fitted state, the library version and a
reference to the training data. Loading uses ``np.load(allow_pickle=False)`` and rebuilds the
estimator through the plugin host: ``get_algorithm(id, **params).restore_state(state)``.
Saving is atomic: a temporary file in the same folder, then ``os.replace``.

::

    from manifold_studio.files.model_file import save_model, load_model
    save_model(est, "model.npz", data=dataset)
    est = load_model("model.npz")
    est.extend(X_new)

A pipeline (:mod:`manifold_studio.algorithms.pipeline`) is saved the same way: the metadata's
``algorithm`` is ``"pipeline"`` and ``steps`` holds each fitted step's description (a preparation
step's ``preprocessor`` id or an algorithm's ``algorithm`` id, parameters and scalar state), its
arrays stored as ``state/<step index>/<attribute>``; ``columns_in`` and ``categories_in`` are the
training columns that new data are matched to by name.
"""
from __future__ import annotations

import datetime as _dt
import io
import json
from pathlib import Path
from typing import Any

import numpy as np

from manifold_studio.algorithms.pipeline import Pipeline
from manifold_studio.algorithms.state_schema import StateError, spec_for, validate_state
from manifold_studio.errors import (
    DataError,
    InvalidParameterError,
    ManifoldStudioError,
    UnknownAlgorithmError,
    not_fitted,
)
from manifold_studio.fileio.atomic import atomic_write
from manifold_studio.fileio.bounded import BoundedNpz, check_regular_file, name_list, out_of_memory
from manifold_studio.files.schemas import MODEL_HEADER, MODEL_STATE, SchemaError, check, parse_json, short
from manifold_studio.plugins.host import get_host
from manifold_studio.version import __version__

FORMAT = "manifold-studio-model"
FORMAT_VERSION = 1
META_KEY = "__manifold_studio_model__"
ARRAY_PREFIX = "state/"
#: the longest JSON description a model or project file may hold
MAX_DOCUMENT_CHARS = 64 * 2**20

__all__ = ["save_model", "load_model", "load_model_with_metadata", "read_metadata",
           "pack_estimator", "unpack_estimator", "atomic_savez", "read_arrays", "model_bytes", "model_from_bytes",
           "ModelFileError", "FORMAT_VERSION"]


class ModelFileError(DataError):
    """The file is not a (readable) Manifold Studio model."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray) and value.dtype.kind in "biuf":   # an array parameter (k-means init)
        return value.tolist()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    raise TypeError(type(value).__name__)


def _data_reference(data) -> dict | None:
    if data is None:
        return None
    if isinstance(data, str):
        return {"source": data}
    if isinstance(data, dict):
        return _jsonable(data)
    ref = {"source": getattr(data, "source", ""), "name": getattr(data, "name", "")}
    X = getattr(data, "X", None)
    if X is not None:
        ref["n_samples"], ref["n_features"] = int(X.shape[0]), int(X.shape[1])
    for attr in ("feature_names", "label_name"):
        if getattr(data, attr, None) is not None:
            ref[attr] = _jsonable(getattr(data, attr))
    return ref


def _pack_pipeline(pipe) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    arrays: dict[str, np.ndarray] = {}
    parts = []
    for i, (_name, step) in enumerate(pipe.steps_):
        part_arrays, part = pack_estimator(step)
        if getattr(step, "kind", "") == "preprocessing":
            part = {"preprocessor": part.pop("algorithm"), **part}
        arrays.update({f"{i}/{k}": v for k, v in part_arrays.items()})
        parts.append(part)
    meta = {"algorithm": "pipeline", "algorithm_name": "Pipeline", "kind": pipe.kind, "params": {},
            "scalars": {}, "arrays": sorted(arrays), "steps": parts, "columns_in": list(pipe.columns_in_),
            "categories_in": _jsonable(pipe.categories_in_)}
    return arrays, meta


def _unpack_pipeline(meta: dict, arrays: dict[str, np.ndarray], where: str):
    parts, steps = meta.get("steps"), []
    if not isinstance(parts, list) or not parts:
        raise ModelFileError(f"{where}: the saved pipeline has no steps.")
    for i, part in enumerate(parts):
        prefix = f"{i}/"
        own = {k[len(prefix):]: v for k, v in arrays.items() if k.startswith(prefix)}
        if not isinstance(part, dict):
            raise ModelFileError(f"{where}: step {i} of the saved pipeline is damaged.")
        if "preprocessor" in part:
            steps.append(_unpack_step(part, own, where, get_host()))
        else:
            steps.append(unpack_estimator(part, own, where, check_usable=False))
    try:
        pipe = Pipeline.from_fitted(steps, list(meta.get("columns_in") or []), dict(meta.get("categories_in") or {}))
    except (InvalidParameterError, TypeError, ValueError, AttributeError) as exc:
        raise ModelFileError(f"{where}: the saved pipeline cannot be rebuilt: {exc}") from None
    return pipe


def _unpack_step(part: dict, arrays: dict, where: str, host):
    step_id = part["preprocessor"]
    if step_id not in host.preprocessors:
        raise UnknownAlgorithmError(
            f"{where} holds a pipeline with the preparation step '{step_id}', which no loaded plugin provides "
            f"(available: {', '.join(sorted(host.preprocessors)) or 'none'}); install or enable the plugin "
            "that provides it.")
    cls = host.preprocessors[step_id]
    constraints = cls.param_constraints()
    state: dict[str, Any] = dict(part.get("scalars") or {})
    state.update(arrays)
    try:
        step = cls()
        step.set_params(**{k: constraints[k].validate(v) for k, v in (part.get("params") or {}).items()
                           if k in constraints})
        step.validate_params()
        step.restore_state(state)
    except (InvalidParameterError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where}: the saved step {step_id} cannot be restored by this version of its "
                             f"plugin: {exc}") from None
    if not step.is_fitted:
        raise ModelFileError(f"{where}: the saved step {step_id} has no fitted state.")
    return step


def pack_estimator(estimator) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Split a fitted estimator into arrays and a JSON-able description, without pickle.

    Returns ``(arrays, meta)``: ``arrays`` maps fitted attribute names to numeric or text arrays;
    ``meta`` holds the algorithm id, name, kind, parameters, the scalar fitted attributes and the
    list of array names. :func:`unpack_estimator` is the inverse. Project files use the pair too.
    """
    if not getattr(estimator, "is_fitted", False):
        raise not_fitted(f"Cannot save {getattr(estimator, 'id', '') or type(estimator).__name__}: "
                             "it is not fitted yet (call fit first).")
    algo_id = getattr(estimator, "id", "")
    if not algo_id:
        raise ManifoldStudioError(f"Cannot save {type(estimator).__name__}: it has no algorithm id.")
    if algo_id == "pipeline" and hasattr(estimator, "steps_"):
        return _pack_pipeline(estimator)
    arrays: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    for key, value in estimator.fitted_state().items():
        if isinstance(value, np.ndarray):
            if value.dtype == object:
                raise ManifoldStudioError(f"Cannot save {algo_id}: fitted attribute '{key}' is an "
                                          "object array (only numeric and text arrays can be saved).")
            arrays[key] = value
            continue
        try:
            scalars[key] = _jsonable(value)
        except TypeError as exc:
            raise ManifoldStudioError(f"Cannot save {algo_id}: fitted attribute '{key}' has type {exc}, "
                                      "which is neither an array nor a JSON value.") from None
    try:
        params = _jsonable(estimator.get_params())
    except TypeError as exc:
        raise ManifoldStudioError(f"Cannot save {algo_id}: a parameter has type {exc}.") from None
    meta = {"algorithm": algo_id, "algorithm_name": getattr(estimator, "name", ""),
            "kind": getattr(estimator, "kind", ""), "params": params, "scalars": scalars,
            "arrays": sorted(arrays)}
    return arrays, meta


def model_class(meta: dict, where: str = "the file"):
    """The algorithm class a validated model description names; its ``kind``, when the file
    states one, must be the class's (a PCA model relabelled ``kmeans`` is refused here)."""

    algo_id = meta["algorithm"]
    try:
        cls = get_host().algorithm_class(algo_id)
    except UnknownAlgorithmError:
        raise UnknownAlgorithmError(
            f"{where} holds a model of algorithm '{short_text(algo_id)}', which no loaded plugin provides "
            f"(available: {name_list(sorted(get_host().algorithms), 12) or 'none'}); install or enable the plugin "
            "that provides it.") from None
    kind = meta.get("kind")
    if kind not in (None, "", cls.kind):
        raise ModelFileError(f"{where}: the model says it is of kind '{short_text(kind)}', but {cls.id} is "
                             f"a {cls.kind} algorithm: the file is inconsistent.")
    return cls


def check_state_names(cls, names, where: str) -> None:
    """Refuse, before anything is loaded, an array member the algorithm does not declare."""
    declared = cls.declared_state()
    for name in names:
        if spec_for(declared, name) is None:
            raise ModelFileError(f"{where}: member '{short_text(name)}' is not a fitted attribute of "
                                 f"a {cls.id} model: the file is damaged or forged.")


def unpack_estimator(meta: dict, arrays: dict[str, np.ndarray], where: str = "the file",
                     check_usable: bool = True):
    """Rebuild a fitted estimator (or pipeline) from :func:`pack_estimator`'s output through the
    plugin host.

    ``meta`` is checked against the declared schema (:data:`schemas.MODEL_STATE`) and the state
    against the algorithm's (:meth:`~manifold_studio.algorithms.Algorithm.declared_state`:
    allowed names, types, shape relations, finite values) before anything is restored (a
    pipeline: each of its steps); ``check_usable`` then extends one point."""
    if isinstance(meta, dict) and meta.get("algorithm") == "pipeline":
        pipe = _unpack_pipeline(meta, arrays, where)
        if check_usable:
            _check_usable(pipe, where, "pipeline", arrays)
        return pipe
    try:
        check(meta, MODEL_STATE, "model")
    except SchemaError as exc:
        raise ModelFileError(f"{where}: {exc}") from None
    cls = model_class(meta, where)
    algo_id = cls.id
    check_state_names(cls, arrays, where)
    state: dict[str, Any] = dict(meta.get("scalars") or {})
    state.update(arrays)
    constraints = cls.param_constraints()
    params = {k: v for k, v in (meta.get("params") or {}).items() if k in constraints}
    try:
        est = cls()
        normalised = {k: constraints[k].validate(v) for k, v in params.items()}
        est.set_params(**normalised)
        validated = est.validate_params()
    except (InvalidParameterError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where}: the saved {algo_id} model cannot be restored by this "
                             f"version of its plugin: {_one_line(exc)}") from None
    try:
        validate_state(cls, validated, state, algo_id)
    except StateError as exc:
        raise ModelFileError(f"{where}: {exc}") from None
    try:
        est.restore_state(state)
    except KeyError as exc:
        raise ModelFileError(f"{where}: member {short_text(exc.args[0] if exc.args else '?')} is missing: "
                             f"a {algo_id} model needs it.") from None
    except (InvalidParameterError, TypeError, ValueError, AttributeError, IndexError) as exc:
        raise ModelFileError(f"{where}: the saved {algo_id} model cannot be restored by this "
                             f"version of its plugin: {_one_line(exc)}") from None
    if not est.is_fitted:
        raise ModelFileError(f"{where}: the saved {algo_id} model has no fitted state.")
    if check_usable:
        _check_usable(est, where, algo_id, arrays)
    return est


def _one_line(exc: BaseException, width: int = 200) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= width else text[:width - 3] + "..."


def short_text(value, width: int = 60) -> str:
    text = str(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def _check_usable(est, where: str, algo_id: str, arrays: dict) -> None:
    """Extend one point: arrays of inconsistent shapes (a damaged or edited file) that the
    schema could not see are refused here, naming the members, rather than failing later."""
    n_features = int(est.n_features_in_)
    try:
        with np.errstate(all="ignore"):
            out = np.asarray(est.extend(np.zeros((1, n_features))))
    except ManifoldStudioError:
        raise
    except AttributeError as exc:  # a member the algorithm needs is absent
        name = getattr(exc, "name", None)
        missing = f"member '{short_text(name)}' is missing" if name else "a member is missing"
        raise ModelFileError(f"{where}: the saved {algo_id} model is incomplete: {missing}.") from None
    except Exception:  # noqa: BLE001 - whatever a damaged state makes the algorithm do
        shapes = ", ".join(f"{k} {v.shape}" for k, v in sorted(arrays.items())[:8])
        more = f" and {len(arrays) - 8} more" if len(arrays) > 8 else ""
        raise ModelFileError(f"{where}: the saved {algo_id} model is inconsistent: its members do not "
                             f"fit together ({shapes}{more}; n_features_in_ {n_features}).") from None
    if out.dtype.kind == "f" and out.size and not np.isfinite(out).any():
        raise ModelFileError(f"{where}: the saved {algo_id} model gives no finite value for a point: "
                             "its members are damaged.")


def save_model(estimator, path, data=None, extra: dict | None = None) -> Path:
    """Write a fitted ``estimator`` to ``path`` (one ``.npz`` file, atomically).

    ``data`` is a reference to the training data: a :class:`~manifold_studio.data.Dataset`
    (its source, name, shape and feature names are recorded), a string or a dict.
    ``extra`` is any JSON-able dict stored with the metadata. Returns the path written.
    """
    path = Path(path)
    atomic_savez(path, _model_arrays(estimator, data, extra))
    return path


def model_bytes(estimator) -> bytes:
    """The model file of a fitted estimator as bytes (the same pickle-free format as
    :func:`save_model`), e.g. to send a model to other processes or machines."""
    buf = io.BytesIO()
    np.savez(buf, **_model_arrays(estimator, None, None))
    return buf.getvalue()


def model_from_bytes(blob: bytes, where: str = "the model bytes", *, with_metadata: bool = False,
                     check_usable: bool = True):
    """The estimator of :func:`model_bytes` or of a model file's bytes (read with
    ``allow_pickle=False``, bounded); ``(estimator, metadata)`` with ``with_metadata``.
    ``check_usable=False`` skips extending one probe point (plugin code): for a model that a
    worker process just fitted and sent, whose plugin code must not run in this process."""
    try:
        npz = BoundedNpz(where, "model", source=io.BytesIO(blob))
    except DataError as exc:
        raise ModelFileError(str(exc)) from None
    with npz:
        try:
            est, meta = _read_model(npz, Path(where), where, check_usable)
        except MemoryError as exc:
            raise ModelFileError(str(out_of_memory(where, len(blob), exc))) from None
    return (est, meta) if with_metadata else est


def _model_arrays(estimator, data, extra) -> dict[str, np.ndarray]:
    state_arrays, packed = pack_estimator(estimator)
    arrays = {ARRAY_PREFIX + k: v for k, v in state_arrays.items()}
    meta = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        **packed,
        "library_version": __version__,
        "numpy_version": np.__version__,
        "created": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "training_data": _data_reference(data),
    }
    if extra:
        meta["extra"] = _jsonable(extra)
    arrays[META_KEY] = np.array(json.dumps(meta))
    return arrays


def atomic_savez(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write ``arrays`` as a compressed .npz, atomically (see :mod:`manifold_studio.fileio.atomic`)."""
    atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def open_npz(path: Path, what: str = "model", hint: str = "an .npz written by save_model / --save-model"):
    """Open a Manifold Studio .npz (model or project) for bounded reading
    (:class:`~manifold_studio.fileio.bounded.BoundedNpz`), with clear errors naming the file."""
    if not path.exists():
        raise ModelFileError(f"{what.capitalize()} file not found: {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a folder, not a {what} file.")
    try:
        check_regular_file(path, f"{what} file")
        with open(path, "rb") as fh:
            head = fh.read(4)
    except DataError as exc:
        raise ModelFileError(str(exc)) from None
    except OSError as exc:
        raise ModelFileError(f"Cannot read {path.name}: {exc.strerror or exc}.") from None
    if head != b"PK\x03\x04":
        raise ModelFileError(f"{path.name} is not a Manifold Studio {what} file (expected {hint}).")
    try:
        return BoundedNpz(path, f"{what} file")
    except DataError as exc:
        raise ModelFileError(str(exc)) from None


def read_document(npz, path: Path, key: str, fmt: str, version: int, what: str, schema: dict | None = None) -> dict:
    """The JSON document stored under ``key`` in an open .npz, checked for format, version and
    (when given) its declared ``schema``: every message names the file and the field."""
    if key not in npz.files:
        raise ModelFileError(f"{path.name} is not a Manifold Studio {what} file: it has no {what} "
                             "description inside (is it a data file, or another kind of file?).")
    try:
        raw = npz.load(key)
    except DataError as exc:
        raise ModelFileError(str(exc)) from None
    if raw.dtype.kind != "U" or raw.ndim != 0 or raw.dtype.itemsize > 4 * MAX_DOCUMENT_CHARS:
        raise ModelFileError(f"{path.name}: the {what} description is damaged (member '{key}' is not one "
                             f"JSON text of at most {MAX_DOCUMENT_CHARS:,} characters).")
    try:
        meta = parse_json(str(raw[()]), f"{what} description")
    except SchemaError as exc:
        raise ModelFileError(f"{path.name}: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ModelFileError(f"{path.name}: the {what} description is not in the {fmt} format.")
    found = meta.get("format_version")
    if isinstance(found, bool) or not isinstance(found, int):
        raise ModelFileError(f"{path.name}: the {what} description's field 'format_version' must be a whole "
                             f"number, not {type(found).__name__} {short(found)}: the file is damaged.")
    if found > version or found < 1:
        raise ModelFileError(f"{path.name} was written in {what} format version {found} by "
                             f"Manifold Studio {short_text(meta.get('library_version', '?'), 20)}; this version "
                             f"reads format {version}: update Manifold Studio." if found > version else
                             f"{path.name}: the {what} format version {found} does not exist.")
    if schema is not None:
        try:
            check(meta, schema)
        except SchemaError as exc:
            raise ModelFileError(f"{path.name}: the {what} description is invalid: {exc}") from None
    return meta


def _read_meta(npz, path: Path) -> dict:
    return read_document(npz, path, META_KEY, FORMAT, FORMAT_VERSION, "model", MODEL_HEADER)


def read_metadata(path) -> dict:
    """The JSON metadata of a model file (algorithm, params, training data, versions...)."""
    path = Path(path)
    with open_npz(path) as npz:
        return _read_meta(npz, path)


def _read_model(npz, path: Path, where: str, check_usable: bool = True):
    """(estimator, metadata) from an open model archive: the header is validated, the array
    members are checked against the algorithm's declared state before any is loaded."""
    meta = _read_meta(npz, path)
    names = [k[len(ARRAY_PREFIX):] for k in npz.files if k.startswith(ARRAY_PREFIX)]
    check_member_names(meta, names, where)
    arrays = read_arrays(npz, path, ARRAY_PREFIX)
    return unpack_estimator(meta, arrays, where, check_usable=check_usable), meta


def check_member_names(meta: dict, names: list[str], where: str) -> None:
    """Refuse undeclared array members before any is loaded: a model's against its algorithm's
    declared state; a pipeline's, step by step (members ``<step>/<name>``; a preparation step's
    members are its own)."""
    if meta.get("algorithm") != "pipeline":
        check_state_names(model_class(meta, where), names, where)
        return
    steps = meta.get("steps") if isinstance(meta.get("steps"), list) else []
    for name in names:
        index, _, member = name.partition("/")
        if not index.isdigit() or int(index) >= len(steps) or not member:
            raise ModelFileError(f"{where}: member '{short_text(name)}' belongs to no step of the saved "
                                 "pipeline: the file is damaged or forged.")
    for i, part in enumerate(steps):
        if isinstance(part, dict) and "preprocessor" not in part and isinstance(part.get("algorithm"), str):
            own = [n.partition("/")[2] for n in names if n.partition("/")[0] == str(i)]
            check_state_names(model_class(part, where), own, where)


def load_model_with_metadata(path, *, check_usable: bool = True):
    """``(estimator, metadata)`` from a model file written by :func:`save_model`;
    ``check_usable=False``: see :func:`model_from_bytes` (a third-party model that a worker
    process extends)."""
    path = Path(path)
    with open_npz(path) as npz:
        try:
            return _read_model(npz, path, path.name, check_usable)
        except MemoryError as exc:
            raise ModelFileError(str(out_of_memory(path.name, None, exc))) from None


def read_arrays(npz, path: Path, prefix: str, keys=None) -> dict[str, np.ndarray]:
    """The arrays of an open archive (:func:`open_npz`) whose names start with ``prefix`` (prefix
    removed), or the members ``keys``; each is read bounded, object arrays refused, damaged
    members reported with the file and member names."""
    out = {}
    for key in (keys if keys is not None else [k for k in npz.files if k.startswith(prefix)]):
        try:
            out[key[len(prefix):]] = npz.load(key)
        except DataError as exc:
            raise ModelFileError(str(exc)) from None
    return out


def load_model(path):
    """The fitted estimator saved in ``path`` (see :func:`save_model`)."""
    return load_model_with_metadata(path)[0]
