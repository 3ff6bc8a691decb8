"""Images on the map: the hovered point's image, and thumbnails instead of dots."""
import numpy as np

from gui_helpers import wait_idle, wait_last_run
from manifold_studio.gui.image_points import MAX_THUMBNAILS, grey_pixmap


def test_hover_shows_the_image_and_thumbnails_draw_every_point(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    w.load_source("sample:digits", {"n_samples": 200})
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    tool, view = w.image_points, w.map_view
    assert tool.thumbs_box.isEnabled() and not tool.thumbnails
    tool.thumbs_box.setChecked(True)
    assert len(tool.thumbnails) == 200
    # each thumbnail is the image of its own row, centred on its point
    i = 17
    item = tool.thumbnails[i]
    np.testing.assert_array_equal(item.image, w.session.current_dataset.images[view.rows[i]])
    rect = item.mapRectToParent(item.boundingRect())
    assert abs(rect.center().x() - view.xy[i, 0]) < 1e-6 * max(1, abs(view.xy[i, 0])) + 1e-9
    # hover: the enlarged image of that row appears
    x, y = view.xy[i]
    assert view.hover_at(x, y) >= 0
    assert tool.hover_image.isVisible() and tool.hover_image.pixmap().width() > 8
    view.hover_at(1e9, 1e9)
    assert not tool.hover_image.isVisible()
    tool.thumbs_box.setChecked(False)
    assert not tool.thumbnails


def test_no_images_no_thumbnails(qtbot, make_window, fresh_host):
    w = make_window(fresh_host)
    w.load_source("sample:iris")
    wait_idle(qtbot, w)
    w.run_algorithm("pca", {})
    wait_last_run(qtbot, w)
    assert not w.image_points.thumbs_box.isEnabled()
    x, y = w.map_view.xy[0]
    w.map_view.hover_at(x, y)
    assert not w.image_points.hover_image.isVisible()
    assert MAX_THUMBNAILS >= 1000


def test_pixmap_is_dark_ink_on_white():
    img = np.zeros((4, 4))
    img[1, 1] = 16.0
    pm = grey_pixmap(img, 40).toImage()
    assert pm.width() == 40 and pm.pixelColor(0, 0).red() == 255 and pm.pixelColor(12, 12).red() == 0
