"""A corpus of bad inputs (issue 12): files for every loader, NumPy oddities, damaged model and
project files, awkward data × every algorithm, parameters at and beyond their limits, and the
command line. Every case states its expected outcome — a result, or one message that names the
problem (file, row, column, parameter) — and the run prints a summary (see conftest.py).

Cases are generated here (nothing to keep in sync with a folder of files); each writes what it
needs into its own temporary folder.
"""
from __future__ import annotations

import json
import os
import re
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import numpy as np
import pytest

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import InvalidParameterError, ManifoldStudioError

#: outcomes of the cases run, for the summary printed at the end of the session
OUTCOMES: list[tuple[str, str]] = []


@dataclass
class Case:
    id: str
    run: Callable  # run(tmp_path) -> result; raises on a refusal
    #: "result" (optionally checked by ``check``) or a regex the refusal's message must match
    expect: str = "result"
    check: Callable | None = None


def _write(tmp, name, content):
    path = Path(tmp) / name
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return str(path)


def load(name, content, **options):
    return lambda tmp: ms.load_data(_write(tmp, name, content), **options)


def load_npy(array, name="a.npy", **save):
    def run(tmp):
        path = Path(tmp) / name
        np.save(path, array, **save)
        return ms.load_data(str(path))
    return run


def load_npz(name="a.npz", **arrays):
    def run(tmp):
        path = Path(tmp) / name
        np.savez(path, **arrays)
        return ms.load_data(str(path))
    return run


def shape_is(*shape):
    return lambda ds: ds.X.shape == shape


