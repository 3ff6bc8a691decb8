"""The exported script cannot be turned against the user (issue 29): hostile text in every field
of the data or of a tampered project reaches the script only inside its one JSON literal, or is
refused with a message naming it; it never becomes code.

Each hostile string goes into every field a data file or a project file controls: the label
column's header, the feature columns' names, the data file's name, the project's name, and (a
tampered ``.msproj``) parameter keys, preparation-step parameter keys, load-option keys,
``label_name``, the source path, ``algorithm_name``, ``kind``, a Test & Score learner's name and
parameter keys, and the name of its data set. For each, the script's code (every line but the
SPEC literal and the export time) is the same as for a plain session, ``ast.parse`` shows only
the expected top-level statements, and a representative subset is run in a fresh process: the
marker file a payload would create never appears, and the analysis output does.
"""
from __future__ import annotations

import ast
import csv
import json
import subprocess
import sys

import numpy as np
import pytest

from manifold_studio.reproduce.script_export import run_output_name, write_script
from manifold_studio.reproduce.script_spec import script_spec
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.project.project_file import META_KEY, save_project
from manifold_studio.session.model import Session

BREAKERS = ["\n", "\r", "\r\n", "\u2028", "\u2029", "\x85", "\x0b", "\x0c", "\x1c", "\x00", "\t", "'", '"',
            "'''", '"""', "\\", "\\'", "#", "{}", "{0}", "%s", "\x1b[2J", "é ü 中"]
PAYLOADS = [
    "x) or __import__('pathlib').Path('MARK').touch() or (",
    "\nimport pathlib; pathlib.Path('MARK').touch()\n#",
    '"""\n__import__("pathlib").Path("MARK").touch()\n"""',
    "'''\n__import__('pathlib').Path('MARK').touch()\n'''",
    "\r__import__('pathlib').Path('MARK').touch()  #",
    "\u2028__import__('pathlib').Path('MARK').touch()",
    "\\\n__import__('pathlib').Path('MARK').touch()",
    "{__import__('pathlib').Path('MARK').touch()}",
    "'+__import__('pathlib').Path('MARK').touch()+'",
    '"+__import__("pathlib").Path("MARK").touch()+"',
    "\x00__import__('pathlib').Path('MARK').touch()",
    "n_components=(__import__('pathlib').Path('MARK').touch() or 2), whiten",
]
HOSTILE = [f"a{b}b" for b in BREAKERS] + PAYLOADS
#: the top-level statements every exported script may have, and nothing else
ALLOWED = (ast.Expr, ast.Import, ast.ImportFrom, ast.Assign, ast.FunctionDef, ast.ClassDef, ast.For)


def _armed(text: str, mark) -> str:
    return text.replace("MARK", str(mark))


