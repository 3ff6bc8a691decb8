"""A 2-D scatter map drawn without Qt, for the command line (``run ... --plot map.png``): PNG
with Pillow, SVG written as text. Both share one layout: an axes box with ticks, a title
(algorithm, data, parameters), points coloured by label and a legend (up to
:data:`MAX_LEGEND` classes, then "… N more"; a colour bar for continuous values).

SVG: one ``<circle>`` per point (grouped by class in ``<g id="points">``) up to
:data:`SVG_CIRCLE_LIMIT` points; above it the points layer is a PNG embedded in the SVG
(``<image>``, same pixels as the PNG output) while the axes, text and legend stay vector, and
the file's ``<desc>`` says so. Points with a non-finite coordinate are not drawn.

``apply`` has no ``--plot``: it streams its result chunk by chunk in bounded memory, while a map
needs every point at once (``run ... --plot`` draws the training map).
"""
from __future__ import annotations

import base64
import functools
import io
import math
from dataclasses import dataclass, field
from xml.sax.saxutils import escape

import numpy as np

from manifold_studio.analysis.feature_stats import pca_map
from manifold_studio.errors import ManifoldStudioError
from manifold_studio.fileio.export_paths import (
    IMAGE_EXTENSIONS,
    ExportError,
    check_image_size,
    check_output_path,
    parse_size,
    write_file,
)
from manifold_studio.render.colors import LabelColors, label_colors

MAX_LEGEND = 20
SVG_CIRCLE_LIMIT = 50_000
DEFAULT_SIZE = (1000, 800)
_INK = (40, 40, 40)
_GRID = (232, 232, 232)


@dataclass
class MapPlot:
    """What a map shows: (n, 2) coordinates, optional labels, texts."""

    xy: np.ndarray
    labels: np.ndarray | None = None
    title: str = ""
    subtitle: str = ""
    axis_names: tuple[str, str] = ("", "")
    legend_title: str = ""


@dataclass
class _Layout:
    width: int
    height: int
    box: tuple[float, float, float, float]  # left, top, right, bottom of the plot area
    px: np.ndarray  # pixel x of the drawn points
    py: np.ndarray
    codes: np.ndarray
    colors: LabelColors
    radius: float
    xticks: list[tuple[float, str]]
    yticks: list[tuple[float, str]]
    font: int
    title_lines: list[tuple[str, int]]  # (text, font size)
    legend: list[tuple[tuple[int, int, int] | None, str]] = field(default_factory=list)
    legend_x: float = 0.0


# -- layout -------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=16)
def _font(size: int):
    """DejaVu Sans where the system has it (wide coverage: dashes, ×, accents), else Pillow's own."""
    from PIL import ImageFont

    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default(size=size)


def _text_width(text: str, size: int) -> float:
    return float(_font(size).getlength(text))


def _fit(text: str, size: int, room: float) -> str:
    """``text`` cut with an ellipsis to fit ``room`` pixels."""
    if _text_width(text, size) <= room:
        return text
    lo, hi = 0, len(text)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _text_width(text[:mid] + "…", size) <= room:
            lo = mid
        else:
            hi = mid - 1
    return text[:lo] + "…"


def nice_ticks(lo: float, hi: float, target: int) -> list[float]:
    """Round tick values (1, 2, 5 × 10^k steps) inside [lo, hi]."""
    span = hi - lo
    if not span > 0:
        return [lo]
    raw = span / max(1, target)
    mag = 10.0 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    ticks = []
    k = 0
    while first + k * step <= hi + step * 1e-9 and k < 100:
        ticks.append(first + k * step)
        k += 1
    return ticks


def _tick_text(v: float, ticks: list[float]) -> str:
    step = abs(ticks[1] - ticks[0]) if len(ticks) > 1 else abs(v) or 1.0
    big = max(abs(t) for t in ticks) if ticks else abs(v)
    if big >= 1e5 or (step < 1e-4 and big > 0):
        return f"{v:.3g}"
    decimals = max(0, -int(math.floor(math.log10(step)))) if step < 1 else 0
    text = f"{v:.{decimals}f}"
    return "0" if float(text) == 0 else text


