"""Export without Qt: maps drawn to PNG (Pillow) and SVG (text), a data set with every result
column to CSV, selected rows as tab-separated text, ``run ... --plot``, and the bad-input cases
(unknown extension, unwritable folder, bad image size)."""
import csv
import xml.etree.ElementTree as ET

import numpy as np
import pytest
from PIL import Image

import manifold_studio as ms
from manifold_studio.render import plot as plot_render
from manifold_studio.cli.main import main as cli_main
from manifold_studio.tables.dataset_columns import dataset_columns
from manifold_studio.fileio.export_paths import MAX_SIDE, MIN_SIDE, ExportError, check_image_size, parse_size
from manifold_studio.render.colors import CATEGORICAL
from manifold_studio.render.plot import MapPlot, render_png, render_svg, save_map
from manifold_studio.session.model import Session
from manifold_studio.tables.export import export_dataset_csv, rows_as_tsv
from fakes import RecordingProgress  # noqa: E402

SVG = "{http://www.w3.org/2000/svg}"


def _plot(n=300, k=3, seed=0):
    rng = np.random.default_rng(seed)
    labels = np.array(["setosa", "versicolor", "virginica", "x", "y"][:k])[np.arange(n) % k]
    return MapPlot(rng.normal(size=(n, 2)), labels, "pca on test", "n_components=2", ("c1", "c2"), "species")


# -- PNG and SVG ------------------------------------------------------------------------------------
def test_png_has_the_requested_size_and_the_class_colours_where_points_are(tmp_path):
    plot = _plot()
    path = tmp_path / "map.png"
    save_map(path, plot, 640, 480)
    img = Image.open(path)
    img.verify()
    img = Image.open(path).convert("RGB")
    assert img.size == (640, 480)
    px = np.asarray(img).reshape(-1, 3)
    colours = {tuple(c) for c in np.unique(px, axis=0)}
    for c in CATEGORICAL[:3]:  # each class's colour is present
        assert tuple(int(v) for v in c) in colours
    assert len(colours) >= 5 and (px != 255).any(axis=1).mean() > 0.01
    # the pixel under a drawn point has its class's colour (a point not hidden by a later one)
    lay = plot_render.layout(plot, 640, 480)
    arr = np.asarray(img)
    last = len(lay.px) - 1
    assert tuple(arr[int(round(lay.py[last])), int(round(lay.px[last]))]) == tuple(int(v) for v in lay.colors.colors[lay.codes[last]])


def test_png_continuous_colours_and_a_million_points_fast(tmp_path):
    import time

    rng = np.random.default_rng(1)
    plot = MapPlot(rng.normal(size=(1_000_000, 2)), rng.normal(size=1_000_000), "big", "", ("a", "b"), "value")
    start = time.perf_counter()
    img = render_png(plot, 800, 600)
    assert time.perf_counter() - start < 10
    assert img.size == (800, 600) and len(np.unique(np.asarray(img).reshape(-1, 3), axis=0)) > 30


def test_svg_has_one_circle_per_finite_point_and_a_legend():
    plot = _plot(n=200)
    plot.xy[5] = np.nan  # not drawn
    root = ET.fromstring(render_svg(plot, 700, 500).encode("utf-8"))
    assert root.tag == SVG + "svg" and root.get("width") == "700" and root.get("height") == "500"
    points = root.find(f".//{SVG}g[@id='points']")
    assert len(points.findall(f".//{SVG}circle")) == 199
    # one group per class, coloured like the PNG, labelled
    groups = points.findall(f"{SVG}g")
    assert [g.get("data-label") for g in groups] == ["setosa", "versicolor", "virginica"]
    assert groups[0].get("fill") == "#%02x%02x%02x" % tuple(CATEGORICAL[0])
    legend = root.find(f".//{SVG}g[@id='legend']")
    texts = [t.text for t in legend.iter(SVG + "text")]
    assert texts == ["species", "setosa", "versicolor", "virginica"]
    assert root.find(f"{SVG}title").text == "pca on test"


