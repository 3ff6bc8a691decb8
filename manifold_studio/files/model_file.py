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
"""
from __future__ import annotations

import datetime as _dt
import json
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from manifold_studio import __version__, algorithm_class, list_algorithms
from manifold_studio.errors import (
    DataError,
    InvalidParameterError,
    ManifoldStudioError,
    UnknownAlgorithmError,
    not_fitted,
)
from manifold_studio.files.atomic import atomic_write

FORMAT = "manifold-studio-model"
FORMAT_VERSION = 1
META_KEY = "__manifold_studio_model__"
ARRAY_PREFIX = "state/"

__all__ = ["save_model", "load_model", "load_model_with_metadata", "read_metadata",
           "pack_estimator", "unpack_estimator", "atomic_savez", "read_arrays", "model_bytes", "model_from_bytes",
           "ModelFileError", "FORMAT_VERSION"]


class ModelFileError(DataError):
    """The file is not a (readable) Manifold Studio model."""


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
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


def unpack_estimator(meta: dict, arrays: dict[str, np.ndarray], where: str = "the file"):
    """Rebuild a fitted estimator from :func:`pack_estimator`'s output through the plugin host."""

    algo_id = meta["algorithm"]
    try:
        cls = algorithm_class(algo_id)
    except UnknownAlgorithmError:
        raise UnknownAlgorithmError(
            f"{where} holds a model of algorithm '{algo_id}', which no loaded plugin provides "
            f"(available: {', '.join(list_algorithms()) or 'none'}); install or enable the plugin "
            "that provides it.") from None
    state: dict[str, Any] = dict(meta.get("scalars") or {})
    state.update(arrays)
    constraints = cls.param_constraints()
    params = {k: v for k, v in (meta.get("params") or {}).items() if k in constraints}
    try:
        est = cls()
        normalised = {k: constraints[k].validate(v) for k, v in params.items()}
        est.set_params(**normalised)
        est.validate_params()
        est.restore_state(state)
    except (InvalidParameterError, TypeError, ValueError) as exc:
        raise ModelFileError(f"{where}: the saved {algo_id} model cannot be restored by this "
                             f"version of its plugin: {exc}") from None
    if not est.is_fitted:
        raise ModelFileError(f"{where}: the saved {algo_id} model has no fitted state.")
    _check_usable(est, where, algo_id)
    return est


def _check_usable(est, where: str, algo_id: str) -> None:
    """Extend one point: arrays of inconsistent shapes (a damaged or edited file) are refused
    here, by name, rather than failing later inside the algorithm."""
    n_features = getattr(est, "n_features_in_", None)
    if not isinstance(n_features, (int, np.integer)) or n_features < 1:
        raise ModelFileError(f"{where}: the saved {algo_id} model does not say how many features it takes.")
    try:
        with np.errstate(all="ignore"):
            est.extend(np.zeros((1, int(n_features))))
    except ManifoldStudioError:
        raise
    except Exception as exc:  # noqa: BLE001 - whatever a damaged state makes the algorithm do
        raise ModelFileError(f"{where}: the saved {algo_id} model is inconsistent (its arrays do not fit "
                             f"together: {type(exc).__name__}: {exc}).") from None


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
    import io

    buf = io.BytesIO()
    np.savez(buf, **_model_arrays(estimator, None, None))
    return buf.getvalue()


#: what reading a damaged .npz archive can raise (zipfile raises NotImplementedError for a
#: compression method it does not know: a flipped bit in the header is enough)
ARCHIVE_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError)


def model_from_bytes(blob: bytes, where: str = "the model bytes", *, with_metadata: bool = False):
    """The estimator of :func:`model_bytes` or of a model file's bytes (read with
    ``allow_pickle=False``); ``(estimator, metadata)`` with ``with_metadata``."""
    import io

    try:
        npz = np.load(io.BytesIO(blob), allow_pickle=False)
    except (ValueError, *ARCHIVE_ERRORS) as exc:
        raise ModelFileError(f"{where} are not a readable model: {exc}") from None
    with npz:
        path = Path(where)
        meta = _read_meta(npz, path)
        arrays = read_arrays(npz, path, ARRAY_PREFIX)
    est = unpack_estimator(meta, arrays, where)
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
    """Write ``arrays`` as a compressed .npz, atomically (see :mod:`manifold_studio.files.atomic`)."""
    atomic_write(path, lambda fh: np.savez_compressed(fh, **arrays))


