"""Small helpers shared by the command-line tests."""
from __future__ import annotations

from manifold_studio.cli.main import main


def save_pca_model(tmp_path, data, model, *prep: str) -> None:
    """``manifold-studio run pca`` on ``data`` with the preparation ``prep`` (e.g. "impute",
    "standardize"), the map written to tmp_path/r.csv and the model saved to ``model``."""
    args = [a for step in prep for a in ("--prep", step)]
    assert main(["run", "pca", "--data", str(data), *args, "--out", str(tmp_path / "r.csv"),
                 "--save-model", str(model), "-q"]) == 0