def test_svg_above_the_circle_limit_embeds_the_points_as_png(monkeypatch):
    monkeypatch.setattr(plot_render, "SVG_CIRCLE_LIMIT", 100)
    root = ET.fromstring(render_svg(_plot(n=150), 400, 300).encode("utf-8"))
    points = root.find(f".//{SVG}g[@id='points']")
    assert not points.findall(f".//{SVG}circle")
    href = points.find(f"{SVG}image").get("{http://www.w3.org/1999/xlink}href")
    assert href.startswith("data:image/png;base64,")
    assert "embedded PNG" in root.find(f"{SVG}desc").text


def test_legend_stops_at_twenty_classes():
    plot = MapPlot(np.random.default_rng(2).normal(size=(300, 2)), np.arange(300) % 30, "t", "", ("", ""), "k")
    root = ET.fromstring(render_svg(plot, 800, 600).encode("utf-8"))
    texts = [t.text for t in root.find(f".//{SVG}g[@id='legend']").iter(SVG + "text")]
    assert len(texts) == 1 + 20 + 1 and texts[-1] == "… 10 more"


# -- bad input --------------------------------------------------------------------------------------
def test_unknown_extension_lists_the_allowed_ones(tmp_path):
    with pytest.raises(ExportError, match=r"unknown file extension \('\.gif'\); allowed: \.png, \.svg"):
        save_map(tmp_path / "map.gif", _plot(), 400, 300)
    with pytest.raises(ExportError, match=r"allowed: \.csv"):
        export_dataset_csv(*_session(), tmp_path / "t.xlsx")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("size", [(0, 300), (-5, 300), (400, 100_000), (2.5, 300)])
def test_bad_sizes_give_the_allowed_range(tmp_path, size):
    with pytest.raises(ExportError, match=f"from {MIN_SIDE} to {MAX_SIDE:,} px"):
        save_map(tmp_path / "m.png", _plot(), *size)
    assert not (tmp_path / "m.png").exists()


def test_size_text():
    assert parse_size("1200x900") == (1200, 900) and parse_size("640×480") == (640, 480)
    for text in ("big", "0x10", "10x", "-800x600"):
        with pytest.raises(ExportError, match="px"):
            parse_size(text)
    assert check_image_size(MIN_SIDE, MAX_SIDE) == (MIN_SIDE, MAX_SIDE)


def test_unwritable_folder_is_named_and_nothing_changes(locked):
    for path, write in ((locked / "old.png", lambda p: save_map(p, _plot(), 400, 300)),
                        (locked / "t.csv", lambda p: export_dataset_csv(*_session(), p))):
        with pytest.raises(ExportError, match=f"Cannot write to {locked}: permission denied"):
            write(path)
    assert sorted(p.name for p in locked.iterdir()) == ["old.png"]
    assert (locked / "old.png").read_bytes() == b"old"


# -- CSV and TSV ------------------------------------------------------------------------------------
def _session():
    session = Session()
    ds = ms.load_data("sample:blobs")
    name = session.add_dataset(ds)
    session.run("pca", name, n_components=2)
    # a run on some rows only: the other rows have no value (empty cells)
    rows = np.arange(0, ds.n_samples, 3)
    session.run("kmeans", name, rows=rows, n_clusters=3, random_state=0)
    return session, name


def test_csv_round_trips_every_column(tmp_path):
    session, name = _session()
    cols = dataset_columns(session, name)
    path = tmp_path / "blobs.csv"
    n_rows, n_cols = export_dataset_csv(session, name, path)
    with open(path, newline="", encoding="utf-8") as fh:
        table = list(csv.reader(fh))
    # the row id first, so exported rows line up with the input file
    assert table[0] == ["row_id"] + [c.name for c in cols] and n_cols == len(cols) + 1
    assert [int(r[0]) for r in table[1:]] == session.dataset(name).row_ids.tolist()
    assert len(table) - 1 == n_rows == session.dataset(name).n_samples
    assert any(c.name.endswith("kmeans cluster") for c in cols) and any(c.name.endswith("pca 2") for c in cols)
    table = [row[1:] for row in table]
    for j, col in enumerate(cols):
        cells = [row[j] for row in table[1:]]
        if col.numeric:
            read = np.array([float(c) if c else np.nan for c in cells])
            np.testing.assert_array_equal(read, col.values.astype(float))  # exact: full precision, NaN = ""
        else:
            assert cells == [str(v) for v in col.values]
    km = next(j for j, c in enumerate(cols) if c.name.endswith("kmeans cluster"))
    assert table[1][km] != "" and table[2][km] == ""  # row 0 was fitted, row 1 was not