# -- files ----------------------------------------------------------------------------------------
FILE_CASES = [
    Case("csv-empty", load("e.csv", ""), r"e\.csv is empty"),
    Case("csv-whitespace-only", load("w.csv", "  \n\n \t\n"), r"w\.csv is empty"),
    Case("csv-header-only", load("h.csv", "a,b,c\n"), r"h\.csv holds a header but no data rows"),
    Case("csv-bom", load("bom.csv", "\ufeffa,b\n1,2\n3,4\n"), check=lambda ds: ds.feature_names == ["a", "b"]),
    Case("csv-ragged", load("r.csv", "a,b,c\n1,2,3\n4,5\n"), r"r\.csv, line 3: expected 3 fields"),
    Case("csv-quoted-delimiters", load("q.csv", 'name,v\n"a,b",1\n"c,d",2\n', label_column="name"),
         check=lambda ds: list(ds.labels) == ["a,b", "c,d"]),
    Case("csv-semicolon-decimal-comma", load("dc.csv", "a;b\n1,5;2\n3,25;4\n"),
         check=lambda ds: np.allclose(ds.X[:, 0], [1.5, 3.25])),
    Case("csv-thousands-separators", load("ts.csv", "a;b\n1.234,5;1\n2.000,0;2\n"),
         check=lambda ds: np.allclose(ds.X[:, 0], [1234.5, 2000.0])),
    Case("csv-na-question-inf", load("na.csv", "a,b\n1,2\nNA,3\n?,4\ninf,5\n6,7\n"),
         check=lambda ds: ds.X.shape == (2, 2) and any("3 row(s)" in r for r in ds.report)),
    Case("csv-latin1", load("l.csv", "nom,v\ncaf\xe9,1\nth\xe9,2\n".encode("latin-1"), label_column="nom"),
         check=lambda ds: list(ds.labels) == ["café", "thé"] and any("Latin-1" in r for r in ds.report)),
    Case("csv-crlf", load("c.csv", "a,b\r\n1,2\r\n3,4\r\n"), check=shape_is(2, 2)),
    Case("csv-binary-content", load("b.csv", b"\x89PNG\r\n\x1a\n" + bytes(range(256))), r"b\.csv is not a text"),
    Case("csv-directory", lambda tmp: (Path(tmp) / "d.csv").mkdir() or ms.load_data(str(Path(tmp) / "d.csv")),
         r"d\.csv is a folder"),
    Case("csv-missing-path", lambda tmp: ms.load_data(str(Path(tmp) / "nope.csv")), r"File not found: .*nope\.csv"),
    Case("csv-very-wide", load("wide.csv", ",".join(f"c{i}" for i in range(3000)) + "\n"
                               + "\n".join(",".join(str(i + j) for i in range(3000)) for j in range(3)) + "\n"),
         check=shape_is(3, 3000)),
    Case("csv-duplicate-column-names", load("dup.csv", "a,a,b\n1,2,3\n4,5,6\n"),
         check=lambda ds: len(set(ds.feature_names)) == 3),
    Case("csv-text-column", load("t.csv", "a,b\n1,x\n2,y\n"),
         check=lambda ds: ds.X.shape == (2, 1) and any("'b' is not numeric" in r for r in ds.report)),
    Case("csv-no-numeric-column", load("nn.csv", "a,b\nx,y\nz,w\n"), r"nn\.csv has no numeric column"),
    Case("csv-unknown-label-column", load("u.csv", "a,b\n1,2\n", label_column="species"),
         r"u\.csv has no column named 'species'"),
    Case("csv-unknown-extension", lambda tmp: ms.load_data(_write(tmp, "x.xyz", "1,2\n")), r"No loader reads '\.xyz'"),
    Case("csv-bad-option", load("o.csv", "a\n1\n", delimiter="colon"), r"delimiter"),
    Case("csv-every-row-missing", load("m.csv", "a,b\n1,\n,2\n"), r"every row has a missing value"),
    Case("csv-missing-error-option", load("me.csv", "a,b\n1,2\n3,\n", missing="error"),
         r"me\.csv has missing .* line 3 \('b'\)"),
    # NumPy
    Case("npy-object-array", load_npy(np.array([{"a": 1}, None], dtype=object), allow_pickle=True),
         r"Python objects"),
    Case("npy-complex", load_npy(np.ones((3, 2), dtype=complex)), r"[Cc]omplex"),
    Case("npy-bool", load_npy(np.array([[True, False], [False, True]])), check=shape_is(2, 2)),
    Case("npy-float16", load_npy(np.ones((4, 3), dtype=np.float16)), check=shape_is(4, 3)),
    Case("npy-structured", load_npy(np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])),
         check=lambda ds: ds.X.shape == (2, 2) and ds.feature_names == ["a", "b"]),
    Case("npy-0d", load_npy(np.array(3.0)), r"a\.npy holds a single value"),
    Case("npy-1d", load_npy(np.arange(5.0)), check=shape_is(5, 1)),
    Case("npy-3d-images", load_npy(np.zeros((4, 3, 2))), check=lambda ds: ds.X.shape == (4, 6) and ds.images is not None),
    Case("npy-fortran-order", load_npy(np.asfortranarray(np.arange(6.0).reshape(3, 2))),
         check=lambda ds: np.array_equal(ds.X, np.arange(6.0).reshape(3, 2))),
    Case("npy-truncated", lambda tmp: (np.save(Path(tmp) / "t.npy", np.ones((100, 4))),
                                        (Path(tmp) / "t.npy").write_bytes((Path(tmp) / "t.npy").read_bytes()[:300]),
                                        ms.load_data(str(Path(tmp) / "t.npy")))[-1], r"t\.npy"),
    Case("npz-empty", load_npz("e.npz"), r"e\.npz holds no arrays"),
    Case("npz-several-arrays", load_npz("s.npz", a=np.ones((3, 2)), b=np.ones((4, 2))), r"s\.npz holds several arrays"),
    Case("npz-data-and-labels", load_npz("dl.npz", X=np.ones((3, 2)), y=np.array([0, 1, 0])),
         check=lambda ds: ds.labels is not None and ds.X.shape == (3, 2)),
    Case("npy-not-numpy", load("fake.npy", "just text"), r"fake\.npy"),
]