def _range(v: np.ndarray) -> tuple[float, float]:
    if not v.size:
        return 0.0, 1.0
    lo, hi = float(v.min()), float(v.max())
    if hi - lo <= 1e-12 * max(1.0, abs(lo), abs(hi)):
        pad = 0.5 * abs(lo) if lo else 1.0
        return lo - pad, hi + pad
    pad = 0.04 * (hi - lo)
    return lo - pad, hi + pad


def _radius(n: int, width: int, height: int) -> float:
    base = 3.5 if n <= 2_000 else 2.5 if n <= 20_000 else 1.5 if n <= 200_000 else 0.5
    return base * max(1.0, min(width, height) / 800.0)


def layout(plot: MapPlot, width: int, height: int) -> _Layout:
    width, height = check_image_size(width, height)
    xy = np.asarray(plot.xy, dtype=float)
    if xy.ndim == 1:
        xy = xy[:, None]
    if xy.shape[1] == 1:
        xy = np.column_stack([xy[:, 0], np.zeros(len(xy))])
    xy = xy[:, :2]
    n = len(xy)
    colors = label_colors(plot.labels, n, plot.legend_title)
    finite = np.isfinite(xy).all(axis=1)
    xy, codes = xy[finite], colors.codes[finite]

    font = int(min(28, max(9, round(min(width, height) / 62))))
    title_size = int(round(font * 1.3))
    # legend entries
    legend: list = []
    if colors.mode == "categorical":
        shown = min(len(colors.names), MAX_LEGEND)
        legend = [(tuple(int(c) for c in colors.colors[i]), colors.names[i]) for i in range(shown)]
        if len(colors.names) > shown:
            legend.append((None, f"… {len(colors.names) - shown} more"))
    elif colors.mode == "continuous":
        legend = [(None, f"{colors.vmax:.4g}"), (None, f"{colors.vmin:.4g}")]
    legend_w = 0.0
    if legend:
        texts = [t for _, t in legend] + [colors.title or ""]
        legend_w = min(0.35 * width, max(_text_width(t, font) for t in texts) + 2.2 * font + 16)
    decorated = width >= 160 and height >= 120
    x0, x1 = _range(xy[:, 0])
    y0, y1 = _range(xy[:, 1])
    if decorated:
        title_lines = [(t, s) for t, s in ((plot.title, title_size), (plot.subtitle, font)) if t]
        top = 10 + sum(1.35 * s for _, s in title_lines) + 6
        yticks_v = nice_ticks(y0, y1, max(2, int(height / 90)))
        ytexts = [_tick_text(v, yticks_v) for v in yticks_v]
        tick_w = max((_text_width(t, font) for t in ytexts), default=0.0)
        left = 10 + (1.4 * font if plot.axis_names[1] else 0) + tick_w + 8
        bottom = height - (8 + 1.4 * font + (1.4 * font if plot.axis_names[0] else 0) + 6)
        right = width - (legend_w + 14 if legend else 16)
    else:
        title_lines, yticks_v, ytexts = [], [], []
        left, top, right, bottom = 1.0, 1.0, width - 1.0, height - 1.0
    pw, ph = max(1.0, right - left), max(1.0, bottom - top)
    xticks_v = nice_ticks(x0, x1, max(2, int(pw / 110))) if decorated else []
    px = left + (xy[:, 0] - x0) / (x1 - x0) * pw
    py = bottom - (xy[:, 1] - y0) / (y1 - y0) * ph
    xticks = [(left + (v - x0) / (x1 - x0) * pw, _tick_text(v, xticks_v)) for v in xticks_v]
    yticks = [(bottom - (v - y0) / (y1 - y0) * ph, t) for v, t in zip(yticks_v, ytexts)]
    title_lines = [(_fit(t, s, width - 20), s) for t, s in title_lines]
    legend = [(c, _fit(t, font, max(10.0, legend_w - 2.2 * font - 10))) for c, t in legend]
    return _Layout(width, height, (left, top, right, bottom), px, py, codes, colors,
                   _radius(len(px), width, height), xticks, yticks, font, title_lines, legend, right + 12)


