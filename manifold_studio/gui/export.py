"""File ▸ Export: any view as a PNG or SVG image at a chosen size, the current data set with
every result column as CSV, and the clipboard (the view as an image, the selected rows as
tab-separated text).

Rendering (main thread, Qt needs it):

- a view holding one pyqtgraph plot (the map, the spectrum, ...) is laid out again at the
  chosen aspect for the moment of the export and written by pyqtgraph's exporters
  (``ImageExporter`` with its width/height, ``SVGExporter``); the map's title goes into the image;
- any other view (several plots, a table) is rendered as a widget: PNG into a QImage of the
  chosen size, SVG through ``QSvgGenerator`` — scaled to fit, centred on white.

The CSV is written by a job (a million rows take seconds), atomically. The checks (extension,
folder, size) are :mod:`manifold_studio.fileio.export_paths`, shared with the command line.
"""
from __future__ import annotations

import contextlib
import html
import math
import re
from pathlib import Path

import pyqtgraph as pg
from PySide6.QtCore import (
    QBuffer,
    QByteArray,
    QIODevice,
    QObject,
    QPoint,
    QRect,
    QRectF,
    QSize,
    Qt,
)
from PySide6.QtGui import (
    QAction,
    QFont,
    QFontMetrics,
    QGuiApplication,
    QImage,
    QPainter,
    QPicture,
)
from PySide6.QtWidgets import (
    QApplication,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QMenu,
    QScrollArea,
    QSpinBox,
    QWidget,
)

from manifold_studio.errors import error_message
from manifold_studio.fileio.export_paths import (
    IMAGE_EXTENSIONS,
    MAX_SIDE,
    MIN_SIDE,
    TABLE_EXTENSIONS,
    ExportError,
    check_image_size,
    check_output_path,
    write_file,
)
from manifold_studio.tables.export import dataset_table, rows_as_tsv, with_row_ids, write_table_csv

#: docks that hold controls, not views
PANEL_DOCKS = ("data", "algorithm", "runs", "messages")
#: above this many selected rows, "Copy selected rows" formats the text in a job
COPY_ROWS_IN_JOB = 100_000
#: an image of this many pixels has the on-screen sizes of fonts, lines and points; a larger one
#: scales them by the square root of the ratio (1000 × 700: 1.25)
FONT_SCALE_AREA = 800 * 560


# -- rendering ------------------------------------------------------------------------------------
def graphics_item_of(widget: QWidget):
    """The one pyqtgraph item to export for ``widget`` (its PlotItem, or a layout's central
    item), or None when the widget has no plot or several."""
    if isinstance(widget, pg.GraphicsView):
        views = [widget]
    else:
        views = [v for v in widget.findChildren(pg.GraphicsView) if v.isVisibleTo(widget)]
    if len(views) != 1:
        return None
    view = views[0]
    if isinstance(view, pg.PlotWidget):
        return view.getPlotItem()
    item = getattr(view, "ci", None) or getattr(view, "centralWidget", None)
    return item if isinstance(item, pg.GraphicsWidget) else None


@contextlib.contextmanager
def _laid_out(item, width: int, height: int, scale: float, title: str = ""):
    """Lay ``item`` out at (width/scale) × (height/scale) for an export, then put it back."""
    old = QRectF(item.geometry())
    titled = bool(title) and isinstance(item, pg.PlotItem) and not item.titleLabel.isVisible()
    try:
        if titled:  # the view's title, cut to the width (a label's text sets the item's minimum width)
            font = QFont()
            font.setPointSizeF(10)
            title = QFontMetrics(font).elidedText(title, Qt.TextElideMode.ElideRight, int(width / scale) - 40)
            item.setTitle(html.escape(title), size="10pt")
        item.setGeometry(QRectF(old.x(), old.y(), width / scale, height / scale))
        _activate(item)
        yield item
    finally:
        if titled:
            item.titleLabel.setText("")
            item.setTitle(None)
        item.setGeometry(old)
        _activate(item)


