"""Folder-of-images loader plugin (Pillow; Qt-free).

A folder of PNG / JPEG / BMP / GIF / TIFF / WebP images becomes a data set with one row per
image (its pixels, row by row, grey levels or RGB scaled to [0, 1]) and the images kept for
thumbnails and reconstruction views:

* images directly in the folder have no label; images in sub-folders (one level) are
  labelled by the sub-folder's name (``digits/3/img_001.png`` → label ``3``) — the usual
  layout of image classification sets;
* every image is brought to one size: ``image_size`` when given (height, width), otherwise
  the most common size in the folder, downscaled so that its longer side is at most
  ``max_side`` pixels. What was resized, skipped or converted is said in the load report;
* files that are not images (by extension: ``notes.txt``) are skipped and named in the
  report; image files that cannot be decoded are skipped and named likewise. A folder with
  fewer than two readable images is refused with the reason;
* the pixel matrix must fit in memory: above ``max_pixels`` values in all, the images are
  downscaled further and the report says to what size.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np

from manifold_studio.algorithms.params import Choice, Int, IntTuple
from manifold_studio.data import Dataset, Loader
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl

IMAGE_EXTENSIONS = (".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp", ".pgm", ".ppm")
_NAMES_SHOWN = 5

OPTIONS = (
    Choice("color", "grey", "Grey levels (one value per pixel) or RGB (three values per pixel, "
           "in the order R, G, B for each pixel).", choices=("grey", "rgb"), label="Colour"),
    IntTuple("image_size", None, "Height and width every image is resized to; none uses the most "
             "common size in the folder (downscaled to max_side).", allow_none=True,
             min_length=2, max_length=2, low=1, high=4096, label="Image size"),
    Int("max_side", 128, "Longest side, in pixels, when the size is chosen automatically.",
        low=2, high=4096, label="Largest side"),
    Int("max_pixels", 200_000_000, "Largest number of values (images × pixels × channels) loaded; "
        "above it the images are downscaled.", low=1000, label="Memory limit (values)"),
)


def image_files(folder: Path) -> tuple[list[tuple[Path, str | None]], list[Path]]:
    """((image path, label or None) in a stable order, skipped non-image files)."""
    found, skipped = [], []
    for entry in sorted(folder.iterdir(), key=lambda p: p.name):
        if entry.name.startswith("."):
            continue
        if entry.is_dir():
            for inner in sorted(entry.iterdir(), key=lambda p: p.name):
                if inner.is_file() and not inner.name.startswith("."):
                    (found.append((inner, entry.name)) if inner.suffix.lower() in IMAGE_EXTENSIONS
                     else skipped.append(inner))
        elif entry.suffix.lower() in IMAGE_EXTENSIONS and entry.is_file():  # never a FIFO or a device
            found.append((entry, None))
        else:
            skipped.append(entry)
    return found, skipped


def _names(paths, root: Path) -> str:
    shown = ", ".join(str(p.relative_to(root)) for p in paths[:_NAMES_SHOWN])
    return shown + (f" and {len(paths) - _NAMES_SHOWN} more" if len(paths) > _NAMES_SHOWN else "")


def _target_size(sizes: list[tuple[int, int]], image_size, max_side: int) -> tuple[int, int]:
    if image_size is not None:
        return int(image_size[0]), int(image_size[1])
    (h, w), _ = Counter(sizes).most_common(1)[0]
    scale = min(1.0, max_side / max(h, w))
    return max(1, round(h * scale)), max(1, round(w * scale))


class ImageFolderLoader(Loader):
    """Reads a folder of images (sub-folder names as labels)."""

    id = "image_folder"
    name = "Folder of images"
    extensions = ()
    options = OPTIONS

    def can_load(self, path: Path) -> bool:
        path = Path(path)
        return path.is_dir() and bool(image_files(path)[0])

    def _load(self, path: Path, color="grey", image_size=None, max_side=128,
              max_pixels=200_000_000) -> Dataset:
        try:
            from PIL import Image, UnidentifiedImageError
        except ImportError:  # pragma: no cover - Pillow is a dependency
            raise DataError("Reading a folder of images needs Pillow: pip install pillow") from None
        if not path.is_dir():
            raise DataError(f"{path} is not a folder of images.")
        files, skipped = image_files(path)
        report = []
        if skipped:
            report.append(f"{len(skipped)} file(s) that are not images were skipped: {_names(skipped, path)}.")
        mode = "L" if color == "grey" else "RGB"
        images, labels, sizes, unreadable, converted = [], [], [], [], 0
        for file, label in files:
            try:
                with Image.open(file) as im:
                    im.load()
                    if im.mode != mode:
                        converted += im.mode not in ("L", "RGB", "RGBA", "P", "LA", "I;16", "I")
                        im = im.convert(mode)
                    images.append(im.copy())
            except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError):
                unreadable.append(file)
                continue
            labels.append(label)
            sizes.append((images[-1].height, images[-1].width))
        if unreadable:
            report.append(f"{len(unreadable)} image file(s) could not be read and were skipped: "
                          f"{_names(unreadable, path)}.")
        if len(images) < 2:
            what = "no readable image" if not images else "only one readable image"
            raise DataError(f"{path.name}: {what} ({len(files)} image file(s) found); a data set "
                            "needs at least two images.")
        h, w = _target_size(sizes, image_size, max_side)
        channels = 1 if mode == "L" else 3
        if len(images) * h * w * channels > max_pixels:
            scale = (max_pixels / (len(images) * h * w * channels)) ** 0.5
            h2, w2 = max(1, int(h * scale)), max(1, int(w * scale))
            report.append(f"{len(images)} images of {h}×{w} would exceed the memory limit of "
                          f"{max_pixels:,} values: downscaled to {h2}×{w2}.")
            h, w = h2, w2
        resized = sum(1 for s in sizes if s != (h, w))
        if resized:
            from_sizes = ", ".join(f"{a}×{b}" for (a, b), _ in Counter(s for s in sizes if s != (h, w)).most_common(3))
            report.append(f"{resized} of {len(images)} images resized to {h}×{w} (from {from_sizes}"
                          f"{' …' if len(set(sizes) - {(h, w)}) > 3 else ''}).")
        pixels = np.empty((len(images), h, w, channels), dtype=np.float64)
        for i, im in enumerate(images):
            if (im.height, im.width) != (h, w):
                im = im.resize((w, h), Image.Resampling.LANCZOS)
            pixels[i] = np.asarray(im, dtype=np.float64).reshape(h, w, channels) / 255.0
        has_labels = any(lab is not None for lab in labels)
        if has_labels and any(lab is None for lab in labels):
            report.append("Images directly in the folder (not in a sub-folder) are labelled '(none)'.")
        y = np.array([lab if lab is not None else "(none)" for lab in labels]) if has_labels else None
        if color == "grey":
            names = [f"px_{r}_{c}" for r in range(h) for c in range(w)]
            thumbs = pixels[..., 0]
        else:
            names = [f"px_{r}_{c}_{ch}" for r in range(h) for c in range(w) for ch in "rgb"]
            thumbs = pixels @ np.array([0.299, 0.587, 0.114])
        classes = f" in {len(set(labels))} classes (sub-folders)" if has_labels else ""
        report.insert(0, f"Read {len(images)} images of {h}×{w} {'grey levels' if channels == 1 else 'RGB'}"
                         f"{classes} from {path.name}.")
        if converted:
            report.append(f"{converted} image(s) with another colour mode were converted to {color}.")
        return Dataset(path.name, pixels.reshape(len(images), -1), labels=y, feature_names=names,
                       source=str(path), label_name="folder" if has_labels else None, report=report,
                       images=thumbs)


@hookimpl
def register_loaders():
    return [ImageFolderLoader()]
