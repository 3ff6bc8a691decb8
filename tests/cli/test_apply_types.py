"""apply with a model fitted without a chain (issue 29): a column that was numeric at fit time
and holds text in the new file is refused naming the column, the line and the cell; never
recoded into category codes, nothing written."""
import numpy as np
from manifold_studio.cli.main import main
def test_apply_of_a_bare_model_refuses_text_in_a_numeric_column(tmp_path, capsys):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(40, 3)).round(3)
    train = tmp_path / "train.csv"
    train.write_text("a,b,c\n" + "\n".join(",".join(map(str, r)) for r in X) + "\n")
    model = tmp_path / "m.msmodel"
    assert main(["run", "pca", "--data", str(train), "--out", str(tmp_path / "r.csv"), "--save-model", str(model), "-q"]) == 0
    rows = [",".join(map(str, r)) for r in X]
    for i in (3, 7, 9, 12, 15, 20, 22, 30):
        parts = rows[i].split(","); parts[1] = "n/a-text" if i % 2 else "bad"; rows[i] = ",".join(parts)
    new = tmp_path / "new.csv"
    new.write_text("a,b,c\n" + "\n".join(rows) + "\n")
    out = tmp_path / "o.csv"
    code = main(["apply", "--model", str(model), "--data", str(new), "--out", str(out), "--in-process"])
    err = capsys.readouterr().err
    assert code != 0 and "Column 'b' was numeric when the model was fitted" in err and "line" in err
    assert not out.exists()