def _write_csv(path, names, n=24):
    rng = np.random.default_rng(0)
    centres = np.array([[1.0, 1.0, 1.0], [6.0, 1.0, 3.0], [1.0, 6.0, 5.0]])
    cls = np.repeat(np.arange(3), n // 3)
    X = centres[cls] + rng.uniform(0, 0.5, size=(n, 3))
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(names)
        for row, c in zip(X, cls):
            w.writerow([*map(repr, row.tolist()), f"k{c}"])
    return path


def _chained_run(s: Session, algorithm: str, chain, **params):
    run = s.create_run(algorithm, params, chain=chain)
    task = s.fit_task(run)
    s.start_run(run.id)
    return s.complete_run(run.id, task())


def _session(folder, h: str, mark):
    """A session whose data file, label column, feature columns and project carry ``h``: a PCA
    behind a chain that names columns. Returns the project path and the run."""
    h = _armed(h, mark)
    folder.mkdir(parents=True, exist_ok=True)
    safe = h.replace("\x00", "").replace("/", "")  # no file name holds them
    text = h.replace("\x00", "")  # a CSV file holding NUL is refused as binary: the tampered project tests hold it
    data = _write_csv(folder / f"{safe}.csv", [text + "1", text + "2", "c", text + "L"])
    import manifold_studio as ms

    parsed = ms.load_data(str(data), label_column=3)  # the names as the reader gives them (CR may become LF)
    first, second = parsed.feature_names[:2]
    s = Session()
    s.load(str(data), label_column=parsed.label_name)
    pca = _chained_run(s, "pca", [("select_columns", {"exclude": [second]}), ("log", {"columns": [first]})],
                       n_components=2)
    pca.meta["names"] = (parsed.label_name, second)
    return save_project(s, folder / f"{safe}.msproj"), pca


def _code(text: str) -> list[str]:
    """The script's code: every line but the SPEC literal and the export time."""
    lines = text.splitlines()
    start, end = lines.index("SPEC = json.loads(("), lines.index("), object_hook=decode_floats)")
    return [line for line in lines[:start] + lines[end + 1:] if not line.startswith("Exported by")]


def _check_shape(text: str, plain: str) -> None:
    tree = ast.parse(text)
    assert all(isinstance(node, ALLOWED) for node in tree.body)
    specs = [n for n in tree.body if isinstance(n, ast.Assign) and getattr(n.targets[0], "id", "") == "SPEC"]
    assert len(specs) == 1 and isinstance(specs[0].value.args[0], ast.Constant)
    assert _code(text) == _code(plain)


#: runs each script given as __main__ (its folder the working folder, its output folder its one
#: argument), one after another in one fresh process, and prints each one's exit code as JSON
_RUNNER = """
import contextlib, io, json, os, runpy, sys
codes = []
for script in sys.argv[1:]:
    os.chdir(os.path.dirname(script))
    sys.argv = [script, os.path.join(os.path.dirname(script), "out_" + os.path.basename(script)[:-3])]
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            runpy.run_path(script, run_name="__main__")
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
        err.write(str(exc.code))
    codes.append([code, err.getvalue()])
print(json.dumps(codes))
"""


def _run_all(scripts):
    """Run the scripts in one fresh process (each as __main__, in turn; the import of the
    library is paid once); returns their (exit code, stderr)."""
    done = subprocess.run([sys.executable, "-c", _RUNNER, *map(str, scripts)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    return [tuple(c) for c in json.loads(done.stdout.splitlines()[-1])]


@pytest.fixture(scope="module")
def plain(tmp_path_factory):
    """The script of the same session with plain names."""
    folder = tmp_path_factory.mktemp("plain")
    proj, _pca = _session(folder, "plain", folder / "MARK")
    return write_script(proj, folder / "analysis.py").read_text()


def test_hostile_names_in_the_data_and_the_project_stay_data(tmp_path, plain):
    to_run = []
    for i, h in enumerate(HOSTILE):
        folder, mark = tmp_path / f"case{i}", tmp_path / f"MARK{i}"
        proj, pca = _session(folder, h, mark)
        script = write_script(proj, folder / "analysis.py")
        text = script.read_text(encoding="utf-8")
        _check_shape(text, plain)
        spec = script_spec(text)
        label, excluded = pca.meta["names"]  # as the reader gave them: exactly those reach the script
        assert spec["datasets"][0]["options"]["label_column"] == label and label.endswith("L")
        assert spec["runs"][0]["chain"][0][1]["exclude"] == [excluded]
        if h in PAYLOADS[:3]:  # a representative subset runs in a fresh process
            to_run.append((script, pca))
    for (script, pca), (code, err) in zip(to_run, _run_all([s for s, _ in to_run])):
        assert code == 0, err
        got = np.loadtxt(script.parent / f"out_{script.stem}" / f"{run_output_name(pca)}.csv", delimiter=",",
                         skiprows=1)
        np.testing.assert_allclose(got, pca.embedding, rtol=0, atol=1e-9)
    assert len(to_run) == 3
    assert not list(tmp_path.glob("MARK*")) and not list(tmp_path.glob("*/MARK*"))


# -- a tampered project ------------------------------------------------------------------------
_ARRAYS: dict = {}


def _tamper(src, dst, edit):
    """A copy of project ``src`` whose JSON document ``edit`` changed (stored uncompressed: fast)."""
    if src not in _ARRAYS:
        with np.load(src, allow_pickle=False) as npz:
            _ARRAYS[src] = {k: npz[k] for k in npz.files}
    arrays = dict(_ARRAYS[src])
    meta = json.loads(str(arrays[META_KEY]))
    edit(meta)
    arrays[META_KEY] = np.array(json.dumps(meta))
    with open(dst, "wb") as f:
        np.savez(f, **arrays)
    return dst


@pytest.fixture(scope="module")
def scored(tmp_path_factory):
    """A project with a chained PCA, an SVM and a saved Test & Score, and its plain script."""
    import manifold_studio as ms
    from manifold_studio.evaluation import compare_learners
    from manifold_studio.project.analysis_records import comparison_record
    from manifold_studio.analysis.chain import chained_estimator

    folder = tmp_path_factory.mktemp("scored")
    data = _write_csv(folder / "points.csv", ["a", "b", "c", "kind"])
    s = Session()
    ds = s.load(str(data), label_column="kind")
    _chained_run(s, "pca", [("select_columns", {"exclude": ["b"]})], n_components=2)
    s.run("svm", C=2.0)
    learner = chained_estimator([("standardize", {})], ms.get_algorithm("perceptron", max_epochs=20), ds)
    doc, arrays = comparison_record(compare_learners([learner], ds.X, ds.labels, cv=3, seed=1, names=["p"]))
    doc["dataset"] = ds.name
    proj = save_project(s, folder / "p.msproj", analyses={"test_score": (doc, arrays)})
    return proj, write_script(proj, folder / "plain.py").read_text()


KEYS = {  # where a tampered project can put a key
    "parameter key": lambda m, h: m["runs"][0]["params"].update({h: 2}),
    "step parameter key": lambda m, h: m["runs"][0]["meta"]["chain"][0][1].update({h: 2}),
    "load option key": lambda m, h: m["datasets"][0]["load_options"].update({h: 2}),
    "learner parameter key": lambda m, h: m["analyses"]["test_score"]["document"]["learners"][0]["params"]
    .update({h: 2}),
}
def _names(m, h):
    m["datasets"][0]["label_name"] = h
    m["runs"][0]["algorithm_name"] = m["runs"][0]["kind"] = h
    m["analyses"]["test_score"]["document"]["learners"][0]["name"] = h


def _source(m, h):
    source = m["datasets"][0]["source"]
    folder, name = source.rsplit("/", 1)
    m["datasets"][0]["source"] = m["datasets"][0]["source_file"]["path"] = f"{folder}/{h}/{name}"


VALUES = {  # and values
    "label_name, algorithm_name, kind and learner name": _names,
    "source path": _source,
    "dataset name": lambda m, h: m["analyses"]["test_score"]["document"].update({"dataset": h}),
}


def test_a_tampered_key_is_refused_naming_it(tmp_path, scored):
    proj, _plain = scored
    for i, h in enumerate(HOSTILE):
        for j, (where, edit) in enumerate(KEYS.items()):
            bad = _tamper(proj, tmp_path / f"k{i}_{j}.msproj", lambda m: edit(m, _armed(h, tmp_path / "MARK")))
            out = tmp_path / f"k{i}_{j}.py"
            with pytest.raises(ManifoldStudioError) as err:
                write_script(bad, out)
            assert f"{_armed(h, tmp_path / 'MARK')!r}" in str(err.value), (where, str(err.value))
            assert "unknown" in str(err.value) and not out.exists()
    assert not (tmp_path / "MARK").exists()


def test_a_tampered_value_stays_data(tmp_path, scored):
    proj, plain = scored
    to_run = {}
    for i, h in enumerate(HOSTILE):
        mark = tmp_path / f"MARK{i}"
        for j, (where, edit) in enumerate(VALUES.items()):
            bad = _tamper(proj, tmp_path / f"v{i}_{j}.msproj", lambda m: edit(m, _armed(h, mark)))
            out = tmp_path / f"v{i}_{j}.py"
            try:
                write_script(bad, out)
            except ManifoldStudioError:  # refused: nothing written
                assert not out.exists()
                continue
            text = out.read_text(encoding="utf-8")
            if where == "dataset name":  # the comparison's data set is not loaded: left out, said in a note
                assert "comparison = test_and_score(" not in text
                assert any("Test & Score" in n for n in script_spec(text)["notes"])
                _check_shape(text, plain.replace("comparison = test_and_score(SPEC['test_score'], data1)\n", ""))
            else:
                _check_shape(text, plain)
            if h == PAYLOADS[0] and where != "dataset name":
                to_run[where] = out
    results = dict(zip(to_run, _run_all(list(to_run.values()))))
    assert set(results) == {"label_name, algorithm_name, kind and learner name", "source path"}
    for where, (code, err) in results.items():
        if where == "source path":  # that file is not there: the script stops, saying so
            assert code == 1 and "is not there" in err
        else:
            assert code == 0, err
    assert not list(tmp_path.glob("MARK*"))


def test_a_nan_parameter_survives_the_script(tmp_path, scored):
    """A NaN (or infinite) value cannot be written in JSON: it is tagged and decoded back."""
    proj, _plain = scored
    bad = _tamper(proj, tmp_path / "nan.msproj",
                  lambda m: m["runs"][1]["params"].update({"C": float("nan"), "tol": float("inf")}))
    text = write_script(bad, tmp_path / "nan.py").read_text()
    params = script_spec(text)["runs"][1]["params"]
    assert np.isnan(params["C"]) and params["tol"] == float("inf")
    assert "NaN" not in text.split("SPEC = ", 1)[1].split("object_hook", 1)[0]  # strict JSON inside


def test_an_algorithm_not_installed_is_left_out_with_a_note(tmp_path, scored):
    """A run (or a Test & Score learner) whose algorithm id is not an installed algorithm, hostile
    or not, is not refitted: the script says so when it runs, and its code has one run less."""
    proj, plain = scored
    mark = tmp_path / "MARK"
    h = _armed(PAYLOADS[1], mark)

    def edit(m):
        m["runs"][1]["algorithm_id"] = h
        m["analyses"]["test_score"]["document"]["learners"][0]["algorithm"] = h

    script = write_script(_tamper(proj, tmp_path / "gone.msproj", edit), tmp_path / "gone.py")
    text = script.read_text()
    spec = script_spec(text)
    assert [r["algorithm"] for r in spec["runs"]] == ["pca"] and spec["test_score"] is None
    notes = [n for n in spec["notes"] if "Unknown algorithm" in n]
    assert [n.split(" cannot")[0] for n in notes] == ["Run #2", "Test & Score"]
    left_out = ("run2 = fit_run(", "comparison = test_and_score(")
    assert all(isinstance(node, ALLOWED) for node in ast.parse(text).body)
    assert _code(text) == [line for line in _code(plain) if not line.startswith(left_out)]
    ((code, err),) = _run_all([script])
    assert code == 0, err
    assert "Note: " in err and "\\n" in err  # the note's newline is shown escaped, not printed
    assert not mark.exists()