def open_npz(path: Path, what: str = "model", hint: str = "an .npz written by save_model / --save-model"):
    """Open a Manifold Studio .npz (model or project) safely, with clear errors naming the file."""
    if not path.exists():
        raise ModelFileError(f"{what.capitalize()} file not found: {path}")
    if path.is_dir():
        raise ModelFileError(f"{path} is a folder, not a {what} file.")
    with open(path, "rb") as fh:
        head = fh.read(4)
    if head != b"PK\x03\x04":
        raise ModelFileError(f"{path.name} is not a Manifold Studio {what} file (expected {hint}).")
    try:
        return np.load(path, allow_pickle=False)
    except (ValueError, *ARCHIVE_ERRORS) as exc:
        raise ModelFileError(f"{path.name} is not a readable {what} file: {exc}") from None


def read_document(npz, path: Path, key: str, fmt: str, version: int, what: str) -> dict:
    """The JSON document stored under ``key`` in an open .npz, checked for format and version."""
    if key not in npz.files:
        raise ModelFileError(f"{path.name} is not a Manifold Studio {what} file: it has no {what} "
                             "description inside (is it a data file, or another kind of file?).")
    try:
        meta = json.loads(str(npz[key][()]))
    except (ValueError, TypeError, *ARCHIVE_ERRORS) as exc:
        raise ModelFileError(f"{path.name}: the {what} description is damaged ({exc}).") from None
    if not isinstance(meta, dict) or meta.get("format") != fmt:
        raise ModelFileError(f"{path.name}: the {what} description is not in the {fmt} format.")
    found = meta.get("format_version")
    if not isinstance(found, int) or found > version:
        raise ModelFileError(f"{path.name} was written in {what} format version {found} by "
                             f"Manifold Studio {meta.get('library_version', '?')}; this version reads "
                             f"format {version}: update Manifold Studio.")
    return meta


def _read_meta(npz, path: Path) -> dict:
    meta = read_document(npz, path, META_KEY, FORMAT, FORMAT_VERSION, "model")
    if "algorithm" not in meta:
        raise ModelFileError(f"{path.name}: the model description names no algorithm.")
    return meta


def read_metadata(path) -> dict:
    """The JSON metadata of a model file (algorithm, params, training data, versions...)."""
    path = Path(path)
    with open_npz(path) as npz:
        return _read_meta(npz, path)


def load_model_with_metadata(path):
    """``(estimator, metadata)`` from a model file written by :func:`save_model`."""
    path = Path(path)
    with open_npz(path) as npz:
        meta = _read_meta(npz, path)
        arrays = read_arrays(npz, path, ARRAY_PREFIX)
    return unpack_estimator(meta, arrays, path.name), meta


def read_arrays(npz, path: Path, prefix: str) -> dict[str, np.ndarray]:
    """The arrays of an open .npz whose names start with ``prefix`` (prefix removed), refusing
    object arrays and reporting damaged members with the file name."""
    out = {}
    for key in npz.files:
        if key.startswith(prefix):
            try:
                out[key[len(prefix):]] = npz[key]
            except ValueError as exc:  # an object array: refused
                raise ModelFileError(f"{path.name}: array '{key}' cannot be loaded safely "
                                     f"({exc}).") from None
            except ARCHIVE_ERRORS as exc:
                raise ModelFileError(f"{path.name}: array '{key}' is damaged ({exc}).") from None
    return out


def load_model(path):
    """The fitted estimator saved in ``path`` (see :func:`save_model`)."""
    return load_model_with_metadata(path)[0]