# -- model and project files ------------------------------------------------------------------------
def _model(tmp):
    from manifold_studio.files.model_file import save_model

    X = np.random.default_rng(0).normal(size=(30, 3))
    return save_model(ms.get_algorithm("pca").fit(X), Path(tmp) / "m.npz")


def _rewrite_member(path, name, transform):
    """Rewrite one member of an .npz (zip) file."""
    with zipfile.ZipFile(path) as z:
        members = {n: z.read(n) for n in z.namelist()}
    members = transform(members)
    with zipfile.ZipFile(path, "w") as z:
        for n, data in members.items():
            z.writestr(n, data)


def _meta_edit(edit):
    def transform(members):
        key = next(n for n in members if n.startswith("__manifold_studio_model__"))
        raw = members[key]
        arr = np.load(__import__("io").BytesIO(raw))
        meta = json.loads(str(arr[()]))
        edit(meta)
        buf = __import__("io").BytesIO()
        np.save(buf, np.array(json.dumps(meta)))
        members[key] = buf.getvalue()
        return members
    return transform


def model_case(mutate):
    def run(tmp):
        from manifold_studio.files.model_file import load_model

        path = _model(tmp)
        mutate(path)
        return load_model(path)
    return run


def _truncate(path):
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])


def _flip_bits(path):
    data = bytearray(path.read_bytes())
    for i in range(60, len(data) - 60, 97):
        data[i] ^= 0x55
    path.write_bytes(bytes(data))


def _pickled_member(path):
    def transform(members):
        buf = __import__("io").BytesIO()
        np.save(buf, np.array([object()], dtype=object), allow_pickle=True)
        key = next(n for n in members if n.startswith("state/"))
        members[key] = buf.getvalue()
        return members
    _rewrite_member(path, None, transform)


def _dotdot_member(path):
    def transform(members):
        buf = __import__("io").BytesIO()
        np.save(buf, np.ones(3))
        members["../../evil.npy"] = buf.getvalue()
        return members
    _rewrite_member(path, None, transform)


def _bad_shapes(path):
    def transform(members):
        key = next(n for n in members if n.startswith("state/components_"))
        buf = __import__("io").BytesIO()
        np.save(buf, np.ones((5, 7)))
        members[key] = buf.getvalue()
        return members
    _rewrite_member(path, None, transform)


MODEL_CASES = [
    Case("model-truncated", model_case(_truncate), r"m\.npz"),
    Case("model-bit-flipped", model_case(_flip_bits), r"m\.npz"),
    Case("model-wrong-version", model_case(lambda p: _rewrite_member(p, None, _meta_edit(
        lambda m: m.update(format_version=99)))), r"format version 99 .* update Manifold Studio"),
    Case("model-pickled-object-array", model_case(_pickled_member), r"cannot be loaded safely"),
    Case("model-dotdot-member-name", model_case(_dotdot_member),
         check=lambda est: est.is_fitted and not Path("/evil.npy").exists()),
    Case("model-inconsistent-shapes", model_case(_bad_shapes), r"m\.npz|components_|shape"),
    Case("model-missing-plugin", model_case(lambda p: _rewrite_member(p, None, _meta_edit(
        lambda m: m.update(algorithm="no_such_plugin")))), r"no_such_plugin"),
    Case("model-not-a-model", lambda tmp: __import__("manifold_studio.files.model_file", fromlist=["x"]).load_model(
        _write(tmp, "m.npz", "hello")), r"m\.npz is not a Manifold Studio model file"),
    Case("project-truncated", lambda tmp: _project_then(tmp, _truncate), r"p\.msproj|p\.npz|project"),
    Case("project-bit-flipped", lambda tmp: _project_then(tmp, _flip_bits), r"p\.msproj|p\.npz|project"),
]


def _project_then(tmp, mutate):
    from manifold_studio.files.project_file import SUFFIX, read_project, save_project
    from manifold_studio.session.model import Session

    s = Session()
    s.add_dataset(ms.load_data("sample:iris"))
    path = save_project(s, Path(tmp) / f"p{SUFFIX}")
    mutate(path)
    return read_project(path)


