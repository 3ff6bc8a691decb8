"""Built-in sample data sets (a plugin like any other).

Generated with numpy (the same recipes as scikit-learn's ``make_*`` functions, written here
so the application does not depend on scikit-learn), each with ``n_samples``, ``noise`` and
``random_state`` options and a fixed default seed, so a sample is the same on every machine:

========== ============================== ==============================================
id         data                           labels
========== ============================== ==============================================
swiss_roll 3-D rolled-up sheet            roll position t (continuous, colors the roll)
s_curve    3-D S-shaped sheet             position t along the S (continuous)
circles    two concentric circles, 2-D    circle (0 outer, 1 inner)
moons      two interleaving half moons    moon (0 upper, 1 lower)
blobs      isotropic Gaussian blobs       blob index
iris       Fisher's Iris, 150 × 4         species (setosa, versicolor, virginica)
digits     8 × 8 images of digits 0–9     digit (images kept for thumbnails)
========== ============================== ==============================================

Labels: ``Dataset.labels`` holds the class where the data has classes. The two manifolds
have none, so their labels are the continuous position along the manifold (the parameter
``t`` that unrolls it): the GUI then colors a map by it, and a good embedding shows it as
a smooth gradient. ``label_name`` says which kind it is.

Iris is the real data of Fisher (1936), as printed in his paper (also R's ``iris``), shipped
as ``data/iris.csv``. The digits are synthetic: a 5×7 pixel font, randomly shifted, thickened
and blurred into 8×8 images with grey levels 0–16 plus noise (in the spirit of the UCI
handwritten digits), so it is an image data set that is small, labelled and generated.
"""
from __future__ import annotations

import csv
import io
from importlib import resources

import numpy as np

from manifold_studio.algorithms.params import Float, Int
from manifold_studio.data import Dataset, Sample
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl

MAX_SAMPLES = 10_000_000


def _n_samples(default: int, low: int = 2) -> Int:
    return Int("n_samples", default, "Number of points to generate.", low=low, high=MAX_SAMPLES,
               label="Samples")


def _noise(default: float, help_: str = "Standard deviation of Gaussian noise added to each "
                                         "coordinate.") -> Float:
    return Float("noise", default, help_, low=0.0)


def _seed() -> Int:
    return Int("random_state", 0, "Seed of the random generator (none: different data every time).",
               low=0, high=2 ** 32 - 1, allow_none=True, label="Random seed")


def _sheet(name: str, t: np.ndarray, X: np.ndarray, noise: float, rng: np.random.Generator) -> Dataset:
    """A 2-D sheet in 3-D with Gaussian noise, labelled by its position t along the manifold."""
    X += noise * rng.standard_normal(X.shape)
    return Dataset(name, X, labels=t, feature_names=["x", "y", "z"],
                   label_name="position t (continuous)")


def _two_classes(name: str, first: np.ndarray, second: np.ndarray, noise: float,
                 rng: np.random.Generator, label_name: str) -> Dataset:
    """Two 2-D point sets labelled 0 and 1, with Gaussian noise, in random order."""
    X = np.vstack([first, second])
    y = np.repeat([0, 1], [len(first), len(second)])
    X += noise * rng.standard_normal(X.shape)
    order = rng.permutation(X.shape[0])
    return Dataset(name, X[order], labels=y[order], feature_names=["x", "y"], label_name=label_name)


class SwissRoll(Sample):
    id = "swiss_roll"
    name = "Swiss roll"
    description = ("A 2-D sheet rolled up in 3-D: the classic manifold-learning test. Labels are "
                   "the position t along the roll (continuous), so an unrolled map shows a gradient.")
    options = (_n_samples(1500), _noise(0.05), _seed())

    def _make(self, n_samples, noise, random_state):
        rng = np.random.default_rng(random_state)
        t = 1.5 * np.pi * (1 + 2 * rng.random(n_samples))
        height = 21 * rng.random(n_samples)
        X = np.column_stack([t * np.cos(t), height, t * np.sin(t)])
        return _sheet("Swiss roll", t, X, noise, rng)


