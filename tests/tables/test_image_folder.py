"""The folder-of-images loader: pixels, labels from sub-folders, sizes, and bad folders."""
import numpy as np
import pytest
from PIL import Image

import manifold_studio as ms
from manifold_studio.cli.main import main as cli_main
from manifold_studio.errors import DataError


def _save(path, array, mode="L"):
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(np.asarray(array, dtype=np.uint8), mode=mode).save(path)


@pytest.fixture
def labelled_folder(tmp_path):
    rng = np.random.default_rng(0)
    arrays = {}
    for label in ("cats", "dogs"):
        for i in range(3):
            a = rng.integers(0, 256, size=(6, 5))
            _save(tmp_path / "set" / label / f"{i}.png", a)
            arrays[(label, i)] = a
    return tmp_path / "set", arrays


def test_pixels_and_labels_from_subfolders(labelled_folder):
    folder, arrays = labelled_folder
    ds = ms.load_data(str(folder))
    assert ds.X.shape == (6, 30) and ds.images.shape == (6, 6, 5)
    assert list(ds.labels) == ["cats"] * 3 + ["dogs"] * 3 and ds.label_name == "folder"
    # row 4 is dogs/1.png, pixels row by row scaled to [0, 1]
    np.testing.assert_allclose(ds.X[4], arrays[("dogs", 1)].ravel() / 255.0)
    np.testing.assert_allclose(ds.images[4], arrays[("dogs", 1)] / 255.0)
    assert ds.report[0].startswith("Read 6 images of 6×5 grey levels in 2 classes")
    assert ds.feature_names[:2] == ["px_0_0", "px_0_1"]


def test_rgb_rows_hold_three_values_per_pixel(tmp_path):
    rgb = np.zeros((4, 4, 3), dtype=np.uint8)
    rgb[..., 0] = 255
    for i in range(2):
        _save(tmp_path / f"{i}.png", rgb, mode="RGB")
    ds = ms.load_data(str(tmp_path), color="rgb")
    assert ds.X.shape == (2, 48) and ds.labels is None
    np.testing.assert_allclose(ds.X[0, :3], [1.0, 0.0, 0.0])
    np.testing.assert_allclose(ds.images[0], 0.299)  # grey thumbnail


def test_mixed_sizes_are_resized_to_the_most_common_with_a_report(tmp_path):
    for i in range(3):
        _save(tmp_path / f"a{i}.png", np.full((8, 8), 100))
    _save(tmp_path / "big.png", np.full((16, 12), 200))
    ds = ms.load_data(str(tmp_path))
    assert ds.X.shape == (4, 64)
    assert any("1 of 4 images resized to 8×8 (from 16×12" in line for line in ds.report)
    np.testing.assert_allclose(ds.X[3], 200 / 255.0, atol=1e-6)  # constant image stays constant


def test_explicit_size_and_max_side(tmp_path):
    for i in range(2):
        _save(tmp_path / f"{i}.png", np.full((40, 20), 50))
    assert ms.load_data(str(tmp_path), image_size=(10, 7)).X.shape == (2, 70)
    assert ms.load_data(str(tmp_path), max_side=10).images.shape == (2, 10, 5)


def test_too_large_for_memory_is_downscaled_with_a_message(tmp_path):
    for i in range(4):
        _save(tmp_path / f"{i}.png", np.full((100, 100), 10))
    ds = ms.load_data(str(tmp_path), max_pixels=4000)
    assert ds.X.shape[1] <= 1000
    assert any("exceed the memory limit of 4,000 values: downscaled" in line for line in ds.report)


def test_non_image_and_unreadable_files_are_skipped_and_named(tmp_path):
    for i in range(2):
        _save(tmp_path / f"{i}.png", np.full((3, 3), 9))
    (tmp_path / "notes.txt").write_text("hello")
    (tmp_path / "broken.png").write_bytes(b"not an image at all")
    ds = ms.load_data(str(tmp_path))
    assert ds.n_samples == 2
    assert any("not images were skipped: notes.txt" in line for line in ds.report)
    assert any("could not be read and were skipped: broken.png" in line for line in ds.report)


def test_one_image_or_none_is_refused(tmp_path):
    _save(tmp_path / "only.png", np.full((3, 3), 9))
    with pytest.raises(DataError, match="only one readable image"):
        ms.load_data(str(tmp_path))
    (tmp_path / "only.png").write_bytes(b"garbage")
    (tmp_path / "two.png").write_bytes(b"garbage")
    with pytest.raises(DataError, match="no readable image"):
        ms.load_data(str(tmp_path))


def test_a_folder_without_images_is_not_claimed(tmp_path):
    (tmp_path / "a.txt").write_text("x")
    with pytest.raises(DataError, match="No loader reads"):
        ms.load_data(str(tmp_path))


def test_command_line_runs_pca_on_a_folder(labelled_folder, tmp_path, capsys):
    folder, _ = labelled_folder
    out = tmp_path / "map.csv"
    assert cli_main(["run", "pca", "--data", str(folder), "--out", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert len(lines) == 7 and lines[0].endswith("folder") and lines[1].endswith("cats")
    (tmp_path / "empty").mkdir()
    assert cli_main(["run", "pca", "--data", str(tmp_path / "empty"), "--out", "-"]) != 0
    assert "folder with no images" in capsys.readouterr().err


def test_window_opens_a_dropped_or_chosen_folder(qtbot, make_window, fresh_host, labelled_folder,
                                                 monkeypatch):
    from PySide6.QtWidgets import QFileDialog

    from gui_helpers import wait_idle

    folder, _ = labelled_folder
    w = make_window(fresh_host)
    w.ask_loader_options = False
    monkeypatch.setattr(QFileDialog, "getExistingDirectory", staticmethod(lambda *a, **k: str(folder)))
    w.data_panel.open_folder_button.click()
    wait_idle(qtbot, w)
    ds = w.session.current_dataset
    assert ds is not None and ds.X.shape == (6, 30) and ds.images.shape == (6, 6, 5)
    assert list(ds.labels[:1]) == ["cats"]
