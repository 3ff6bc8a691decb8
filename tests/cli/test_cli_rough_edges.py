"""What new users tripped over on the command line (issue 23)."""
import csv

import numpy as np

from manifold_studio.cli.main import main

PREFIX = "manifold-studio: error: "


def run(capsys, *argv):
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def labelled_csv(path, n=30):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(n, 3))
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["x", "y", "z", "kind"])
        for row in X:
            w.writerow([*row, "a" if row[0] > 0 else "b"])
    return path


def header(path):
    with open(path, newline="") as fh:
        return next(csv.reader(fh))


def test_spectral_clustering_writes_its_cluster_labels(tmp_path, capsys):
    rc, out, err = run(capsys, "run", "spectral_clustering", "--data", "sample:iris", "--param", "n_clusters=3",
                       "--out", tmp_path / "sc.csv")
    assert rc == 0, err
    assert header(tmp_path / "sc.csv") == ["row_id", "cluster", "species"] and "150 cluster labels" in out
    with open(tmp_path / "sc.csv", newline="") as fh:
        labels = {row["cluster"] for row in csv.DictReader(fh)}
    assert labels == {"0", "1", "2"}


def test_apply_keeps_the_training_label_column_as_run_extend_does(tmp_path, capsys):
    data = labelled_csv(tmp_path / "lab.csv")
    rc, _, err = run(capsys, "run", "pca", "--data", data, "--label-column", "kind", "--extend", data,
                     "--extend-out", tmp_path / "ext.csv", "--out", tmp_path / "o.csv", "--save-model", tmp_path / "m.npz")
    assert rc == 0, err
    rc, _, err = run(capsys, "apply", "--model", tmp_path / "m.npz", "--data", data, "--out", tmp_path / "ap.csv")
    assert rc == 0, err
    assert header(tmp_path / "ap.csv") == header(tmp_path / "ext.csv") == ["row_id", "pca_1", "pca_2", "kind"]
    assert (tmp_path / "ap.csv").read_text() == (tmp_path / "ext.csv").read_text()


def test_strict_refuses_what_the_loader_left_out(tmp_path, capsys):
    data = labelled_csv(tmp_path / "lab.csv")
    rc, _, err = run(capsys, "run", "pca", "--data", data, "--out", tmp_path / "o.csv")
    assert rc == 0 and "note: column 'kind' is not numeric" in err
    rc, _, err = run(capsys, "run", "pca", "--data", data, "--out", tmp_path / "s.csv", "--strict")
    assert rc == 2 and err.startswith(PREFIX + "lab.csv: column 'kind' is not numeric") and "--strict" in err
    assert err.count("\n") == 1 and not (tmp_path / "s.csv").exists()


def test_list_keeps_its_columns_and_plain_words(capsys):
    import manifold_studio as ms

    rc, out, _ = run(capsys, "list")
    assert rc == 0 and "at least 0 items" not in out
    lines = out.splitlines()
    for algo in ms.list_algorithms():
        cls = ms.algorithm_class(algo)
        start = next(i for i, line in enumerate(lines) if line.startswith(f"    {algo} — "))
        rows = lines[start + 1:start + 1 + len(cls.params)]
        columns = set()
        for p, row in zip(cls.params, rows):
            assert row.lstrip().startswith(p.name + " ") and row.endswith(p.describe()), row
            columns.add(len(row) - len(p.describe()))  # where the allowed values start
        assert len(columns) <= 1, f"{algo}: the allowed values start in columns {sorted(columns)}"
    assert "early_stopping       = False" in out  # the autoencoder's, like the MLP's


def test_gui_help_names_the_real_command(capsys):
    rc = main(["gui", "--help"])
    out, _ = capsys.readouterr()
    assert rc == 0 and out.startswith("usage: manifold-studio gui") and "manifold-studio-gui" not in out


def test_the_self_test_cuts_a_long_warning_at_a_word():
    import warnings

    import manifold_studio as ms
    from manifold_studio.algorithms import EmbeddingAlgorithm
    from manifold_studio.cli import self_test

    class Chatty(EmbeddingAlgorithm):
        id = "chatty_test"
        name = "Chatty"
        help = "Warns at length (test algorithm)."
        params = ()

        def _fit(self, X, y, progress):
            warnings.warn("the quick brown fox jumps over the lazy dog " * 8, UserWarning)
            self.embedding_ = X[:, :2]

        def _extend(self, X):
            return X[:, :2]

    ds = ms.load_data("sample:iris")
    line = self_test.fit_and_extend(Chatty, ds.X, None, ds.X[:5], None)
    warning = line.split("warning: ", 1)[1]
    assert warning.endswith(" …") and warning[:-2].split()[-1] in "the quick brown fox jumps over lazy dog".split()


def test_plot_subtitle_is_readable_and_names_only_the_changed_parameters(tmp_path):
    from manifold_studio.render.plot import params_subtitle
    assert params_subtitle({"hidden_layer_sizes": (10, 5), "alpha": 1e-3, "early_stopping": True,
                            "random_state": None, "kernel": "rbf"},
                           {"hidden_layer_sizes": (100,), "alpha": 1e-4, "early_stopping": False,
                            "random_state": None, "kernel": "rbf"}) == \
        "hidden_layer_sizes 10, 5 · alpha 0.001 · early_stopping yes"
    assert params_subtitle({"n_components": 2}, {"n_components": 2}) == "default parameters"
    svg = tmp_path / "map.svg"
    from manifold_studio.cli.main import main
    assert main(["run", "kmeans", "--data", "sample:iris", "--param", "n_clusters=4",
                 "--plot", str(svg), "--out", str(tmp_path / "out.csv")]) == 0
    text = svg.read_text()
    assert "n_clusters 4" in text and "init k-means++" not in text and "'" not in text.split("<desc>")[1].split("</desc>")[0]


def test_plot_subtitle_with_a_preparation_chain_names_the_algorithms_changed_parameters(tmp_path):
    """With --prep the model is a pipeline: its deep parameters ('steps standardize,
    Standardize(), mlp, MLP()', every step's defaults) were the subtitle; now only the
    algorithm's own changed parameters are (the title names the chain)."""
    from manifold_studio.cli.main import main
    svg = tmp_path / "map.svg"
    assert main(["run", "kmeans", "--data", "sample:iris", "--prep", "standardize", "--param", "n_clusters=4",
                 "--plot", str(svg), "--out", str(tmp_path / "out.csv"), "-q"]) == 0
    text = svg.read_text()
    desc = text.split("<desc>")[1].split("</desc>")[0]
    assert "n_clusters 4" in desc and "prepared data (standardize" in text
    assert "steps" not in desc and "Standardize()" not in desc and "with_mean" not in desc and "__" not in desc
