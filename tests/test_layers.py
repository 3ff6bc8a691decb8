"""Layer rules of DESIGN.md, checked on the source tree.

1. Nothing outside manifold_studio/gui/ imports Qt or pyqtgraph.
2. manifold_studio never imports the built-in plugins by name (they arrive by entry point).
"""
import ast
import subprocess
import sys
from pathlib import Path

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
