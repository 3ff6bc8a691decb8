"""Start-up stays light (issue 32, item 7): the modules the command line and the window import
before their first output, counted in fresh processes (counts, not wall time; the times are in
benchmarks/bench_startup.py)."""
from __future__ import annotations

import json
import subprocess
import sys

#: imported only by the work that needs them (a fit, a statistic, a table file, the window)
HEAVY = ["scipy.stats", "scipy.signal", "scipy.optimize", "scipy.spatial", "scipy.cluster", "pandas",
         "numba", "PySide6", "pyqtgraph", "pyarrow"]


def _loaded(code: str, names: list[str], tmp_path) -> list[str]:
    """The ``names`` present in ``sys.modules`` after running ``code`` in a fresh Python."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps([m for m in {names!r} if m in sys.modules]))"
    proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120,
                          cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_importing_the_command_line_imports_no_heavy_module(tmp_path):
    own = ["manifold_studio.cli.commands", "manifold_studio.evaluation", "manifold_studio.cli.self_test",
           "manifold_studio.session.model"]
    assert _loaded("import manifold_studio.cli.main", HEAVY + own, tmp_path) == []


def test_list_imports_no_heavy_module(tmp_path):
    code = ("import contextlib, io\nfrom manifold_studio.cli.main import main\n"
            "with contextlib.redirect_stdout(io.StringIO()) as out: rc = main(['list'])\n"
            "assert rc == 0 and 'pca' in out.getvalue() and 'kmeans' in out.getvalue(), rc")
    assert _loaded(code, HEAVY + ["manifold_studio.cli.commands"], tmp_path) == []


def test_the_window_module_imports_no_statistics_or_compiler(tmp_path):
    """The main window's module (Qt and pyqtgraph, of course) leaves scipy's statistics, signal
    processing and optimisation, pandas and numba to the views and methods that use them."""
    code = "import manifold_studio.gui.main_window"
    assert _loaded(code, ["scipy.stats", "scipy.signal", "scipy.optimize", "pandas", "numba"], tmp_path) == []


def test_save_and_load_model_at_the_top_level_are_lazy(tmp_path):
    code = ("import sys, manifold_studio as ms\n"
            "assert 'manifold_studio.files.model_file' not in sys.modules\n"
            "from manifold_studio.files import model_file\n"
            "assert ms.save_model is model_file.save_model and ms.load_model is model_file.load_model\n"
            "from manifold_studio import save_model, load_model\n"
            "assert 'save_model' in dir(ms) and 'save_model' in ms.__all__\n"
            "try:\n    ms.no_such_name\nexcept AttributeError as e:\n    assert 'no_such_name' in str(e)\n"
            "else:\n    raise SystemExit('no AttributeError')")
    assert _loaded(code, [], tmp_path) == []