# -- PNG ----------------------------------------------------------------------------------------
def _points_rgba(lay: _Layout) -> np.ndarray:
    """The points layer over the whole image as an (h, w, 4) uint8 array (transparent elsewhere):
    each point a disc of ``radius`` px, vectorised (one assignment per disc offset)."""
    img = np.zeros((lay.height, lay.width, 4), dtype=np.uint8)
    if not len(lay.px):
        return img
    left, top, right, bottom = lay.box
    r = lay.radius
    k = int(math.floor(r))
    offsets = [(dx, dy) for dy in range(-k, k + 1) for dx in range(-k, k + 1) if dx * dx + dy * dy <= r * r + 0.25]
    cx = np.rint(lay.px).astype(np.int64)
    cy = np.rint(lay.py).astype(np.int64)
    rgba = np.concatenate([lay.colors.colors, np.full((len(lay.colors.colors), 1), 255, np.uint8)], axis=1)
    col = rgba[lay.codes]
    lo_x, hi_x = int(math.ceil(left)), int(math.floor(right))
    lo_y, hi_y = int(math.ceil(top)), int(math.floor(bottom))
    for dx, dy in offsets:
        x, y = cx + dx, cy + dy
        ok = (x >= lo_x) & (x <= hi_x) & (y >= lo_y) & (y <= hi_y)
        img[y[ok], x[ok]] = col[ok]
    return img


def render_png(plot: MapPlot, width: int, height: int):
    """The map as a Pillow RGB image of exactly ``width`` × ``height`` pixels."""
    from PIL import Image, ImageDraw

    lay = layout(plot, width, height)
    img = Image.new("RGB", (lay.width, lay.height), (255, 255, 255))
    draw = ImageDraw.Draw(img)
    left, top, right, bottom = lay.box
    f = _font(lay.font)
    for x, _ in lay.xticks:
        draw.line([(x, top), (x, bottom)], fill=_GRID)
    for y, _ in lay.yticks:
        draw.line([(left, y), (right, y)], fill=_GRID)
    points = Image.fromarray(_points_rgba(lay), "RGBA")
    img.paste(points, (0, 0), points)
    if lay.title_lines or lay.xticks:
        draw.rectangle([left, top, right, bottom], outline=_INK)
    for x, text in lay.xticks:
        draw.line([(x, bottom), (x, bottom + 5)], fill=_INK)
        draw.text((x, bottom + 7), text, fill=_INK, font=f, anchor="ma")
    for y, text in lay.yticks:
        draw.line([(left - 5, y), (left, y)], fill=_INK)
        draw.text((left - 7, y), text, fill=_INK, font=f, anchor="rm")
    y = 10.0
    for text, size in lay.title_lines:
        draw.text((lay.width / 2, y), text, fill=(0, 0, 0), font=_font(size), anchor="ma")
        y += 1.35 * size
    xname, yname = plot.axis_names
    if lay.xticks and xname:
        draw.text(((left + right) / 2, lay.height - 6), _fit(xname, lay.font, right - left), fill=_INK,
                  font=f, anchor="md")
    if lay.yticks and yname:
        label = _fit(yname, lay.font, bottom - top)
        tw = int(_text_width(label, lay.font)) + 4
        tile = Image.new("RGBA", (tw, int(lay.font * 1.4)), (255, 255, 255, 0))
        ImageDraw.Draw(tile).text((tw / 2, 0), label, fill=_INK + (255,), font=f, anchor="ma")
        tile = tile.rotate(90, expand=True)
        img.paste(tile, (6, int((top + bottom) / 2 - tile.height / 2)), tile)
    _png_legend(draw, lay, f)
    return img


