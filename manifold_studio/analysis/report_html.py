"""The report as one self-contained HTML file (Qt-free): every figure embedded as a base64
``data:image/png`` URI, every text escaped, no external resource.

::

    from manifold_studio.analysis.report_html import report_html, save_report_html
    save_report_html(session.report, "report.html", title="Wine analysis")

An empty report is refused (:class:`~manifold_studio.analysis.report.ReportError`, "nothing was
added"); a folder that cannot be written raises ReportError naming it, and the report itself
is untouched (it lives in the session until the project is saved).
"""
from __future__ import annotations

import base64
import datetime as _dt
import html
from pathlib import Path
from typing import Callable

from manifold_studio import __version__
from manifold_studio.analysis.report import Report, ReportError
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.fileio.atomic import atomic_write
from manifold_studio.fileio.export_paths import check_output_path

__all__ = ["report_html", "save_report_html", "data_uri", "HTML_SUFFIXES"]

HTML_SUFFIXES = (".html", ".htm")

_STYLE = """
body { font-family: sans-serif; max-width: 1000px; margin: 2em auto; color: #222; }
h1 { font-size: 1.6em; border-bottom: 2px solid #446; padding-bottom: .2em; }
h2 { font-size: 1.2em; margin-top: 1.8em; }
.caption { font-style: italic; color: #444; }
table.facts { border-collapse: collapse; margin: .5em 0; }
table.facts th { text-align: left; padding: 2px 12px 2px 0; vertical-align: top; color: #555; }
table.facts td { padding: 2px 0; }
img.figure { max-width: 100%; border: 1px solid #ccc; }
.footer { margin-top: 3em; color: #888; font-size: .8em; }
"""


def data_uri(png: bytes) -> str:
    """A ``data:image/png;base64,...`` URI of PNG bytes."""
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def report_html(report: Report, title: str = "Manifold Studio report",
                image_src: Callable[[int, bytes], str] | None = None, page_per_item: bool = False) -> str:
    """The report as HTML. ``image_src(index, png)`` gives each figure's ``src`` (default: a
    data URI, which makes the file self-contained; the PDF export passes resource names).
    ``page_per_item``: each item starts a new printed page (the PDF: a heading is never left at
    the foot of a page with its figure on the next)."""
    if report.is_empty:
        raise ReportError("The report is empty: nothing was added. Use 'Add to report' on a view first.")
    src = image_src or (lambda i, png: data_uri(png))
    esc = html.escape
    stamp = _dt.datetime.now().strftime("%Y-%m-%d %H:%M")
    parts = ["<!DOCTYPE html>", '<html lang="en"><head><meta charset="utf-8">',
             f"<title>{esc(title)}</title><style>{_STYLE}</style></head><body>",
             f"<h1>{esc(title)}</h1>"]
    for i, item in enumerate(report.items):
        brk = ' style="page-break-before: always"' if page_per_item and i else ""
        parts.append(f'<div class="item" id="item{i + 1}"{brk}>')
        parts.append(f"<h2>{i + 1}. {esc(item.title)}</h2>")
        if item.caption:
            parts.append(f'<p class="caption">{esc(item.caption)}</p>')
        if item.image is not None:
            parts.append(f'<p><img class="figure" alt="{esc(item.title)}" src="{esc(src(i, item.image))}"></p>')
        if item.facts:
            rows = "".join(f"<tr><th>{esc(k)}</th><td>{esc(v)}</td></tr>" for k, v in item.facts)
            parts.append(f'<table class="facts">{rows}</table>')
        parts.append("</div>")
    parts.append(f'<p class="footer">Made with Manifold Studio {esc(__version__)} on {esc(stamp)}.</p>')
    parts.append("</body></html>")
    return "\n".join(parts)


def save_report_html(report: Report, path, title: str = "Manifold Studio report") -> Path:
    """Write the self-contained HTML report to ``path`` atomically; returns the path."""
    text = report_html(report, title)
    path = Path(path)
    try:
        check_output_path(path, HTML_SUFFIXES, "the report")
        return atomic_write(path, lambda fh: fh.write(text), binary=False)
    except ManifoldStudioError as exc:
        raise ReportError(f"{exc} The report is kept: save it to another folder.") from None
    except OSError as exc:
        raise ReportError(f"Cannot write {path}: {exc.strerror or exc}. The report is kept: save it to "
                          "another folder.") from None
