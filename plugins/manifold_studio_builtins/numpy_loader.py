"""NumPy ``.npy`` / ``.npz`` loader plugin (always ``allow_pickle=False``).

* ``.npy``: one array. 2-D ``(n, d)`` is the data matrix; 1-D ``(n,)`` is read as n samples
  with one feature; 3-D ``(n, h, w)`` is a stack of images, each flattened into a row of
  h·w pixels, the images kept for thumbnails; 4-D ``(n, h, w, 3 or 4)`` is a stack of colour
  images (flattened likewise; grey-level images kept for thumbnails). A structured array
  (named fields) gives one column per numeric field. Anything else is refused with its shape.
* ``.npz``: the data is the array named ``X`` / ``data`` (any case; also ``x``, ``features``)
  or else the only array with 2 or more dimensions; labels are taken from an array named
  ``y`` / ``labels`` / ``label`` / ``target`` / ``targets`` of matching length, feature names
  from ``feature_names`` and images from ``images``. The options ``data_array`` and
  ``label_array`` name them explicitly.
* A sparse ``.npz`` written by ``scipy.sparse.save_npz`` becomes a sparse data set (read by
  :func:`manifold_studio_builtins.sparse_loader.read_sparse_npz`, without pickle).
* Arrays of Python objects are refused: unpickling them could run arbitrary code.
* Reading is bounded (:mod:`manifold_studio.fileio.bounded`): every array's header is checked
  against the bytes really in the file and the load limit before anything is allocated.
  Files whose content is not NumPy's (whatever the extension says) are refused by name.
* NaN values are kept as read, and reported: probabilistic PCA with EM uses and imputes them;
  the other algorithms refuse them with a clear message.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Param
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError, InvalidParameterError
from manifold_studio.fileio.bounded import BoundedNpz, check_npy_file, check_regular_file, name_list, out_of_memory
from manifold_studio.hookspecs import hookimpl
from manifold_studio_builtins.sparse_loader import is_sparse_npz, read_sparse_npz

NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
DATA_NAMES = ("x", "data", "features")
LABEL_NAMES = ("y", "labels", "label", "target", "targets")
_REPORT_LIMIT = 10


class ArrayName(Param):
    """The name of an array inside an ``.npz`` file (or none to pick it automatically)."""

    def _check(self, value):
        if isinstance(value, str) and value.strip():
            return value.strip()
        raise InvalidParameterError(f"Invalid value {value!r} for parameter '{self.name}': "
                                    f"allowed {self.describe()}.")

    def _parse(self, text):
        return text

    def _describe(self):
        return "the name of an array in the .npz file"


OPTIONS = (
    ArrayName("data_array", None, "The array holding the data in an .npz file; none picks X, data "
              "or the only array with two or more dimensions.", allow_none=True, label="Data array"),
    ArrayName("label_array", None, "The array holding the labels in an .npz file; none picks y, "
              "labels or target when present.", allow_none=True, label="Label array"),
)

_OBJECT_MESSAGE = ("holds Python objects (an object array), which are refused for safety: loading "
                   "them would unpickle data that can run arbitrary code. Save plain numeric arrays "
                   "instead, e.g. np.save(path, X.astype(float)).")


def _sniff(path: Path) -> str:
    check_regular_file(path, "NumPy file")  # a FIFO would block the read below
    try:
        with open(path, "rb") as fh:
            head = fh.read(8)
    except IsADirectoryError:
        raise DataError(f"{path.name} is a folder, not a NumPy file.") from None
    except OSError as exc:
        raise DataError(f"Cannot read {path}: {exc.strerror or exc}.") from None
    if head.startswith(NPY_MAGIC):
        return "npy"
    if head.startswith(ZIP_MAGIC) or head.startswith(b"PK\x05\x06"):  # an archive (maybe empty)
        return "npz"
    hint = ""
    try:
        head.decode("ascii")
        hint = " (it starts with text: is it a CSV file?)"
    except UnicodeDecodeError:
        pass
    raise DataError(f"{path.name} is not a NumPy .npy/.npz file{hint}. Check the file and its "
                    "extension.")


def _refusal(path: Path, exc: Exception, array: str | None = None) -> DataError:
    where = f"{path.name}" + (f" (array '{array}')" if array else "")
    text = str(exc)
    if "allow_pickle" in text or "pickle" in text.lower():
        return DataError(f"{where} {_OBJECT_MESSAGE}")
    return DataError(f"{where} cannot be read as a NumPy array: {text}")


def _numeric(arr: np.ndarray, what: str) -> np.ndarray:
    kind = arr.dtype.kind
    if kind in "biuf":
        return arr.astype(np.float64, copy=False)
    if kind == "c":
        raise DataError(f"{what} holds complex numbers; only real values can be used.")
    if kind in "US":
        try:
            return arr.astype(np.float64)
        except ValueError:
            raise DataError(f"{what} holds text, not numbers.") from None
    if kind in "mM":
        raise DataError(f"{what} holds dates or durations, not numbers.")
    raise DataError(f"{what} has data type {arr.dtype}, which cannot be read as numbers.")


def _structured(arr: np.ndarray, what: str, report: list[str]):
    if arr.ndim != 1:
        raise DataError(f"{what} is a structured array of shape {arr.shape}; expected one dimension "
                        "(one record per sample).")
    cols, names = [], []
    for name in arr.dtype.names:
        field = arr[name]
        if field.ndim != 1 or field.dtype.kind not in "biuf":
            report.append(f"field '{name}' is not a numeric column: left out.")
            continue
        cols.append(field.astype(np.float64))
        names.append(name)
    if not cols:
        raise DataError(f"{what} has no numeric field.")
    return np.column_stack(cols), names


def _shape_to_matrix(arr: np.ndarray, what: str, report: list[str]):
    """(X, images, feature_names) from an array of 1 to 4 dimensions."""
    if arr.dtype.names:
        X, names = _structured(arr, what, report)
        return X, None, names
    if arr.ndim == 0:
        raise DataError(f"{what} holds a single value, not a data table.")
    if arr.size == 0 or arr.shape[0] == 0:
        raise DataError(f"{what} is empty (shape {arr.shape}): it holds no samples.")
    values = _numeric(arr, what)
    if arr.ndim == 1:
        report.append(f"1-D array of {arr.shape[0]:,} values read as {arr.shape[0]:,} samples "
                      "with one feature.")
        return values.reshape(-1, 1), None, None
    if arr.ndim == 2:
        return values, None, None
    n = arr.shape[0]
    if arr.ndim == 3:
        report.append(f"3-D array {arr.shape} read as {n:,} images of {arr.shape[1]}×{arr.shape[2]} "
                      f"pixels, each flattened into a row of {arr.shape[1] * arr.shape[2]} features.")
        return values.reshape(n, -1), values, None
    if arr.ndim == 4 and arr.shape[3] in (3, 4):
        report.append(f"4-D array {arr.shape} read as {n:,} colour images of {arr.shape[1]}×"
                      f"{arr.shape[2]} pixels, each flattened into a row of "
                      f"{int(np.prod(arr.shape[1:]))} features.")
        grey = values[..., :3] @ np.array([0.299, 0.587, 0.114])
        return values.reshape(n, -1), grey, None
    raise DataError(f"{what} has shape {arr.shape}: expected (n_samples, n_features), a 1-D array, "
                    "(n, height, width) images or (n, height, width, 3|4) colour images. Reshape it "
                    "to 2-D first, e.g. X.reshape(len(X), -1).")


def _pick(keys: list[str], wanted: tuple[str, ...]) -> str | None:
    lower = {k.lower(): k for k in keys}
    for name in wanted:
        if name in lower:
            return lower[name]
    return None


def _load_member(npz: BoundedNpz, path: Path, key: str) -> np.ndarray:
    """One array of the archive, read bounded (a lying header, a bomb or a lack of memory is a
    DataError naming the member); an object array is refused unread."""
    if npz.header(key)[1].hasobject:
        raise DataError(f"{path.name} (array '{key}') {_OBJECT_MESSAGE}")
    return npz.load(key)


def _labels(arr: np.ndarray) -> np.ndarray:
    if arr.dtype.kind == "S":
        return np.char.decode(arr, "utf-8", errors="replace")
    return arr


def _report_nan(X: np.ndarray, report: list[str]) -> None:
    bad = ~np.isfinite(X)
    if bad.any():
        rows = np.flatnonzero(bad.any(axis=1))
        shown = ", ".join(str(r) for r in rows[:_REPORT_LIMIT])
        more = f" and {len(rows) - _REPORT_LIMIT} more" if len(rows) > _REPORT_LIMIT else ""
        report.append(f"{int(bad.sum())} missing (NaN) or infinite value(s) in row(s) {shown}{more} "
                      "(0-based): probabilistic PCA (method=em) uses and imputes them; other methods refuse them.")


def read_npy(path: Path) -> Dataset:
    report: list[str] = []
    _shape, _dtype, size = check_npy_file(path)
    try:
        arr = np.load(path, allow_pickle=False)
        X, images, names = _shape_to_matrix(arr, path.name, report)
    except ValueError as exc:
        raise _refusal(path, exc) from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path.name} is not a readable NumPy file: {exc}") from None
    except MemoryError as exc:
        raise out_of_memory(path.name, size, exc) from None
    _report_nan(X, report)
    return Dataset(path.stem, X, feature_names=names, source=str(path), report=report, images=images)


def iter_npy_chunks(path: Path, chunk_rows: int):
    """A 2-D numeric .npy file as Dataset chunks read through a memory map (nothing else is
    loaded); other shapes go through :func:`read_npy` whole."""
    check_npy_file(path)
    try:
        arr = np.load(path, allow_pickle=False, mmap_mode="r")
    except ValueError as exc:
        raise _refusal(path, exc) from None
    except (OSError, EOFError) as exc:
        raise DataError(f"{path.name} is not a readable NumPy file: {exc}") from None
    if arr.ndim != 2 or arr.dtype.names is not None or arr.dtype.kind not in "biuf" or arr.shape[0] == 0:
        yield read_npy(path)
        return
    step = max(1, int(chunk_rows))
    n, d = arr.shape
    # C-ordered files are read with plain reads (no mapped pages kept resident: memory stays at
    # one chunk); Fortran-ordered ones through the memory map
    offset = arr.offset if arr.flags.c_contiguous else None
    dtype = arr.dtype
    del arr
    with open(path, "rb") as fh:
        mapped = np.load(path, allow_pickle=False, mmap_mode="r") if offset is None else None
        for start in range(0, n, step):
            rows = min(step, n - start)
            if mapped is None:
                fh.seek(offset + start * d * dtype.itemsize)
                block = np.fromfile(fh, dtype=dtype, count=rows * d)
                if block.size != rows * d:
                    raise DataError(f"{path.name} is truncated: rows {start:,} to {start + rows - 1:,} are missing.")
                X = block.reshape(rows, d).astype(np.float64, copy=False)
            else:
                X = np.asarray(mapped[start:start + rows], dtype=np.float64)
            report: list[str] = []
            _report_nan(X, report)
            if report:
                report = [f"rows {start:,}–{start + len(X) - 1:,}: {r}" for r in report]
            if start == 0:
                report.insert(0, f"Reading {n:,} × {d} values of {path.name} {step:,} rows at a time.")
            yield Dataset(path.stem, X, source=str(path), report=report)


def read_npz(path: Path, data_array=None, label_array=None) -> Dataset:
    report: list[str] = []
    with BoundedNpz(path, "NumPy .npz file") as npz:
        try:
            return _read_npz(npz, path, data_array, label_array, report)
        except MemoryError as exc:
            raise out_of_memory(path.name, None, exc) from None


def _read_npz(npz: BoundedNpz, path: Path, data_array, label_array, report: list[str]) -> Dataset:
    keys = list(npz.files)
    if not keys:
        raise DataError(f"{path.name} holds no arrays.")
    if is_sparse_npz(keys) and data_array is None and label_array is None:
        return read_sparse_npz(npz, path)
    for explicit in (data_array, label_array):
        if explicit is not None and explicit not in keys:
            raise DataError(f"{path.name} has no array named '{explicit}': it holds "
                            f"{name_list(keys)}.")
    key = data_array or _pick(keys, DATA_NAMES)
    if key is None:
        shapes = {k: npz.header(k)[0] for k in keys}
        candidates = [k for k, s in shapes.items() if len(s) >= 2 and k.lower() != "images"]
        if len(candidates) == 1:
            key = candidates[0]
        elif len(keys) == 1:
            key = keys[0]
        else:
            listing = ", ".join(f"'{k[:40]}' {shapes[k]}" for k in keys[:8])
            more = f" and {len(keys) - 8:,} more" if len(keys) > 8 else ""
            raise DataError(f"{path.name} holds several arrays ({listing}{more}) and none is named X or "
                            "data: choose the data array (option data_array).")
    arr = _load_member(npz, path, key)
    X, images, names = _shape_to_matrix(arr, f"{path.name} (array '{key}')", report)
    n = X.shape[0]
    if len(keys) > 1:
        report.append(f"Data from array '{key}' of {path.name}.")

    labels, label_name = None, None
    lkey = label_array or _pick([k for k in keys if k != key], LABEL_NAMES)
    if lkey is not None:
        lab = _load_member(npz, path, lkey)
        if lab.ndim == 2 and 1 in lab.shape:
            lab = lab.ravel()
        if lab.ndim == 1 and lab.shape[0] == n and not lab.dtype.names:
            labels, label_name = _labels(lab), lkey
        elif label_array is not None:
            raise DataError(f"{path.name}: array '{lkey}' has shape {lab.shape}; labels must be "
                            f"one value per sample ({n},).")
        else:
            report.append(f"array '{lkey}' of shape {lab.shape} does not match the {n} samples: "
                          "not used as labels.")
    if names is None and "feature_names" in keys:
        fn = _labels(_load_member(npz, path, "feature_names"))
        if fn.ndim == 1 and fn.shape[0] == X.shape[1]:
            names = [str(v) for v in fn]
        else:
            report.append("array 'feature_names' does not match the number of features: ignored.")
    if images is None:
        img_key = _pick([k for k in keys if k not in (key, lkey)], ("images",))
        if img_key is not None:
            img = _load_member(npz, path, img_key)
            if img.ndim in (3, 4) and img.shape[0] == n and img.dtype.kind in "biuf":
                images = img.astype(np.float64)
                if img.ndim == 4 and img.shape[3] in (3, 4):
                    images = images[..., :3] @ np.array([0.299, 0.587, 0.114])
                elif img.ndim == 4:
                    images = None
    _report_nan(X, report)
    return Dataset(path.stem, X, labels=labels, feature_names=names, source=str(path),
                   label_name=label_name, report=report, images=images)


class NumpyLoader(Loader):
    """Reads NumPy ``.npy`` and ``.npz`` files without unpickling anything."""

    id = "numpy"
    name = "NumPy arrays"
    extensions = (".npy", ".npz")
    options = OPTIONS

    def _load(self, path, data_array=None, label_array=None) -> Dataset:
        path = Path(path)
        kind = _sniff(path)
        if kind == "npy":
            if data_array is not None or label_array is not None:
                raise DataError(f"{path.name} is a single .npy array: the options data_array and "
                                "label_array apply to .npz files only.")
            return read_npy(path)
        return read_npz(path, data_array, label_array)

    def iter_chunks(self, path, chunk_rows: int = 100_000, **options):
        path = Path(path)
        if not path.exists():
            raise DataError(f"File not found: {path}")
        if _sniff(path) == "npy" and not any(v is not None for v in options.values()):
            return iter_npy_chunks(path, chunk_rows)
        return super().iter_chunks(path, chunk_rows, **options)


@hookimpl
def register_loaders():
    return [NumpyLoader()]
