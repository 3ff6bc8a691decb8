"""Layer rules of DESIGN.md, checked on the source tree.

1. Nothing outside manifold_studio/gui/ imports Qt or pyqtgraph.
2. manifold_studio never imports the built-in plugins by name (they arrive by entry point).
3. No import cycle between modules, counting imports inside functions.
4. The layer contract of pyproject.toml ([tool.importlinter]) holds, and no two sub-packages
   (or loose modules) import each other, counting imports inside functions and modules started
   by name (importlib.import_module).
"""
import ast
import functools
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
QT = {"PySide6", "PyQt5", "PyQt6", "pyqtgraph", "qtpy", "superqt", "shiboken6"}


def _imports(path: Path):
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in {
                "import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant):
            yield node.lineno, str(node.args[0].value)


def _sources(*parts):
    for part in parts:
        yield from sorted((ROOT / part).rglob("*.py"))


def test_no_qt_outside_gui():
    offenders = []
    for path in _sources("manifold_studio", "plugins"):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("manifold_studio", "gui"):
            continue
        for lineno, name in _imports(path):
            if name.split(".")[0] in QT:
                offenders.append(f"{rel}:{lineno} imports {name}")
    assert not offenders, "Qt imported outside manifold_studio/gui:\n" + "\n".join(offenders)


def test_core_never_imports_builtin_plugins_by_name():
    offenders = []
    for path in _sources("manifold_studio"):
        for lineno, name in _imports(path):
            if name.split(".")[0] == "manifold_studio_builtins":
                offenders.append(f"{path.relative_to(ROOT)}:{lineno} imports {name}")
        text = path.read_text(encoding="utf-8")
        if "manifold_studio_builtins" in text and "import" in text and path.name != "__init__.py":
            for i, line in enumerate(text.splitlines(), 1):
                if "manifold_studio_builtins" in line and "import" in line:
                    offenders.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()}")
    assert not offenders, "\n".join(offenders)