def _legend_marks(lay: _Layout) -> list[tuple]:
    """The legend as marks both writers draw: ("text", x, y, text, anchor, colour) with anchor
    "lt" / "lb" / "lm" (left-top / left-bottom / left-middle), ("rect", x0, y0, x1, y1, colour) and
    ("disc", cx, cy, r, colour). Empty without a legend."""
    if not lay.legend or not lay.title_lines:
        return []
    fs = lay.font
    x, y = lay.legend_x, lay.box[1] + 4
    step = fs * 1.5
    marks: list[tuple] = []
    if lay.colors.title:
        marks.append(("text", x, y, _fit(lay.colors.title, fs, lay.width - x - 4), "lt", (0, 0, 0)))
        y += step
    if lay.colors.mode == "continuous":
        bar_h = min(200.0, lay.box[3] - y - 10)
        levels = len(lay.colors.map_colors)
        for i in range(levels):
            y0 = y + bar_h * (1 - (i + 1) / levels)
            marks.append(("rect", x, y0, x + fs, y0 + bar_h / levels + 0.5, tuple(int(c) for c in lay.colors.colors[i])))
        marks.append(("text", x + fs + 6, y, lay.legend[0][1], "lt", _INK))
        marks.append(("text", x + fs + 6, y + bar_h, lay.legend[1][1], "lb", _INK))
        return marks
    for color, text in lay.legend:
        if color is not None:
            marks.append(("disc", x + fs / 2, y + step / 2, fs * 0.4, color))
        marks.append(("text", x + 1.6 * fs, y + step / 2, text, "lm", _INK))
        y += step
    return marks


def _png_legend(draw, lay: _Layout, f) -> None:
    for kind, *m in _legend_marks(lay):
        if kind == "text":
            x, y, text, anchor, color = m
            draw.text((x, y), text, fill=color, font=f, anchor=anchor)
        elif kind == "rect":
            x0, y0, x1, y1, color = m
            draw.rectangle([x0, y0, x1, y1 + 0.5], fill=color)
        else:
            cx, cy, r, color = m
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=color)


# -- SVG ----------------------------------------------------------------------------------------
def _hex(color) -> str:
    return "#%02x%02x%02x" % tuple(int(c) for c in color)