class SCurve(Sample):
    id = "s_curve"
    name = "S-curve"
    description = ("A 2-D sheet bent into an S in 3-D. Labels are the position t along the S "
                   "(continuous).")
    options = (_n_samples(1500), _noise(0.05), _seed())

    def _make(self, n_samples, noise, random_state):
        rng = np.random.default_rng(random_state)
        t = 3 * np.pi * (rng.random(n_samples) - 0.5)
        height = 2 * rng.random(n_samples)
        X = np.column_stack([np.sin(t), height, np.sign(t) * (np.cos(t) - 1)])
        return _sheet("S-curve", t, X, noise, rng)


class Circles(Sample):
    id = "circles"
    name = "Concentric circles"
    description = ("Two concentric circles in 2-D, not linearly separable: a test for kernel and "
                   "spectral methods. Labels: 0 outer circle, 1 inner circle.")
    options = (_n_samples(500), _noise(0.05),
               Float("factor", 0.5, "Radius of the inner circle relative to the outer one.",
                     low=0.0, high=1.0, low_open=True, high_open=True), _seed())

    def _make(self, n_samples, noise, factor, random_state):
        rng = np.random.default_rng(random_state)
        n_out = n_samples // 2
        n_in = n_samples - n_out
        a_out = np.linspace(0, 2 * np.pi, n_out, endpoint=False)
        a_in = np.linspace(0, 2 * np.pi, n_in, endpoint=False)
        return _two_classes("Concentric circles", np.column_stack([np.cos(a_out), np.sin(a_out)]),
                            factor * np.column_stack([np.cos(a_in), np.sin(a_in)]), noise, rng, "circle")


class Moons(Sample):
    id = "moons"
    name = "Two moons"
    description = "Two interleaving half circles in 2-D. Labels: the moon (0 upper, 1 lower)."
    options = (_n_samples(500), _noise(0.08), _seed())

    def _make(self, n_samples, noise, random_state):
        rng = np.random.default_rng(random_state)
        n_up = n_samples // 2
        n_low = n_samples - n_up
        a_up = np.linspace(0, np.pi, n_up)
        a_low = np.linspace(0, np.pi, n_low)
        return _two_classes("Two moons", np.column_stack([np.cos(a_up), np.sin(a_up)]),
                            np.column_stack([1 - np.cos(a_low), 0.5 - np.sin(a_low)]), noise, rng,
                            "moon")


class Blobs(Sample):
    id = "blobs"
    name = "Gaussian blobs"
    description = ("Isotropic Gaussian clusters with centres drawn uniformly in a box: the easy "
                   "case for clustering. Labels: the blob each point was drawn from.")
    options = (_n_samples(600, low=1),
               Int("n_features", 2, "Number of dimensions.", low=1, high=10_000, label="Dimensions"),
               Int("centers", 3, "Number of blobs.", low=1, high=1000, label="Blobs"),
               Float("cluster_std", 1.0, "Standard deviation of each blob.", low=0.0,
                     label="Blob spread"),
               _noise(0.0, "Extra Gaussian noise added to every coordinate."),
               _seed())

    def _make(self, n_samples, n_features, centers, cluster_std, noise, random_state):
        rng = np.random.default_rng(random_state)
        means = rng.uniform(-10.0, 10.0, size=(centers, n_features))
        y = np.arange(n_samples) % centers
        rng.shuffle(y)
        X = means[y] + (cluster_std + 0.0) * rng.standard_normal((n_samples, n_features))
        if noise:
            X += noise * rng.standard_normal(X.shape)
        return Dataset("Gaussian blobs", X, labels=y,
                       feature_names=[f"x{i + 1}" for i in range(n_features)], label_name="blob")


def read_iris() -> Dataset:
    """Fisher's Iris data, shipped as ``data/iris.csv`` in this package."""
    try:
        text = resources.files(__package__).joinpath("data", "iris.csv").read_text(encoding="utf-8")
    except (OSError, ModuleNotFoundError) as exc:
        raise DataError(f"The Iris data file is missing from the installation: {exc}") from None
    rows = list(csv.reader(io.StringIO(text)))
    header, body = rows[0], [r for r in rows[1:] if r]
    X = np.array([[float(v) for v in r[:4]] for r in body])
    species = np.array([r[4] for r in body], dtype=str)
    return Dataset("Iris", X, labels=species, feature_names=header[:4], label_name=header[4])