def test_headless_import_of_everything_but_gui():
    """Importing the package, the CLI module and every built-in plugin pulls in no Qt."""
    modules = ["manifold_studio"]
    for path in _sources("manifold_studio", "plugins"):
        rel = path.relative_to(ROOT)
        if rel.parts[:2] == ("manifold_studio", "gui") or path.name == "__main__.py":
            continue
        parts = list(rel.with_suffix("").parts)
        if parts[0] == "plugins":
            parts = parts[1:]
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules.append(".".join(parts))
    code = ("import importlib, sys\n"
            f"for m in {modules!r}: importlib.import_module(m)\n"
            "import manifold_studio as ms; ms.list_algorithms()\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(QT)!r})\n"
            "print(bad); sys.exit(1 if bad else 0)\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr[-2000:]


# -- 3. no import cycle, counting imports inside functions ------------------------------------

def _module_names() -> dict[str, Path]:
    mods = {}
    for path in _sources("manifold_studio"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


@functools.lru_cache(maxsize=1)
def _import_graph():
    """{module: {imported project modules}} with every import, at module level or inside a
    function, plus the list of project imports written inside functions (parsed once per run:
    two tests read it, neither changes it)."""
    mods = _module_names()

    def resolve(name):
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges, inside = {}, []
    for mod, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        in_function = {id(n) for f in ast.walk(tree) if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                       for n in ast.walk(f)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in mods] + ([node.module] if any(t not in mods for t in subs) else [])
            else:
                continue
            for target in targets:
                dep = resolve(target)
                if dep and dep != mod:
                    edges.setdefault(mod, set()).add(dep)
                    if id(node) in in_function:
                        inside.append((mod, node.lineno, dep))
    return mods, edges, inside


def _cycles(nodes, edges) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on_stack, stack, out, counter = {}, {}, set(), [], [], [0]
    for root in nodes:
        if root in index:
            continue
        work = [(root, iter(sorted(edges.get(root, ()))))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on_stack.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
                    break
                if w in on_stack:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on_stack.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def test_no_import_cycle():
    mods, edges, _ = _import_graph()
    cycles = _cycles(sorted(mods), edges)
    assert not cycles, "import cycles:\n" + "\n".join(" <-> ".join(c) for c in cycles)


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles(["a", "b", "c"], {"a": {"b"}, "b": {"c"}, "c": {"a"}}) == [["a", "b", "c"]]
    assert _cycles(["a", "b"], {"a": {"b"}}) == []


def test_project_imports_inside_functions_only_defer_qt():
    """An import of a project module inside a function is allowed only to defer Qt (the
    command line starts the window on demand); everything else is imported at the top."""
    _, _, inside = _import_graph()
    offenders = [f"{mod}:{line} imports {dep}" for mod, line, dep in inside
                 if not (dep.startswith("manifold_studio.gui") and not mod.startswith("manifold_studio.gui"))]
    assert not offenders, "\n".join(offenders)


def test_at_most_ten_loose_modules():
    loose = sorted(p.name for p in (ROOT / "manifold_studio").glob("*.py"))
    assert len(loose) <= 10, loose


def test_no_module_over_500_lines():
    long = [f"{p.relative_to(ROOT)}: {n}" for p in _sources("manifold_studio", "plugins")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > 500]
    assert not long, "\n".join(long)


def test_readme_layout_table_matches_the_tree():
    """Every package of manifold_studio is in the README's layout table, and every path the
    table names exists."""
    import re

    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("| path |", text.index("## Layout"))
    end = text.find("\n\n", start)
    table = text[start:end if end >= 0 else len(text)]
    named = set()
    for row in table.splitlines()[2:]:  # after the header and the |---| line
        cells = re.findall(r"`([^`]+)`", row.split("|")[1])
        base = cells[0].rsplit("/", 1)[0] if cells and "/" in cells[0].rstrip("/") else ""
        for i, cell in enumerate(cells):
            path = cell if i == 0 or "/" in cell else f"{base}/{cell}"
            assert (ROOT / path).exists(), f"the README's layout table names {path}, which does not exist"
            named.add(path.rstrip("/"))
    packages = {str(p.parent.relative_to(ROOT)) for p in (ROOT / "manifold_studio").glob("*/__init__.py")}
    assert packages <= named, f"packages missing from the README's layout table: {sorted(packages - named)}"


# -- 4. sub-packages form layers: the import-linter contract and no mutual imports -------------

def test_layer_contract_of_pyproject_holds():
    """import-linter checks the contracts of pyproject.toml (layers of the sub-packages, built-in
    plugins on the public surface, Qt only in gui) on the source tree."""
    try:
        import importlinter  # noqa: F401
    except ImportError:
        pytest.fail("import-linter is in the [test] extra: pip install -e '.[test]'")
    code = ("import sys\nfrom importlinter.cli import lint_imports\n"
            "sys.exit(lint_imports(config_filename='pyproject.toml', no_cache=True, no_logo=True))\n")
    res = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stdout[-4000:] + res.stderr[-2000:]
    assert "0 broken" in res.stdout and "4 kept" in res.stdout, res.stdout


def _unit_of(module: str) -> str:
    """The sub-package or loose module of manifold_studio a module belongs to ("manifold_studio"
    for the package's own __init__, the public facade)."""
    parts = module.split(".")
    if parts[0] != "manifold_studio":
        return parts[0]
    return ".".join(parts[:2])


def _unit_edges(sources) -> dict[tuple[str, str], list[str]]:
    """{(unit, imported unit): ["path:line imports name", ...]} over every import statement
    (at module level or inside a function) and every ``import_module("...")`` by name."""
    mods = set(_module_names())
    edges: dict[tuple[str, str], list[str]] = {}
    for path, module in sources:
        src = _unit_of(module)
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                subs = [f"{node.module}.{a.name}" for a in node.names]
                targets = [t for t in subs if t in mods] + ([node.module] if any(t not in mods for t in subs) else [])
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                  in {"import_module", "__import__"} and node.args and isinstance(node.args[0], ast.Constant)
                  and isinstance(node.args[0].value, str)):
                targets = [node.args[0].value]
            else:
                continue
            for target in targets:
                if target.split(".")[0] not in {"manifold_studio", "manifold_studio_builtins"}:
                    continue
                dst = _unit_of(target)
                if dst != src:
                    edges.setdefault((src, dst), []).append(f"{path.relative_to(ROOT)}:{node.lineno} imports {target}")
    return edges


def _mutual(edges) -> list[str]:
    out = []
    for (a, b), where in sorted(edges.items()):
        if a < b and (b, a) in edges:
            out.append(f"{a} <-> {b}:\n    " + "\n    ".join(where + edges[(b, a)]))
    return out


def _all_sources():
    out = [(path, mod) for mod, path in _module_names().items()]
    for path in _sources("plugins"):
        parts = list(path.relative_to(ROOT / "plugins").with_suffix("").parts)
        out.append((path, ".".join(parts[:-1] if parts[-1] == "__init__" else parts)))
    return out


def test_no_two_sub_packages_import_each_other():
    """Qt-free and without import-linter: between the sub-packages and loose modules of
    manifold_studio (and the built-in plugins), imports point one way only."""
    pairs = _mutual(_unit_edges(_all_sources()))
    assert not pairs, f"{len(pairs)} pairs of sub-packages import each other:\n" + "\n".join(pairs)


def test_the_mutual_finder_finds_a_pair_inside_a_function(tmp_path):
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("from manifold_studio.session.model import Session\n")
    b.write_text("def f():\n    import importlib\n    importlib.import_module('manifold_studio.files.model_file')\n")
    global ROOT
    old, ROOT = ROOT, tmp_path
    try:
        edges = _unit_edges([(a, "manifold_studio.files.x"), (b, "manifold_studio.session.y")])
    finally:
        ROOT = old
    assert _mutual(edges) and "manifold_studio.files <-> manifold_studio.session" in _mutual(edges)[0]