def _activate(item) -> None:
    """Apply a geometry change now (the layout would otherwise wait for the event loop)."""
    layout = item.layout() if callable(getattr(item, "layout", None)) else getattr(item, "layout", None)
    if layout is not None:
        layout.activate()


def _set_size(exporter, width, height) -> None:
    params = exporter.parameters()
    params.param("width").setValue(width, blockSignal=exporter.widthChanged)
    params.param("height").setValue(height, blockSignal=exporter.heightChanged)


def png_scale(width: int, height: int) -> float:
    """How much larger than on screen the fonts, lines and points of a ``width`` × ``height``
    PNG are: they grow with the image's size only, never with how small the view is on screen,
    so every view of a report (the map, the dendrogram in a small dock) gets the same fonts."""
    return max(1.0, math.sqrt(width * height / FONT_SCALE_AREA))


def render_item_png(item, width: int, height: int, title: str = "") -> QImage:
    """A pyqtgraph item as a ``width`` × ``height`` image (fonts grow with a larger image)."""
    from pyqtgraph.exporters import ImageExporter

    scale = png_scale(width, height)
    with _laid_out(item, width, height, scale, title):
        exporter = ImageExporter(item)
        _set_size(exporter, width, height)
        exporter.parameters()["background"] = pg.mkColor("w")
        image = exporter.export(toBytes=True)
    return image


def render_item_svg(item, width: int, height: int, title: str = "") -> bytes:
    """A pyqtgraph item as an SVG document of ``width`` × ``height`` px."""
    from pyqtgraph.exporters import SVGExporter

    with _laid_out(item, width, height, 1.0, title):
        exporter = SVGExporter(item)
        _set_size(exporter, float(width), float(height))
        exporter.parameters()["background"] = pg.mkColor("w")
        try:
            svg = exporter.export(toBytes=True).decode("utf-8")
        except ValueError:
            # pyqtgraph 0.14 cannot parse the closed paths ("... Z") that Qt >= 6.9 writes
            # (pyqtgraph issue #3485): draw the item with Qt's own SVG generator instead
            return _qt_svg(exporter, item, width, height, title)
    # pyqtgraph gives only a viewBox: state the size too
    svg = svg.replace("<svg ", f'<svg width="{width}" height="{height}" ', 1)
    return svg.encode("utf-8")


def _svg_generator(width: int, height: int, title: str):
    from PySide6.QtSvg import QSvgGenerator

    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    gen = QSvgGenerator()
    gen.setOutputDevice(buf)
    gen.setSize(QSize(width, height))
    gen.setViewBox(QRect(0, 0, width, height))
    # the resolution of pyqtgraph's cached QPictures (axes): another one would rescale them
    gen.setResolution(QPicture().logicalDpiX())
    gen.setTitle(title or "Manifold Studio view")
    return gen, buf, data


def _qt_svg(exporter, item, width: int, height: int, title: str) -> bytes:
    """``item`` (already laid out at ``width`` × ``height``) through QSvgGenerator, its items in
    pyqtgraph's export mode (scatter points as shapes, not cached pixmaps)."""
    gen, buf, data = _svg_generator(width, height, title)
    painter = QPainter(gen)
    try:
        painter.fillRect(QRect(0, 0, width, height), Qt.GlobalColor.white)
        exporter.setExportMode(True, {"antialias": True, "background": pg.mkColor("w"), "painter": painter,
                                      "resolutionScale": 1.0})
        item.scene().render(painter, QRectF(0, 0, width, height), item.sceneBoundingRect())
    finally:
        exporter.setExportMode(False)
        painter.end()
    buf.close()
    return _px_size(bytes(data), width, height)