class Iris(Sample):
    id = "iris"
    name = "Iris (Fisher)"
    description = ("Fisher's Iris flowers: 150 samples, 4 measurements (sepal and petal length and "
                   "width, cm), labelled by species (setosa, versicolor, virginica).")
    options = ()

    def _make(self):
        return read_iris()


# A 5×7 pixel font for the digits 0-9 ('#' = ink).
_FONT = {
    0: [" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "],
    1: ["  #  ", " ##  ", "# #  ", "  #  ", "  #  ", "  #  ", "#####"],
    2: [" ### ", "#   #", "    #", "   # ", "  #  ", " #   ", "#####"],
    3: ["#####", "   # ", "  #  ", "   # ", "    #", "#   #", " ### "],
    4: ["   # ", "  ## ", " # # ", "#  # ", "#####", "   # ", "   # "],
    5: ["#####", "#    ", "#### ", "    #", "    #", "#   #", " ### "],
    6: ["  ## ", " #   ", "#    ", "#### ", "#   #", "#   #", " ### "],
    7: ["#####", "    #", "   # ", "  #  ", " #   ", " #   ", " #   "],
    8: [" ### ", "#   #", "#   #", " ### ", "#   #", "#   #", " ### "],
    9: [" ### ", "#   #", "#   #", " ####", "    #", "   # ", " ##  "],
}
_GLYPHS = np.array([[[c == "#" for c in row] for row in _FONT[d]] for d in range(10)], dtype=float)


def make_digit_images(n_samples: int, noise: float, rng: np.random.Generator):
    """(images (n, 8, 8) with grey levels 0..16, labels (n,)) from the 5×7 font."""
    y = np.arange(n_samples) % 10
    rng.shuffle(y)
    images = np.zeros((n_samples, 8, 8))
    dx = rng.integers(0, 4, n_samples)  # 8 - 5 + 1 horizontal positions
    dy = rng.integers(0, 2, n_samples)  # 8 - 7 + 1 vertical positions
    for i in range(n_samples):
        images[i, dy[i]:dy[i] + 7, dx[i]:dx[i] + 5] = _GLYPHS[y[i]]
    # random stroke thickening (dilation to the right) and a light blur
    thick = rng.random(n_samples) < 0.4
    images[thick, :, 1:] = np.maximum(images[thick, :, 1:], 0.6 * images[thick, :, :-1])
    blurred = images.copy()
    blurred[:, 1:, :] += 0.15 * images[:, :-1, :]
    blurred[:, :-1, :] += 0.15 * images[:, 1:, :]
    blurred[:, :, 1:] += 0.15 * images[:, :, :-1]
    blurred[:, :, :-1] += 0.15 * images[:, :, 1:]
    ink = rng.uniform(0.7, 1.0, (n_samples, 1, 1))
    images = 16 * ink * blurred / blurred.max(axis=(1, 2), keepdims=True)
    images += noise * rng.standard_normal(images.shape)
    return np.clip(np.round(images), 0, 16), y


class Digits(Sample):
    id = "digits"
    name = "Digits (8×8 images)"
    description = ("Synthetic 8×8 images of the digits 0–9 (a pixel font, randomly shifted, "
                   "thickened and blurred, grey levels 0–16 plus noise): 64 features per image, "
                   "labelled by digit; the images are kept for thumbnails.")
    options = (_n_samples(1000, low=1), _noise(1.0, "Standard deviation of the pixel noise "
                                                    "(grey levels, 0–16 scale)."), _seed())

    def _make(self, n_samples, noise, random_state):
        rng = np.random.default_rng(random_state)
        images, y = make_digit_images(n_samples, noise, rng)
        names = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
        return Dataset("Digits", images.reshape(n_samples, 64), labels=y, feature_names=names,
                       label_name="digit", images=images)


@hookimpl
def register_samples():
    return [SwissRoll(), SCurve(), Circles(), Moons(), Blobs(), Iris(), Digits()]