# -- awkward data × every algorithm -----------------------------------------------------------------
def _data_cases():
    rng = np.random.default_rng(0)
    base = rng.normal(size=(40, 3))
    return {
        "n1": (base[:1], r"sample|point|n_samples|too (few|large)|at least"),
        "n2": (base[:2], None),
        "n3": (base[:3], None),
        "duplicate-points": (np.repeat(base[:8], 5, axis=0), None),
        "constant-column": (np.column_stack([base, np.full(40, 7.0)]), None),
        "d-greater-than-n": (rng.normal(size=(12, 60)), None),
        "huge-values": (base * 1e300, r"overflow"),
        "tiny-values": (base * 1e-300, r"underflow"),
        "nan": (np.where(np.eye(40, 3, dtype=bool), np.nan, base), r"NaN"),
        "inf": (np.where(np.eye(40, 3, dtype=bool), np.inf, base), r"infinite|inf"),
    }


#: words one of which a refusal about the data or a parameter must contain
CLEAR = re.compile(r"sample|point|feature|column|row|n_\w+|NaN|inf|distinct|overflow|underflow|"
                   r"neighbou?r|component|cluster|class|label|variance|constant|duplicate|"
                   r"singular|at least|at most|too (few|large|small)|perplexity|[Nn]egative|identical",
                   re.I)


def algorithm_data_case(algorithm_id, name, X, pattern):
    cls = ms.algorithm_class(algorithm_id)

    def run(tmp):
        est = ms.get_algorithm(algorithm_id)
        y = None
        if cls.requires_labels:
            y = np.arange(X.shape[0]) % 2
        est.fit(X, y)
        out = np.asarray(est.extend(X[:2]))
        assert out.shape[0] == 2
        if out.dtype.kind == "f":
            assert np.isfinite(out).all() or np.isnan(out).all(axis=-1).any(), "extend gave non-finite values"
        return est
    # the result is fine, or the refusal names the data problem (pattern) / is clear (CLEAR)
    return Case(f"data-{name}-{algorithm_id}", run, expect="result-or-clear:" + (pattern or CLEAR.pattern))


def parameter_cases(algorithm_id):
    """Each numeric parameter just outside its range: refused, naming the parameter."""
    from manifold_studio.algorithms.params import Float, Int

    cases = []
    for p in ms.algorithm_class(algorithm_id).params:
        if not isinstance(p, (Int, Float)):
            continue
        low = getattr(p, "low", None)
        high = getattr(p, "high", None)
        for side, bound in (("below", low), ("above", high)):
            if bound is None:
                continue
            step = 1 if isinstance(p, Int) else max(abs(bound) * 1e-3, 1e-9)
            value = bound - step if side == "below" else bound + step
            if isinstance(p, Int):
                value = int(value)
            cases.append(Case(f"param-{algorithm_id}-{p.name}-{side}-range",
                              (lambda v, name: lambda tmp: ms.get_algorithm(algorithm_id, **{name: v}))(value, p.name),
                              rf"parameter '{p.name}'"))
    return cases


def _algorithm_cases():
    cases = []
    for algorithm_id in sorted(ms.list_algorithms()):
        for name, (X, pattern) in _data_cases().items():
            cases.append(algorithm_data_case(algorithm_id, name, X, pattern))
        cases += parameter_cases(algorithm_id)
        cases.append(Case(f"param-{algorithm_id}-unknown-name",
                          (lambda a: lambda tmp: ms.get_algorithm(a, no_such_parameter=1))(algorithm_id),
                          r"no_such_parameter"))
    return cases


# -- command line -----------------------------------------------------------------------------------
def cli(*args):
    def run(tmp):
        argv = [a.replace("{tmp}", str(tmp)) for a in args]
        rc = cli_main(argv)
        if rc != 0:
            raise ManifoldStudioError(_last_stderr.pop() if _last_stderr else f"exit code {rc}")
        return rc
    return run


_last_stderr: list[str] = []

