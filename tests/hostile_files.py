"""Makers of hostile NumPy, model and project files for the bad-input tests (issue 18): lying
headers, compression bombs, edited JSON documents, swapped members. Nothing here allocates what
the files claim: headers are written by hand, bombs are streamed."""
from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np

MODEL_KEY = "__manifold_studio_model__.npy"
PROJECT_KEY = "__manifold_studio_project__.npy"


def npy_header(shape, dtype="<f8") -> bytes:
    """The bytes of a version-1 .npy header declaring ``shape`` (nothing is allocated)."""
    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": dtype, "fortran_order": False, "shape": tuple(shape)})
    return buf.getvalue()


def npy_bytes(array) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.asarray(array), allow_pickle=False)
    return buf.getvalue()


def lying_npy(path, shape, payload: bytes = b"\0" * 64) -> Path:
    """A small .npy whose header declares ``shape`` (e.g. 4·10¹² float64: 29 TiB)."""
    path = Path(path)
    path.write_bytes(npy_header(shape) + payload)
    return path


def write_members(path, members: dict[str, bytes], compression=zipfile.ZIP_DEFLATED) -> Path:
    path = Path(path)
    with zipfile.ZipFile(path, "w", compression) as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def read_members(path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist()}


def bomb_npz(path, n_bytes: int, name: str = "X.npy") -> Path:
    """An archive with one member of ``n_bytes`` zeros under a true header, streamed (nothing
    that large is allocated): it deflates about 1000 to 1."""
    path = Path(path)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        info = zipfile.ZipInfo(name)
        info.compress_type = zipfile.ZIP_DEFLATED
        itemsize = 8
        with z.open(info, "w", force_zip64=True) as fh:
            fh.write(npy_header((n_bytes // itemsize,)))
            block = b"\0" * (1 << 20)
            left = (n_bytes // itemsize) * itemsize
            while left:
                fh.write(block[:min(left, len(block))])
                left -= min(left, len(block))
    return path


def edit_document(path, edit, key: str = MODEL_KEY) -> Path:
    """Rewrite the JSON document of a model (or, with ``key=PROJECT_KEY``, project) file:
    ``edit(document)`` changes it in place or returns the text to store instead."""
    members = read_members(path)
    doc = json.loads(str(np.load(io.BytesIO(members[key]))[()]))
    out = edit(doc)
    text = out if isinstance(out, str) else json.dumps(doc)
    members[key] = npy_bytes(np.array(text))
    return write_members(path, members)


def set_member(path, name: str, value) -> Path:
    """Replace (or add) one member: an array, or raw bytes."""
    members = read_members(path)
    members[name if name.endswith(".npy") else name + ".npy"] = value if isinstance(value, bytes) else npy_bytes(value)
    return write_members(path, members)


def drop_member(path, name: str) -> Path:
    members = read_members(path)
    del members[name if name.endswith(".npy") else name + ".npy"]
    return write_members(path, members)
