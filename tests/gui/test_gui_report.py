"""The report, script export and "Apply this analysis to another file" in the window."""
import csv
import io
import re

import numpy as np
import pytest
from PIL import Image

from gui_helpers import wait_idle, wait_last_run

from manifold_studio.reproduce.script_spec import script_spec

WINDOW_DIALOGS = False


@pytest.fixture
def win(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    return w


def _run_pca(qtbot, w):
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    wait_idle(qtbot, w)
    qtbot.wait(50)


def _finished(qtbot, job) -> bool:
    assert job is not None
    qtbot.waitUntil(lambda: job.finished, timeout=20_000)
    return job.state == "done"


def test_add_to_report_from_views_and_save_html_and_pdf(qtbot, win, tmp_path):
    _run_pca(qtbot, win)
    actions = win.report_actions
    file_menu = [a.text() for a in win.menus["file"].actions()]
    assert "&Report" in file_menu
    actions._fill_menu()
    entries = [a.text() for a in actions.menu.actions()]
    assert "Add to report: Map" in entries  # one entry per open view
    item = actions.add_view("map", caption="The PCA map")
    assert item.kind == "run" and item.caption == "The PCA map" and "n_components=2" in dict(item.facts)["Parameters"]
    pixels = np.asarray(Image.open(io.BytesIO(item.image)).convert("RGB"))
    assert pixels.shape[:2] == (700, 1000) and (pixels.min(axis=2) < 200).sum() > 1000  # a drawn map
    actions.add_dataset(caption="Iris")
    dialog = actions.show_dialog()
    assert dialog.list.count() == 2
    dialog.list.setCurrentRow(1)
    dialog.move(-1)
    assert [it.caption for it in win.session.report.items] == ["Iris", "The PCA map"]
    assert dialog.list.currentRow() == 0
    assert _finished(qtbot, actions.save_html(tmp_path / "r.html"))
    text = (tmp_path / "r.html").read_text()
    assert text.count('src="data:image/png;base64,') == 1
    pdf = actions.save_pdf(tmp_path / "r.pdf")
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and b"/Image" in data and len(data) > 5_000
    assert len(re.findall(rb"/Type\s*/Page(?![a-z])", data)) == 2  # a page per item: no heading split from its figure
    dialog.list.setCurrentRow(0)
    dialog.remove()
    assert [it.caption for it in win.session.report.items] == ["The PCA map"]


def test_report_bad_input_is_said_and_nothing_is_lost(qtbot, win, tmp_path):
    actions = win.report_actions
    assert actions.save_html(tmp_path / "r.html") is None
    assert "nothing was added" in win.statusBar().currentMessage()
    _run_pca(qtbot, win)
    actions.add_view("map", caption="")
    job = actions.save_html(tmp_path / "no such folder" / "r.html")
    assert not _finished(qtbot, job)
    assert "does not exist" in win.statusBar().currentMessage()
    assert len(win.session.report) == 1 and not (tmp_path / "no such folder").exists()


def test_report_survives_saving_and_reopening_the_project(qtbot, win, tmp_path):
    _run_pca(qtbot, win)
    win.report_actions.add_view("map", caption="kept")
    assert _finished(qtbot, win.project.save_project(tmp_path / "p.msproj"))
    win.session.report.clear()
    assert _finished(qtbot, win.project.open_project(tmp_path / "p.msproj"))
    wait_idle(qtbot, win)
    assert [it.caption for it in win.session.report.items] == ["kept"]
    assert win.session.report.items[0].image.startswith(b"\x89PNG")


def test_script_export_and_apply_to_another_file(qtbot, win, tmp_path):
    assert win.project.export_script(tmp_path / "a.py") is None
    assert "no run has finished" in win.statusBar().currentMessage()
    _run_pca(qtbot, win)
    out = win.project.export_script(tmp_path / "a.py")
    assert script_spec(out.read_text())["datasets"][0]["sample"] == "sample:iris"
    ds = win.session.current_dataset
    new = tmp_path / "new.csv"
    with open(new, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(ds.feature_names[::-1])
        for row in ds.X[:20, ::-1]:
            w.writerow([repr(v) for v in row.tolist()])
    assert _finished(qtbot, win.project.apply_to_file(str(new), str(tmp_path / "res")))
    run = win.session.current_run
    path = tmp_path / "res" / f"run{run.id}_pca.csv"
    assert win.project.last_outputs == [(run.id, path)]
    with open(path) as f:
        rows = list(csv.reader(f))[1:]
    np.testing.assert_allclose(np.array([r[1:] for r in rows], float), run.estimator.extend(ds.X[:20]),
                               rtol=0, atol=1e-12)


def test_roles_and_a_labelled_meta_column_survive_the_project_and_reach_the_script(qtbot, make_window, fresh_host,
                                                                                    tmp_path):
    import subprocess
    import sys

    from manifold_studio.reproduce.script_export import run_output_name

    src = tmp_path / "data" / "penguins.csv"
    src.parent.mkdir()
    src.write_bytes(_shipped("penguins.csv"))
    w = make_window(fresh_host)
    w.load_source(str(src), {"label_column": "species", "roles": {"year": "feature", "bill_length_mm": "meta"}})
    wait_idle(qtbot, w)
    ds = w.session.current_dataset
    w.selection.select(ds.name, np.arange(5))
    assert w.selection_actions.label_selection("checked", "yes")  # a new meta column
    _run_pca(qtbot, w)
    run = w.session.current_run
    roles = dict(ds.table.roles)
    assert roles["checked"] == "meta" and roles["year"] == "feature" and roles["bill_length_mm"] == "meta"
    assert _finished(qtbot, w.project.save_project(tmp_path / "p.msproj"))
    other = make_window(fresh_host)
    assert _finished(qtbot, other.project.open_project(tmp_path / "p.msproj"))
    wait_idle(qtbot, other)
    again = other.session.current_dataset
    assert again.table.roles == roles and again.column_values("checked")[:6].tolist() == ["yes"] * 5 + [None]
    assert again.feature_names == ds.feature_names
    script = other.project.export_script(tmp_path / "analysis.py")
    assert script_spec(script.read_text())["datasets"][0]["path"] == "data/penguins.csv"
    done = subprocess.run([sys.executable, str(script), "out"], cwd=src.parent, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    with open(src.parent / "out" / f"{run_output_name(run)}.csv") as f:
        emb = np.array(list(csv.reader(f))[1:], float)
    np.testing.assert_allclose(emb, run.embedding, rtol=0, atol=1e-9)


def _shipped(name: str) -> bytes:
    from importlib import resources

    return (resources.files("manifold_studio_builtins") / "data" / name).read_bytes()


def test_items_record_the_preparation_chain(qtbot, win):
    win.preparation_panel.set_chain([("standardize", {}), ("select_columns", {"exclude": ["sepal_width"]})])
    item = win.report_actions.add_dataset(caption="prepared")
    assert dict(item.facts)["Preparation"] == "standardize() → select_columns(exclude=['sepal_width'])"
    _run_pca(qtbot, win)
    run = win.session.current_run
    assert run.meta["chain"]  # the run fitted the chain
    item = win.report_actions.add_view("map", caption="map")
    assert dict(item.facts)["Preparation"] == "standardize() → select_columns(exclude=['sepal_width'])"


def test_a_folder_that_cannot_be_written_is_said_for_html_pdf_and_script(qtbot, win, locked):
    _run_pca(qtbot, win)
    win.report_actions.add_view("map", caption="kept")
    job = win.report_actions.save_html(locked / "r.html")
    assert not _finished(qtbot, job)
    assert f"Could not save the report: Cannot write to {locked}: permission denied." in win.statusBar().currentMessage()
    assert win.report_actions.save_pdf(locked / "r.pdf") is None
    assert (f"Could not save the report as PDF: Cannot write to {locked}: permission denied. The report is kept."
            in win.statusBar().currentMessage())
    assert win.project.export_script(locked / "a.py") is None
    assert f"Cannot write to {locked}: permission denied." in win.statusBar().currentMessage()
    assert [p.name for p in locked.iterdir()] == ["old.png"] and len(win.session.report) == 1


def test_add_to_report_before_anything_is_loaded_says_what_to_do(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    assert w.report_actions.add_view("map", caption="x") is None
    assert "load data or run an algorithm first" in w.statusBar().currentMessage()
    assert w.report_actions.add_dataset(caption="x") is None
    assert "No data set is loaded" in w.statusBar().currentMessage() and len(w.session.report) == 0
