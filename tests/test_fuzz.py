"""Fuzzing the loaders and the model/project readers with Hypothesis (issue 12): whatever the
bytes, a reader returns a data set / model or raises one of the project's documented error
types (ManifoldStudioError and its subclasses) — never another exception, never a hang (every
example is time-boxed), never a partial change of a live session."""
from __future__ import annotations

import io
import tempfile
import zipfile
from pathlib import Path

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import manifold_studio as ms  # noqa: E402
from manifold_studio.data import Dataset  # noqa: E402
from manifold_studio.errors import ManifoldStudioError  # noqa: E402

pytestmark = pytest.mark.timeout(120)
FUZZ = settings(max_examples=300, deadline=3000, suppress_health_check=[HealthCheck.too_slow],
                derandomize=True)
_TMP = Path(tempfile.mkdtemp(prefix="ms-fuzz-"))


def _read(name: str, content: bytes, **options):
    path = _TMP / name
    path.write_bytes(content)
    try:
        ds = ms.load_data(str(path), **options)
    except ManifoldStudioError as exc:
        assert str(exc).strip(), "an empty error message"
        return None
    assert isinstance(ds, Dataset) and ds.X.ndim == 2
    return ds


CSV_ALPHABET = "0123456789.,;\t\n\r -+eENA?\"'abcé|#inf"


@FUZZ
@given(st.binary(max_size=2000))
def test_random_bytes_as_csv(content):
    _read("f.csv", content)


@FUZZ
@given(st.text(alphabet=CSV_ALPHABET, max_size=600), st.sampled_from(["auto", "comma", "semicolon", "tab"]),
       st.sampled_from(["drop", "keep", "error"]))
def test_random_csv_like_text(text, delimiter, missing):
    _read("f.csv", text.encode("utf-8"), delimiter=delimiter, missing=missing)


@FUZZ
@given(st.text(alphabet=CSV_ALPHABET, max_size=400))
def test_random_csv_like_text_with_a_label_column(text):
    _read("f.tsv", text.encode("utf-8"), label_column=0)


@FUZZ
@given(st.binary(max_size=1500))
def test_random_bytes_as_npy_and_npz(content):
    _read("f.npy", b"\x93NUMPY" + content)
    _read("f.npz", b"PK\x03\x04" + content)
    _read("g.npy", content)


_DTYPES = st.sampled_from(["f8", "f4", "f2", "i4", "u1", "b1", "c16", "U3", "O", "V4"])


@st.composite
def npz_members(draw):
    members = {}
    for i in range(draw(st.integers(0, 3))):
        name = draw(st.sampled_from(["X", "y", "data", "labels", "images", f"a{i}", "target"]))
        dtype = draw(_DTYPES)
        shape = tuple(draw(st.lists(st.integers(0, 4), min_size=0, max_size=3)))
        if dtype == "O":
            arr = np.empty(shape, dtype=object)
        else:
            arr = np.zeros(shape, dtype=dtype)
        members[name] = arr
    return members


@FUZZ
@given(npz_members(), st.booleans())
def test_random_npz_members(members, corrupt):
    buf = io.BytesIO()
    np.savez(buf, **members) if members else zipfile.ZipFile(buf, "w").close()
    data = bytearray(buf.getvalue())
    if corrupt and len(data) > 80:
        data[len(data) // 2] ^= 0xFF
    _read("m.npz", bytes(data))


def _model_bytes():
    from manifold_studio.files.model_file import model_bytes

    X = np.random.default_rng(0).normal(size=(30, 3))
    return model_bytes(ms.get_algorithm("kmeans", n_clusters=2, random_state=0).fit(X))


MODEL = _model_bytes()


@FUZZ
@given(st.integers(0, len(MODEL) - 1), st.integers(1, 255), st.integers(0, len(MODEL)))
def test_damaged_model_files(position, xor, cut):
    from manifold_studio.files.model_file import load_model

    data = bytearray(MODEL)
    data[position] ^= xor
    path = _TMP / "m.npz"
    path.write_bytes(bytes(data[:max(cut, 1)]))
    try:
        est = load_model(path)
    except ManifoldStudioError as exc:
        assert str(exc).strip()
        return
    # accepted: then it must work
    assert np.asarray(est.extend(np.zeros((2, 3)))).shape[0] == 2


def _project_bytes():
    from manifold_studio.project.project_file import SUFFIX, save_project
    from manifold_studio.session.model import Session

    s = Session()
    s.add_dataset(ms.load_data("sample:iris"))
    path = _TMP / f"base{SUFFIX}"
    save_project(s, path)
    return path.read_bytes(), SUFFIX


PROJECT, SUFFIX = _project_bytes()


@settings(max_examples=150, deadline=5000, suppress_health_check=[HealthCheck.too_slow], derandomize=True)
@given(st.integers(0, len(PROJECT) - 1), st.integers(1, 255), st.integers(0, len(PROJECT)))
def test_damaged_project_files_never_change_a_live_session(position, xor, cut):
    from manifold_studio.project.project_file import load_project_into
    from manifold_studio.session.model import Session

    session = Session()
    session.add_dataset(ms.load_data("sample:moons"))
    before = (list(session.datasets), [ds.X.copy() for ds in session.datasets.values()], list(session.runs))
    data = bytearray(PROJECT)
    data[position] ^= xor
    path = _TMP / f"p{SUFFIX}"
    path.write_bytes(bytes(data[:max(cut, 1)]))
    try:
        load_project_into(session, path)
    except ManifoldStudioError as exc:
        assert str(exc).strip()
        after = (list(session.datasets), [ds.X for ds in session.datasets.values()], list(session.runs))
        assert after[0] == before[0] and after[2] == before[2]
        assert all(np.array_equal(a, b) for a, b in zip(after[1], before[1]))
        return
    assert session.datasets  # a readable file replaced the session's contents whole