def _paint_widget(widget: QWidget, device, width: int, height: int) -> None:
    """Render ``widget`` scaled to fit ``width`` × ``height`` (aspect kept, centred, white around)."""
    w0, h0 = max(1, widget.width()), max(1, widget.height())
    s = min(width / w0, height / h0)
    painter = QPainter(device)
    try:
        painter.setRenderHint(QPainter.RenderHint.Antialiasing)
        painter.fillRect(QRect(0, 0, width, height), Qt.GlobalColor.white)
        painter.translate((width - w0 * s) / 2, (height - h0 * s) / 2)
        painter.scale(s, s)
        widget.render(painter, QPoint(0, 0))
    finally:
        painter.end()


def render_widget_png(widget: QWidget, width: int, height: int) -> QImage:
    image = QImage(width, height, QImage.Format.Format_ARGB32)
    image.fill(Qt.GlobalColor.white)
    _paint_widget(widget, image, width, height)
    return image


def render_widget_svg(widget: QWidget, width: int, height: int, title: str = "") -> bytes:
    gen, buf, data = _svg_generator(width, height, title)
    _paint_widget(widget, gen, width, height)
    buf.close()
    return _px_size(bytes(data), width, height)


def _px_size(svg: bytes, width: int, height: int) -> bytes:
    """QSvgGenerator states the size in mm: state it in pixels, as asked."""
    text = svg.decode("utf-8")
    text = re.sub(r'<svg width="[^"]*" height="[^"]*"', f'<svg width="{width}" height="{height}"', text, count=1)
    return text.encode("utf-8")


def image_bytes(image: QImage) -> bytes:
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not image.save(buf, "PNG"):
        raise ExportError("The image could not be encoded as PNG.")
    buf.close()
    return bytes(data)


def render_view(widget: QWidget, ext: str, width: int, height: int, title: str = "") -> QImage | bytes:
    """``widget`` drawn for an ``ext`` (".png" or ".svg") file: a QImage (encoded later, off the
    main thread) or the SVG document."""
    item = graphics_item_of(widget)
    if ext == ".svg":
        return render_item_svg(item, width, height, title) if item is not None else \
            render_widget_svg(widget, width, height, title)
    return render_item_png(item, width, height, title) if item is not None else \
        render_widget_png(widget, width, height)


def write_image(path, picture: QImage | bytes, progress=None) -> str:
    """Encode (a QImage as PNG) and write ``path`` atomically: the part of an export that runs
    in a job (QImage is reentrant; the job owns this one)."""
    data = picture if isinstance(picture, bytes) else image_bytes(picture)
    write_file(path, lambda fh: fh.write(data))
    return str(path)


def view_title(widget: QWidget) -> str:
    label = getattr(widget, "title_label", None)
    return label.text() if isinstance(label, QLabel) else ""


# -- the dialog -----------------------------------------------------------------------------------
class ImageExportDialog(QDialog):
    """Which view, and at what size (the file name is asked next)."""

    def __init__(self, views: list[tuple[str, str, QWidget]], current: str, size: tuple[int, int], parent=None):
        super().__init__(parent)
        self.setWindowTitle("Export view as image")
        self.view_combo = QComboBox()
        for key, title, _w in views:
            self.view_combo.addItem(title, key)
        self.view_combo.setCurrentIndex(max(0, self.view_combo.findData(current)))
        self.width_spin, self.height_spin = QSpinBox(), QSpinBox()
        for spin, value in ((self.width_spin, size[0]), (self.height_spin, size[1])):
            spin.setRange(MIN_SIDE, MAX_SIDE)
            spin.setSuffix(" px")
            spin.setValue(value)
        size_row = QHBoxLayout()
        size_row.addWidget(self.width_spin)
        size_row.addWidget(QLabel("×"))
        size_row.addWidget(self.height_spin)
        form = QFormLayout(self)
        form.addRow("View:", self.view_combo)
        form.addRow("Size:", size_row)
        form.addRow(QLabel(f"PNG or SVG (chosen by the file name); {MIN_SIDE}–{MAX_SIDE:,} px a side."))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        form.addRow(buttons)

    def choice(self) -> tuple[str, int, int]:
        return self.view_combo.currentData(), self.width_spin.value(), self.height_spin.value()


