"""The report model, its project round trip and its self-contained HTML (checked in Chromium)."""
from __future__ import annotations

import base64
import io
import re
import shutil
import subprocess

import numpy as np
import pytest
from PIL import Image

from manifold_studio.analysis.report import Report, ReportError, data_item, run_item, view_item
from manifold_studio.analysis.report_html import report_html, save_report_html
from manifold_studio.project.project_file import load_project, save_project
from manifold_studio.session.model import Session

COLOURS = [(220, 30, 30), (30, 60, 220), (20, 170, 60)]
FIG = (400, 250)


def _png(colour, size=FIG) -> bytes:
    img = Image.new("RGB", size, colour)
    buf = io.BytesIO()
    img.save(buf, "PNG")
    return buf.getvalue()


@pytest.fixture
def session():
    s = Session()
    s.load("sample:iris")
    s.run("pca", n_components=2)
    s.run("kmeans", n_clusters=3, random_state=0)
    return s


def _fill(s: Session) -> Report:
    r = s.report
    r.add(data_item(s.current_dataset, caption="Fisher's <iris> & friends", image=_png(COLOURS[0]),
                    preparation=[("standardize", {})]))
    r.add(run_item(s.runs[1], caption="The PCA map", image=_png(COLOURS[1]), view="Map"))
    r.add(run_item(s.runs[2], caption="Clusters", image=_png(COLOURS[2])))
    return r


def test_items_record_data_and_runs_in_order_and_can_be_reordered(session):
    r = _fill(session)
    ds_facts = dict(r.items[0].facts)
    assert ds_facts["Shape"] == "150 rows × 4 feature columns"
    assert ds_facts["Preparation"] == "standardize()"
    run_facts = dict(r.items[1].facts)
    assert run_facts["Method"].startswith("PCA") or "pca" in run_facts["Method"].lower()
    assert "n_components=2" in run_facts["Parameters"]
    assert run_facts["Fit time"].endswith(" s")
    r.move(2, 0)
    assert [it.caption for it in r.items] == ["Clusters", "Fisher's <iris> & friends", "The PCA map"]
    removed = r.remove(1)
    assert removed.kind == "data" and len(r) == 2
    with pytest.raises(IndexError, match="no item 5"):
        r.remove(5)
    with pytest.raises(ReportError, match="not a PNG"):
        view_item("x", image=b"GIF89a...")


def test_report_is_saved_in_the_project(session, tmp_path):
    r = _fill(session)
    path = save_project(session, tmp_path / "p.msproj")
    back, _ = load_project(path)
    assert [(it.kind, it.title, it.caption, it.facts, it.image) for it in back.report.items] == \
        [(it.kind, it.title, it.caption, it.facts, it.image) for it in r.items]


def test_html_is_self_contained_escaped_and_has_every_figure(session):
    r = _fill(session)
    text = report_html(r, title="Iris <study>")
    assert "<title>Iris &lt;study&gt;</title>" in text
    assert "Fisher&#x27;s &lt;iris&gt; &amp; friends" in text and "<iris>" not in text
    srcs = re.findall(r'<img [^>]*src="([^"]+)"', text)
    assert len(srcs) == 3
    for src, item in zip(srcs, r.items):
        assert src.startswith("data:image/png;base64,")
        assert base64.b64decode(src.split(",", 1)[1]) == item.image
    assert not re.search(r'(src|href)="(http|file|/)', text)  # nothing external


def test_empty_report_and_unwritable_folder_are_refused_with_a_message(session, tmp_path):
    with pytest.raises(ReportError, match="nothing was added"):
        save_report_html(session.report, tmp_path / "r.html")
    assert not (tmp_path / "r.html").exists()
    _fill(session)
    with pytest.raises(ReportError, match="does not exist.*report is kept"):
        save_report_html(session.report, tmp_path / "missing" / "r.html")
    with pytest.raises(ReportError, match=r"unknown file extension \('\.txt'\); allowed: \.html, \.htm"):
        save_report_html(session.report, tmp_path / "r.txt")
    assert len(session.report) == 3  # nothing lost
    assert save_report_html(session.report, tmp_path / "r.html").stat().st_size > 0


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def test_a_folder_that_cannot_be_written_is_named_and_the_report_kept(session, locked):
    _fill(session)
    with pytest.raises(ReportError) as info:
        save_report_html(session.report, locked / "r.html")
    assert str(info.value) == (f"Cannot write to {locked}: permission denied. The report is kept: save it to "
                               "another folder.")
    assert sorted(p.name for p in locked.iterdir()) == ["old.png"] and len(session.report) == 3


@pytest.mark.skipif(CHROMIUM is None, reason="Debian's chromium is not installed (apt-get install chromium)")
def test_report_opens_in_headless_chromium_with_every_figure_drawn(session, tmp_path):
    _fill(session)
    html_path = save_report_html(session.report, tmp_path / "report.html", title="Iris")
    shot = tmp_path / "shot.png"
    subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                    "--no-first-run", f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                    "--window-size=1200,2000", html_path.resolve().as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists(), "chromium wrote no screenshot"
    pixels = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    area = FIG[0] * FIG[1]
    for colour in COLOURS:  # each figure is drawn whole (its exact colour over its whole area)
        hits = np.all(np.abs(pixels - colour) <= 3, axis=2)
        assert hits.sum() >= 0.95 * area, (colour, int(hits.sum()))
        ys, xs = np.nonzero(hits)
        assert xs.max() - xs.min() + 1 == FIG[0] and ys.max() - ys.min() + 1 == FIG[1]
    non_white = np.any(pixels < 200, axis=2).sum()
    assert non_white > 3 * area  # the figures plus the text


def test_data_item_of_a_table_lists_the_columns_by_role(tmp_path):
    import manifold_studio as ms

    path = tmp_path / "t.csv"
    path.write_text("a,b,year,kind\n1.0,2.0,2001,x\n2.0,1.5,2002,y\n3.0,0.5,2003,x\n")
    ds = ms.load_data(str(path), label_column="kind")
    ds.set_role("year", "meta")
    facts = dict(data_item(ds).facts)
    assert facts["Role: feature"] == "a, b" and facts["Role: meta"] == "year" and facts["Role: target"] == "kind"
    assert ds.load_options["roles"]["year"] == "meta"  # reloading repeats the role change
    again = ms.load_data(str(path), **ds.load_options)
    assert again.feature_names == ["a", "b"] and again.label_name == "kind"


def test_the_recovery_snapshot_keeps_the_report(session, tmp_path):
    from manifold_studio.project.recovery import snapshot

    _fill(session)
    snap = snapshot(session)
    session.report.remove(0)  # the window goes on while the snapshot is saved
    back, _ = load_project(save_project(snap, tmp_path / "recovered.msproj"))
    assert [it.caption for it in back.report.items] == ["Fisher's <iris> & friends", "The PCA map", "Clusters"]