def render_svg(plot: MapPlot, width: int, height: int) -> str:
    """The map as an SVG document of ``width`` × ``height`` px (see the module's note on large maps)."""
    lay = layout(plot, width, height)
    left, top, right, bottom = lay.box
    fs = lay.font
    out = [f'<?xml version="1.0" encoding="UTF-8"?>\n<svg xmlns="http://www.w3.org/2000/svg" '
           f'xmlns:xlink="http://www.w3.org/1999/xlink" width="{lay.width}" height="{lay.height}" '
           f'viewBox="0 0 {lay.width} {lay.height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="{fs}">']
    raster = len(lay.px) > SVG_CIRCLE_LIMIT
    out.append(f"<title>{escape(plot.title)}</title>")
    note = (f"{len(lay.px):,} points: drawn as an embedded PNG image (above {SVG_CIRCLE_LIMIT:,} points)"
            if raster else f"{len(lay.px):,} points, one circle each")
    out.append(f"<desc>{escape(plot.subtitle)} — {note}</desc>")
    out.append(f'<rect width="{lay.width}" height="{lay.height}" fill="#ffffff"/>')
    out.append(f'<defs><clipPath id="plot-area"><rect x="{left:.2f}" y="{top:.2f}" width="{right - left:.2f}" '
               f'height="{bottom - top:.2f}"/></clipPath></defs>')
    out.append('<g id="grid" stroke="#e8e8e8" stroke-width="1">')
    out += [f'<line x1="{x:.2f}" y1="{top:.2f}" x2="{x:.2f}" y2="{bottom:.2f}"/>' for x, _ in lay.xticks]
    out += [f'<line x1="{left:.2f}" y1="{y:.2f}" x2="{right:.2f}" y2="{y:.2f}"/>' for y, _ in lay.yticks]
    out.append("</g>")
    if raster:
        buf = io.BytesIO()
        from PIL import Image

        Image.fromarray(_points_rgba(lay), "RGBA").save(buf, "PNG")
        data = base64.b64encode(buf.getvalue()).decode("ascii")
        out.append(f'<g id="points"><image x="0" y="0" width="{lay.width}" height="{lay.height}" '
                   f'xlink:href="data:image/png;base64,{data}"/></g>')
    else:
        out.append('<g id="points" clip-path="url(#plot-area)" stroke="#ffffff" stroke-opacity="0.5" '
                   'stroke-width="0.5">')
        names = lay.colors.names
        for code in np.unique(lay.codes):
            idx = np.flatnonzero(lay.codes == code)
            label = f' data-label="{escape(names[code], {chr(34): "&quot;"})}"' if code < len(names) else ""
            out.append(f'<g fill="{_hex(lay.colors.colors[code])}"{label}>')
            r = f"{lay.radius:.2f}"
            out += [f'<circle cx="{x:.2f}" cy="{y:.2f}" r="{r}"/>'
                    for x, y in zip(lay.px[idx].tolist(), lay.py[idx].tolist())]
            out.append("</g>")
        out.append("</g>")
    out.append('<g id="axes" fill="#282828">')
    if lay.title_lines or lay.xticks:
        out.append(f'<rect x="{left:.2f}" y="{top:.2f}" width="{right - left:.2f}" height="{bottom - top:.2f}" '
                   'fill="none" stroke="#282828"/>')
    for x, text in lay.xticks:
        out.append(f'<line x1="{x:.2f}" y1="{bottom:.2f}" x2="{x:.2f}" y2="{bottom + 5:.2f}" stroke="#282828"/>'
                   f'<text x="{x:.2f}" y="{bottom + 7 + fs:.2f}" text-anchor="middle">{escape(text)}</text>')
    for y, text in lay.yticks:
        out.append(f'<line x1="{left - 5:.2f}" y1="{y:.2f}" x2="{left:.2f}" y2="{y:.2f}" stroke="#282828"/>'
                   f'<text x="{left - 7:.2f}" y="{y + 0.35 * fs:.2f}" text-anchor="end">{escape(text)}</text>')
    xname, yname = plot.axis_names
    if lay.xticks and xname:
        out.append(f'<text x="{(left + right) / 2:.2f}" y="{lay.height - 8:.2f}" text-anchor="middle">'
                   f'{escape(xname)}</text>')
    if lay.yticks and yname:
        cy = (top + bottom) / 2
        out.append(f'<text x="{6 + fs:.2f}" y="{cy:.2f}" text-anchor="middle" '
                   f'transform="rotate(-90 {6 + fs:.2f} {cy:.2f})">{escape(yname)}</text>')
    out.append("</g>")
    y = 10.0
    for text, size in lay.title_lines:
        out.append(f'<text x="{lay.width / 2:.2f}" y="{y + size:.2f}" font-size="{size}" text-anchor="middle">'
                   f"{escape(text)}</text>")
        y += 1.35 * size
    out.append(_svg_legend(lay))
    out.append("</svg>\n")
    return "\n".join(out)


def _svg_legend(lay: _Layout) -> str:
    marks = _legend_marks(lay)
    if not marks:
        return ""
    fs = lay.font
    baseline = {"lt": fs, "lb": 0.0, "lm": 0.35 * fs}   # SVG places text by its baseline
    out = ['<g id="legend" fill="#282828">']
    for kind, *m in marks:
        if kind == "text":
            x, y, text, anchor, color = m
            out.append(f'<text x="{x:.2f}" y="{y + baseline[anchor]:.2f}" fill="{_hex(color)}">{escape(text)}</text>')
        elif kind == "rect":
            x0, y0, x1, y1, color = m
            out.append(f'<rect x="{x0:.2f}" y="{y0:.2f}" width="{x1 - x0:.2f}" height="{y1 - y0:.2f}" '
                       f'fill="{_hex(color)}"/>')
        else:
            cx, cy, r, color = m
            out.append(f'<rect x="{cx - r:.2f}" y="{cy - r:.2f}" width="{2 * r:.2f}" height="{2 * r:.2f}" '
                       f'rx="{r:.2f}" fill="{_hex(color)}"/>')
    out.append("</g>")
    return "\n".join(out)


# -- files and the command line -------------------------------------------------------------------
def save_map(path, plot: MapPlot, width: int, height: int) -> str:
    """Write ``plot`` to ``path`` (.png or .svg, atomically); returns the extension."""
    ext = check_output_path(path, IMAGE_EXTENSIONS, "the map")
    check_image_size(width, height)
    if ext == ".svg":
        text = render_svg(plot, width, height)
        write_file(path, lambda fh: fh.write(text.encode("utf-8")))
    else:
        img = render_png(plot, width, height)
        write_file(path, lambda fh: img.save(fh, "PNG"))
    return ext