# -- the actions ----------------------------------------------------------------------------------
class ExportActions(QObject):
    """The Export submenu of File, the map's right-click "Export image…", and the clipboard."""

    def __init__(self, window):
        super().__init__(window)
        self.window = window
        self.size = (1200, 900)
        self.folder = ""
        self.job = None
        self.menu = QMenu("&Export", window)
        self.image_action = self._action("View as &image (PNG, SVG)…", self.choose_image)
        self.csv_action = self._action("&Data set with results as CSV…", self.choose_csv)
        self.menu.addSeparator()
        self.copy_image_action = self._action("&Copy image", lambda: self.copy_image())
        self.copy_rows_action = self._action("Copy selected &rows", lambda: self.copy_selected_rows())
        file_menu = window.menus["file"]
        quit_action = next((a for a in file_menu.actions() if a.text().replace("&", "") == "Quit"), None)
        file_menu.insertMenu(quit_action, self.menu)
        file_menu.insertSeparator(quit_action)
        map_view = window.map_view
        if map_view is not None and hasattr(map_view, "plot_item"):
            vb_menu = map_view.plot_item.getViewBox().menu
            vb_menu.addSeparator()
            self.map_menu_action = vb_menu.addAction("Export image…")
            self.map_menu_action.triggered.connect(lambda: self.choose_image("map"))

    def _action(self, text: str, slot) -> QAction:
        act = QAction(text, self.window)
        act.triggered.connect(lambda _=False: slot())
        self.menu.addAction(act)
        return act

    # -- which views ----------------------------------------------------------------------------
    def views(self) -> list[tuple[str, str, QWidget]]:
        """(key, title, widget) of the map and of every open dock that shows a view."""
        out = []
        map_view = self.window.map_view
        if map_view is not None:
            out.append(("map", "Map", map_view))
        for key, dock in self.window.docks.items():
            widget = dock.widget()
            if isinstance(widget, QScrollArea):   # views sit in scroll areas: export the view itself
                widget = widget.widget()
            if key in PANEL_DOCKS or widget is None or widget is map_view or dock.isHidden():
                continue
            out.append((key, dock.windowTitle(), widget))
        return out

    def current_view(self) -> str:
        """The view holding the keyboard focus, else the map."""
        views = self.views()
        w = QApplication.focusWidget()
        while w is not None:
            for key, _title, widget in views:
                if w is widget:
                    return key
            w = w.parentWidget()
        return views[0][0] if views else ""

    def _widget(self, key: str) -> QWidget | None:
        return next((w for k, _t, w in self.views() if k == key), None)

    # -- images ---------------------------------------------------------------------------------
    def choose_image(self, key: str | None = None) -> None:
        views = self.views()
        if not views:
            self.window.report_error("There is no view to export.")
            return
        dialog = ImageExportDialog(views, key or self.current_view(), self.size, self.window)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return
        key, width, height = dialog.choice()
        start = str(Path(self.folder or Path.home()) / f"{key.replace('view:', '')}.png")
        path, chosen = QFileDialog.getSaveFileName(self.window, "Export view as image", start,
                                                   "PNG image (*.png);;SVG image (*.svg)")
        if not path:
            return
        if not Path(path).suffix:
            path += ".svg" if "svg" in chosen.lower() else ".png"
        self.export_image(key, path, width, height)

    def export_image(self, key: str, path, width, height):
        """Export view ``key`` to ``path`` (.png or .svg) at ``width`` × ``height`` px: checks and
        rendering now (Qt needs the main thread), encoding and writing in a job. Returns the Job,
        or None when refused; a refusal or failure is reported and leaves any file as it was."""
        widget = self._widget(key)
        try:
            if widget is None:
                raise ExportError(f"There is no open view '{key}' to export.")
            ext = check_output_path(path, IMAGE_EXTENSIONS, "the view")
            width, height = check_image_size(width, height)
            picture = render_view(widget, ext, width, height, view_title(widget))
        except Exception as exc:  # noqa: BLE001 - reported; nothing is lost
            self.window.report_error(f"Export failed: {error_message(exc)}")
            return None
        self.size, self.folder = (width, height), str(Path(path).parent)

        def done(_path):
            self.window.show_status(f"Exported the view to {path} ({width} × {height} px).")

        self.job = self.window.start_job(write_image, str(path), picture, title="Exporting the view",
                                         on_success=done, on_failure=lambda msg, detail: self.window.report_error(
                                             f"Export failed: {msg}", detail))
        return self.job

    def copy_image(self, key: str | None = None) -> QImage | None:
        """Put the view (as on screen) on the clipboard as an image."""
        widget = self._widget(key or self.current_view())
        if widget is None:
            self.window.report_error("There is no view to copy.")
            return None
        image = widget.grab().toImage()
        QGuiApplication.clipboard().setImage(image)
        self.window.show_status(f"Copied the view as an image ({image.width()} × {image.height()} px).")
        return image

    # -- tables ---------------------------------------------------------------------------------
    def _dataset_name(self) -> str | None:
        name = self.window.session.current_dataset_name
        if name is None:
            self.window.report_error("No data set is loaded: load a file or a sample first.")
        return name

    def choose_csv(self) -> None:
        name = self._dataset_name()
        if name is None:
            return
        start = str(Path(self.folder or Path.home()) / f"{name}.csv")
        path, _ = QFileDialog.getSaveFileName(self.window, "Export data set with results", start, "CSV (*.csv)")
        if path:
            self.export_csv(path if Path(path).suffix else path + ".csv")

    def export_csv(self, path, name: str | None = None):
        """Write data set ``name`` (default: the current one) with every result column to
        ``path`` in a job; returns the Job, or None when refused (the message is shown)."""
        name = name or self._dataset_name()
        if name is None:
            return None
        try:
            check_output_path(path, TABLE_EXTENSIONS, "the table")
            # a snapshot (the job owns it), with the row id first
            header, columns = with_row_ids(self.window.session, name, *dataset_table(self.window.session, name))
        except Exception as exc:  # noqa: BLE001
            self.window.report_error(f"Export failed: {error_message(exc)}")
            return None
        self.folder = str(Path(path).parent)

        def done(n_rows):
            self.window.show_status(f"Wrote {n_rows:,} rows × {len(header)} columns of {name} to {path}.")

        self.job = self.window.start_job(write_table_csv, str(path), header, columns,
                                         title=f"Exporting {name} as CSV", on_success=done,
                                         on_failure=lambda msg, detail: self.window.report_error(
                                             f"Export failed: {msg}", detail))
        return self.job

    def copy_selected_rows(self) -> str | None:
        """Put the selected rows of the current data set on the clipboard as tab-separated text
        with a header; returns the text (None when nothing is selected or a job formats it)."""
        name = self._dataset_name()
        if name is None:
            return None
        rows = self.window.session.selected_rows(name)  # the session's selection
        if not len(rows):
            self.window.show_status(f"Select points first: nothing is selected in {name}.")
            return None
        header, columns = dataset_table(self.window.session, name)

        def done(text: str) -> None:
            QGuiApplication.clipboard().setText(text)
            self.window.show_status(f"Copied {len(rows):,} selected rows × {len(header)} columns of {name}.")

        if len(rows) > COPY_ROWS_IN_JOB:
            self.job = self.window.start_job(lambda progress=None: rows_as_tsv(header, columns, rows),
                                             title="Copying the selected rows", on_success=done)
            return None
        text = rows_as_tsv(header, columns, rows)
        done(text)
        return text


def install_export(window) -> ExportActions:
    """File ▸ Export (images, CSV, clipboard) and the map's right-click "Export image…" (once)."""
    if isinstance(window.export, ExportActions):
        return window.export
    window.export = ExportActions(window)
    return window.export
