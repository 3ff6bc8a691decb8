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
    from manifold_studio.project.project_file import SUFFIX, read_project, save_project
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

# -- hostile files (issue 18): bombs, lying headers, schema violations, FIFOs, outputs ------------------
def _hostile():
    from hostile_files import PROJECT_KEY, bomb_npz, edit_document, lying_npy, npy_bytes, npy_header, set_member

    def fifo(name):
        def run(tmp):
            if not hasattr(os, "mkfifo"):
                pytest.skip("no named pipes")
            path = Path(tmp) / name
            os.mkfifo(path)
            return ms.load_data(str(path))
        return run

    def cli_fifo(*args):
        def run(tmp):
            if not hasattr(os, "mkfifo"):
                pytest.skip("no named pipes")
            os.mkfifo(Path(tmp) / "pipe.csv")
            return cli(*args)(tmp)
        return run

    def model_edit(edit):
        return model_case(lambda p: edit_document(p, edit))

    def model_member(name, value):
        return model_case(lambda p: set_member(p, name, value))

    def project_edit(edit):
        return lambda tmp: _project_then(tmp, lambda p: edit_document(p, edit, PROJECT_KEY))

    def device(tmp):
        if not Path("/dev/zero").exists():
            pytest.skip("no /dev/zero")
        (Path(tmp) / "zero.csv").symlink_to("/dev/zero")  # endless: reading it would never finish
        return ms.load_data(str(Path(tmp) / "zero.csv"))

    def with_run(tmp):
        from manifold_studio.project.project_file import SUFFIX, read_project, save_project
        from manifold_studio.session.model import Session

        s = Session()
        s.load("sample:iris")
        s.run("pca")
        path = save_project(s, Path(tmp) / f"p{SUFFIX}")
        set_member(path, "run/1/embedding", np.ones((3, 2)))
        return read_project(path)

    def csv_out(*args, expect_cell):
        def run(tmp):
            _write(tmp, "labels.csv", "x,y,name\n1,2,=cmd|' /C calc'!A0\n3,4,-1.5\n5,7,@SUM(A1)\n2,2,b\n")
            rc = cli(*args)(tmp)
            text = (Path(tmp) / "o.csv").read_text()
            assert expect_cell in text.splitlines()[1] and ",-1.5" in text.splitlines()[2], text
            return rc
        return run

    return [
        # lying headers
        Case("hostile-npy-declares-29-tib", lambda tmp: ms.load_data(str(lying_npy(Path(tmp) / "h.npy", (2_000_000,) * 2))),
             r"h\.npy is truncated or forged: its header declares shape \(2,000,000, 2,000,000\) of <f8 \(29\.1 TiB\), but it holds only 64 bytes"),
        Case("hostile-npz-member-lies", lambda tmp: ms.load_data(__import__("hostile_files").write_members(
            Path(tmp) / "l.npz", {"X.npy": npy_header((10**7, 10**3)) + b"\0" * 8})), r"l\.npz: member 'X' is truncated or forged: its header declares"),
        Case("hostile-model-member-lies", model_member("state/components_", npy_header((10**6, 5)) + b"\0" * 8),
             r"m\.npz: member 'state/components_' is truncated or forged: its header declares shape \(1,000,000, 5\)"),
        # bombs
        Case("hostile-npz-bomb", lambda tmp: ms.load_data(str(bomb_npz(Path(tmp) / "b.npz", 100 * 2**20))),
             r"b\.npz: member 'X' inflates from .* to 100\.0 MiB .* compression bomb"),
        Case("hostile-npz-20000-members", lambda tmp: ms.load_data(__import__("hostile_files").write_members(
            Path(tmp) / "many.npz", {f"a{i}.npy": npy_bytes(np.ones((2, 2))) for i in range(20_000)},
            zipfile.ZIP_STORED)), r"many\.npz holds several arrays .* and 19,992 more\) and none is named X"),
        Case("hostile-model-extra-array", model_member("state/payload_", npy_header((2**29,)) + b"\0" * 8),
             r"member 'payload_' is not a fitted attribute of a pca model"),
        # schema violations
        Case("hostile-model-params-list", model_edit(lambda d: d.update(params=[1, 2])),
             r"field 'params' must be an object, not a list"),
        Case("hostile-model-json-100000-deep", model_edit(lambda d: '{"a":' * 100_000 + "1" + "}" * 100_000),
             r"nested more than 64 levels deep"),
        Case("hostile-model-dunder-dict", model_member("state/__dict__", np.ones(3)),
             r"member '__dict__' is not a fitted attribute of a pca model"),
        Case("hostile-model-pca-claims-kmeans", model_edit(lambda d: d.update(algorithm="kmeans")),
             r"kind 'embedding', but kmeans is a clustering algorithm"),
        Case("hostile-model-pca-claims-kmeans-and-kind", model_edit(lambda d: d.update(algorithm="kmeans", kind="clustering")),
             r"is not a fitted attribute of a kmeans model"),
        Case("hostile-model-all-nan", model_member("state/components_", np.full((2, 3), np.nan)),
             r"member 'components_' holds NaN or infinite values"),
        Case("hostile-model-format-version-text", model_edit(lambda d: d.update(format_version="1")),
             r"field 'format_version' must be a whole number, not str '1'"),
        Case("hostile-model-tampered-shape", model_member("state/mean_", np.ones(7)),
             r"member 'mean_' has shape \(7,\), but its axis 0 should have 3 \(n_features_in_ is 3\)"),
        Case("hostile-project-view-settings-list", project_edit(lambda d: d.update(view_settings=[1])),
             r"p\.msproj: .*field 'view_settings' must be an object"),
        Case("hostile-project-run-id-text", lambda tmp: with_run_edit(tmp, lambda d: d["runs"][0].update(id="one")),
             r"field 'runs\[0\]\.id' must be a whole number, not text 'one'"),
        Case("hostile-project-json-deep", project_edit(lambda d: '{"format": "manifold-studio-project", "x": '
                                                       + "[" * 100_000 + "]" * 100_000 + "}"), r"nested more than 64"),
        Case("hostile-project-embedding-3-of-150", with_run,
             check=lambda c: c.session.runs[1].status == "failed"
             and c.problems[0].startswith("Run #1 (pca) is damaged: its embedding has 3 rows for the 150 rows")),
        # FIFOs and devices
        Case("hostile-fifo-csv", fifo("p.csv"), r"p\.csv is a named pipe \(FIFO\), not a regular data file"),
        Case("hostile-fifo-npy", fifo("p.npy"), r"p\.npy is a named pipe \(FIFO\)"),
        Case("hostile-device-as-data", device, r"zero\.csv is a device, not a regular data file"),
        Case("cli-fifo-as-data", cli_fifo("run", "pca", "--data", "{tmp}/pipe.csv", "--out", "-"),
             r"--data .*pipe\.csv: pipe\.csv is a named pipe \(FIFO\)"),
        Case("cli-fifo-as-model", cli_fifo("apply", "--model", "{tmp}/pipe.csv", "--data", "sample:iris", "--out", "-"),
             r"--model .*pipe\.csv: pipe\.csv is a named pipe \(FIFO\), not a regular model file"),
        # outputs
        Case("cli-out-is-the-data", lambda tmp: (_write(tmp, "d.csv", "a,b\n1,2\n3,4\n5,1\n"),
                                                 cli("run", "pca", "--data", "{tmp}/d.csv", "--out", "{tmp}/./d.csv")(tmp))[1],
             r"--out .*d\.csv is the input file of --data: writing the result would replace it"),
        Case("cli-out-is-the-model", lambda tmp: (_model(tmp), cli("apply", "--model", "{tmp}/m.npz", "--data",
                                                                   "sample:iris", "--out", "{tmp}/m.npz")(tmp))[1],
             r"--out .*m\.npz is the input file of --model"),
        Case("cli-sample-seed-negative", cli("run", "pca", "--data", "sample:iris", "--fit-sample", "10",
                                             "--sample-seed", "-1", "--out", "-"), r"argument --sample-seed: .* got -1"),
        Case("cli-formula-cells-escaped", csv_out("run", "kmeans", "--data", "{tmp}/labels.csv", "--label-column", "name",
                                                  "--out", "{tmp}/o.csv", expect_cell="'=cmd|' /C calc'!A0")),
        Case("cli-formula-cells-not-escaped", csv_out("run", "kmeans", "--data", "{tmp}/labels.csv", "--label-column",
                                                      "name", "--out", "{tmp}/o.csv", "--no-escape-formulas",
                                                      expect_cell=",=cmd|' /C calc'!A0")),
        Case("csv-mac-line-ends", load("mac.csv", "a,b\r1,2\r3,4\r5,6\r"), check=shape_is(3, 2)),
    ]


def with_run_edit(tmp, edit):
    from hostile_files import PROJECT_KEY, edit_document
    from manifold_studio.project.project_file import SUFFIX, read_project, save_project
    from manifold_studio.session.model import Session

    s = Session()
    s.load("sample:iris")
    s.run("pca")
    path = save_project(s, Path(tmp) / f"p{SUFFIX}")
    edit_document(path, edit, PROJECT_KEY)
    return read_project(path)


HOSTILE_CASES = _hostile()
ALL_CASES = FILE_CASES + MODEL_CASES + _algorithm_cases() + CLI_CASES + HOSTILE_CASES


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