def test_csv_write_reports_progress_and_cancel_keeps_the_old_file(tmp_path):
    from manifold_studio.errors import FitCancelled
    from manifold_studio.tables.export import write_table_csv

    path = tmp_path / "t.csv"
    path.write_text("old")
    stop = RecordingProgress(cancel_above=0.4)
    col = np.arange(1000, dtype=float)
    with pytest.raises(FitCancelled):
        write_table_csv(path, ["a"], [col], progress=stop, chunk_rows=100)
    assert path.read_text() == "old" and stop.fractions[:2] == [0.0, 0.1]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t.csv"]  # no temporary file left


def test_selected_rows_as_tab_separated_text():
    header = ["x", "label", "#1 pca 1"]
    cols = [np.array([1.5, 2.0, 3.25]), np.array(["a", "b\tc", "d"], dtype=object), np.array([0.1, np.nan, 7.0])]
    assert rows_as_tsv(header, cols, [1, 2]) == "x\tlabel\t#1 pca 1\n2.0\tb c\t\n3.25\td\t7.0\n"


# -- the command line -------------------------------------------------------------------------------
@pytest.fixture
def iris_csv(tmp_path):
    ds = ms.load_data("sample:iris")
    path = tmp_path / "iris.csv"
    with open(path, "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(list(ds.feature_names) + ["species"])
        for x, y in zip(ds.X.tolist(), ds.labels.tolist()):
            w.writerow(x + [y])
    return path


def test_cli_run_plot_png_and_svg(tmp_path, iris_csv, capsys):
    png = tmp_path / "x.png"
    assert cli_main(["run", "pca", "--data", str(iris_csv), "--label-column", "species", "--out",
                     str(tmp_path / "o.csv"), "--plot", str(png)]) == 0
    img = Image.open(png).convert("RGB")
    assert img.size == plot_render.DEFAULT_SIZE
    colours = {tuple(c) for c in np.unique(np.asarray(img).reshape(-1, 3), axis=0)}
    assert all(tuple(int(v) for v in c) in colours for c in CATEGORICAL[:3])  # three species
    assert f"to {png}" in capsys.readouterr().out
    svg = tmp_path / "k.svg"
    assert cli_main(["run", "kmeans", "--data", "sample:iris", "--param", "n_clusters=4", "--out",
                     str(tmp_path / "k.csv"), "--plot", str(svg), "--plot-size", "600x450", "-q"]) == 0
    root = ET.parse(svg).getroot()
    assert (root.get("width"), root.get("height")) == ("600", "450")
    groups = root.find(f".//{SVG}g[@id='points']").findall(f"{SVG}g")
    assert len(groups) == 4 and sum(len(g.findall(f"{SVG}circle")) for g in groups) == 150
    assert "kmeans on" in root.find(f"{SVG}title").text


@pytest.mark.parametrize("extra, message", [
    (["--plot", "{tmp}/x.gif"], "allowed: .png, .svg"),
    (["--plot", "{tmp}/x.png", "--plot-size", "0x600"], "from 32 to 8,000 px"),
    (["--plot", "{tmp}/x.png", "--plot-size", "huge"], "WIDTHxHEIGHT"),
    (["--plot-size", "800x600"], "--plot-size needs --plot"),
    (["--plot", "{tmp}/nowhere/x.png"], "the folder does not exist"),
])
def test_cli_bad_plot_arguments_exit_2_with_one_line(tmp_path, capsys, extra, message):
    out = tmp_path / "o.csv"
    args = ["run", "pca", "--data", "sample:iris", "--out", str(out)] + [a.format(tmp=tmp_path) for a in extra]
    assert cli_main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("manifold-studio: error: ") and message in err[0]
    assert not out.exists()  # refused before anything was computed or written


def test_cli_plot_to_unwritable_folder(tmp_path, locked, capsys):
    assert cli_main(["run", "pca", "--data", "sample:iris", "--out", str(tmp_path / "o.csv"),
                     "--plot", str(locked / "x.png")]) == 2
    assert f"Cannot write to {locked}: permission denied" in capsys.readouterr().err