CLI_CASES = [
    Case("cli-unknown-algorithm", cli("run", "nope", "--data", "sample:iris", "--out", "-"), r"Unknown algorithm 'nope'"),
    Case("cli-unknown-parameter", cli("run", "pca", "--data", "sample:iris", "--param", "foo=1", "--out", "-"),
         r"Unknown parameter 'foo'"),
    Case("cli-bad-parameter-value", cli("run", "pca", "--data", "sample:iris", "--param", "n_components=x", "--out", "-"),
         r"n_components"),
    Case("cli-missing-data", cli("run", "pca", "--data", "{tmp}/nothing.csv", "--out", "-"), r"File not found"),
    Case("cli-out-is-a-folder", cli("run", "pca", "--data", "sample:iris", "--out", "{tmp}"), r"is a folder"),
    Case("cli-out-folder-missing", cli("run", "pca", "--data", "sample:iris", "--out", "{tmp}/no/such/x.csv"),
         r"does not exist"),
    Case("cli-missing-model", cli("apply", "--model", "{tmp}/m.npz", "--data", "sample:iris", "--out", "-"),
         r"not found"),
    Case("cli-classifier-without-labels", cli("run", "kmeans", "--data", "sample:iris", "--param", "n_clusters=0",
                                              "--out", "-"), r"n_clusters"),
    Case("cli-fit-sample-larger-than-the-data", cli("run", "pca", "--data", "sample:iris", "--fit-sample", "1000",
                                                    "--out", "{tmp}/m.csv")),  # fits on all 150
    Case("cli-extend-without-out", cli("run", "pca", "--data", "sample:iris", "--extend", "sample:iris", "--out", "-"),
         r"--extend FILE and --extend-out FILE go together"),
]

ALL_CASES = FILE_CASES + MODEL_CASES + _algorithm_cases() + CLI_CASES


@pytest.mark.parametrize("case", ALL_CASES, ids=[c.id for c in ALL_CASES])
def test_case(case, tmp_path, capsys):
    try:
        result = case.run(tmp_path)
    except (ManifoldStudioError, ValueError, TypeError, OSError) as exc:
        message = str(exc)
        err = capsys.readouterr().err if case.id.startswith("cli-") else ""
        if case.id.startswith("cli-"):
            message = err or message
        if not isinstance(exc, ManifoldStudioError) and not case.id.startswith("cli-"):
            OUTCOMES.append((case.id, "failure"))
            pytest.fail(f"{type(exc).__name__} is not one of the project's error types: {message}")
        pattern = case.expect.split(":", 1)[1] if case.expect.startswith("result-or-clear:") else case.expect
        if case.expect == "result":
            OUTCOMES.append((case.id, "failure"))
            pytest.fail(f"expected a result, got the refusal: {message}")
        if not re.search(pattern, message) or "\n" in message.strip():
            OUTCOMES.append((case.id, "failure"))
            pytest.fail(f"the message does not name the problem ({pattern!r}): {message!r}")
        OUTCOMES.append((case.id, "clear message"))
        return
    if case.expect not in ("result",) and not case.expect.startswith("result-or-clear:"):
        OUTCOMES.append((case.id, "failure"))
        pytest.fail(f"expected a refusal matching {case.expect!r}, got a result")
    if case.check is not None and not case.check(result):
        OUTCOMES.append((case.id, "failure"))
        pytest.fail("the result is not the expected one")
    OUTCOMES.append((case.id, "result"))


def test_permission_denied_is_named(tmp_path):
    path = Path(_write(tmp_path, "locked.csv", "a\n1\n2\n"))
    path.chmod(0)
    try:
        if os.access(path, os.R_OK):
            pytest.skip("running as a user who can read anything (root)")
        with pytest.raises(ManifoldStudioError, match=r"locked\.csv"):
            ms.load_data(str(path))
    finally:
        path.chmod(0o600)


def test_corpus_is_large_enough():
    assert len(ALL_CASES) >= 100
    assert InvalidParameterError  # (the parameter cases expect it; imported for readers)