def check_plot_option(path: str | None, size_text: str | None) -> tuple[int, int] | None:
    """Validate ``--plot FILE`` and ``--plot-size WxH`` before any work is done; returns the
    size (None without ``--plot``)."""
    if path is None:
        if size_text is not None:
            raise ExportError("--plot-size needs --plot FILE (.png or .svg)")
        return None
    check_output_path(path, IMAGE_EXTENSIONS, "the map")
    return parse_size(size_text) if size_text is not None else DEFAULT_SIZE


def _value_text(value) -> str:
    """A parameter value as a person reads it: 0.0001 → 1e-04, (100, 50) → 100×50 for layer
    sizes and "a, b" for lists, no quotes, no brackets or array reprs."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, bool) or value is None:
        return {True: "yes", False: "no", None: "none"}[value]
    if isinstance(value, float):
        return f"{value:g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_value_text(v) for v in value) or "none"
    return str(value)


def params_subtitle(params: dict, defaults: dict | None = None) -> str:
    """``n_clusters 4 · init random``: the parameters that differ from ``defaults`` (all of them
    without defaults) as a readable line; "default parameters" when none differs."""
    def differs(k, v):
        if defaults is None or k not in defaults:
            return True
        try:
            return bool(np.any(np.asarray(defaults[k] != v)))
        except (TypeError, ValueError):
            return True
    shown = {k: v for k, v in params.items() if differs(k, v)}
    return " · ".join(f"{k} {_value_text(v)}" for k, v in shown.items()) or "default parameters"


def run_map(result, kind: str, algorithm_id: str, dataset, params: dict, defaults: dict | None = None,
            prepared=None) -> MapPlot:
    """What ``run ... --plot`` draws: an embedding's first two coordinates coloured by the data's
    labels; cluster or predicted labels on the 2-D PCA map of what the run was fitted on
    (``prepared`` = (matrix, caption) after a preparation chain, else the data's own; on its first
    two columns only when no PCA can be computed)."""
    result = np.asarray(result)
    params_text = params_subtitle(params, defaults)
    title = f"{algorithm_id} on {dataset.name} ({dataset.n_samples:,} points)"
    names = dataset.feature_names or [f"x{j + 1}" for j in range(dataset.n_features)]
    if kind == "embedding" or result.ndim == 2:
        xy = result.reshape(len(result), -1)
        axes = ("component 1", "component 2" if xy.shape[1] > 1 else "")
        labels, legend = dataset.labels, dataset.label_name or "label"
    else:
        labels, legend = result, "predicted" if kind == "classification" else "cluster"
        try:  # the PCA map of what the run was fitted on, as the window draws it
            xy, ratio = pca_map(dataset.X if prepared is None else prepared[0], 2)
            axes = (*(f"PC{i + 1} ({r:.0%} of the variance)" for i, r in enumerate(ratio)), "", "")[:2]
            title += (", drawn on the data's PCA map" if prepared is None else
                      f", drawn on the PCA map of the prepared data ({prepared[1]})")
        except (ManifoldStudioError, ValueError, np.linalg.LinAlgError):
            xy = dataset.dense(cols=slice(0, 2))
            axes = (names[0], names[1] if len(names) > 1 else "")
            title += ", drawn on the first two data columns"
    return MapPlot(xy, labels, title, params_text, axes, legend if labels is not None else "")


def plot_run(path: str, size: tuple[int, int], result, kind: str, algorithm_id: str, dataset,
             params: dict, defaults: dict | None = None, prepared=None) -> str:
    """``run ... --plot``: draw the run's map to ``path`` (its subtitle: the parameters that
    differ from ``defaults``; ``prepared``: (matrix, caption) after a chain); returns a line for
    the console."""
    plot = run_map(result, kind, algorithm_id, dataset, params, defaults, prepared)
    save_map(path, plot, *size)
    return f"drew the map ({len(plot.xy):,} points, {size[0]} × {size[1]} px) to {path}"
