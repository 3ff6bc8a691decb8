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
digits     UCI digits, 1,797 8 × 8 images digit (images kept for thumbnails)
wine       UCI wine, 178 × 13             cultivar (1, 2, 3)
breast_    Wisconsin diagnostic breast    diagnosis (malignant, benign)
cancer     cancer, 569 × 30
penguins   Palmer penguins, 344 × 4       species; island, sex, year as meta columns
========== ============================== ==============================================

Labels: ``Dataset.labels`` holds the class where the data has classes. The two manifolds
have none, so their labels are the continuous position along the manifold (the parameter
``t`` that unrolls it): the GUI then colors a map by it, and a good embedding shows it as
a smooth gradient. ``label_name`` says which kind it is.

Iris is the real data of Fisher (1936), as printed in his paper (also R's ``iris``), shipped
as ``data/iris.csv``. The digits, wine, breast cancer and penguins are real data shipped in
``data/`` (sources, citations and licences: resources/README.md); wine, breast cancer and the
penguins are read through the table reader, so they carry their typed columns, roles and row ids
(``Dataset.table``); nothing is fetched at run time.
"""
from __future__ import annotations

import csv
import gzip
import io
from importlib import resources

import numpy as np

from manifold_studio.algorithms.params import Choice, Float, Int
from manifold_studio.data import Dataset, Sample
from manifold_studio.errors import DataError
from manifold_studio.hookspecs import hookimpl
from manifold_studio.tables.readers import read_csv_table

MAX_SAMPLES = 10_000_000
N_DIGITS = 1797


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


def _data_file(name: str):
    """A context manager giving a real path to ``data/<name>`` shipped in this package."""
    return resources.as_file(resources.files(__package__).joinpath("data", name))


def read_digits(n_samples: int | None = None) -> Dataset:
    """The UCI optical-recognition handwritten digits (1,797 8×8 images, grey levels 0–16)."""
    try:
        with _data_file("digits.csv.gz") as path, gzip.open(path, "rt") as fh:
            data = np.loadtxt(fh, delimiter=",")
    except (OSError, ModuleNotFoundError, ValueError) as exc:
        raise DataError(f"The digits data file is missing or damaged in the installation: {exc}") from None
    if n_samples is not None:
        data = data[:n_samples]
    images = data[:, :64].reshape(-1, 8, 8)
    names = [f"pixel_{r}_{c}" for r in range(8) for c in range(8)]
    return Dataset("Digits", data[:, :64], labels=data[:, 64].astype(np.int64), feature_names=names,
                   label_name="digit", images=images)


class Digits(Sample):
    id = "digits"
    name = "Digits (UCI, 8×8 images)"
    description = ("The UCI optical-recognition handwritten digits: 1,797 8×8 images of the digits 0–9 "
                   "written by 43 people (grey levels 0–16), 64 features per image, labelled by digit; "
                   "the images are kept for thumbnails.")
    options = (Int("n_samples", N_DIGITS, f"How many of the {N_DIGITS:,} images to load (the first ones, "
                   "in the file's order, which mixes the digits).", low=1, high=N_DIGITS),)

    def _make(self, n_samples):
        return read_digits(n_samples)


def read_table_sample(file_name: str, title: str, label: str, missing: str = "drop", roles=None) -> Dataset:
    """A shipped CSV read through the table reader (typed columns, roles, row ids)."""
    try:
        with _data_file(file_name) as path:
            result = read_csv_table(path, label_column=label, roles=roles)
    except (OSError, ModuleNotFoundError) as exc:
        raise DataError(f"The {title} data file is missing from the installation: {exc}") from None
    ds = Dataset.from_table(result.table, name=title, missing=missing, detail=result.detail)
    return ds


_MISSING = Choice("missing", "drop", "Rows with a missing measurement: 'drop' them (reported), or 'keep' "
                  "them as NaN for an impute step.", choices=("drop", "keep"))


class Wine(Sample):
    id = "wine"
    name = "Wine (UCI)"
    description = ("178 Italian wines from three cultivars: 13 chemical measurements on very different "
                   "scales (proline in hundreds, hue about 1), labelled by cultivar (1, 2, 3): a test of "
                   "scaling the columns before distances.")
    options = ()

    def _make(self):
        return read_table_sample("wine.csv", "Wine", "cultivar")


class BreastCancer(Sample):
    id = "breast_cancer"
    name = "Breast cancer (Wisconsin diagnostic)"
    description = ("569 breast masses: 30 features of the cell nuclei in a fine-needle aspirate image "
                   "(mean, error and worst of radius, texture, area, ...), labelled malignant or benign.")
    options = ()

    def _make(self):
        return read_table_sample("breast_cancer.csv", "Breast cancer", "diagnosis")


class Penguins(Sample):
    id = "penguins"
    name = "Palmer penguins"
    description = ("344 penguins of three species on three islands of the Palmer Archipelago: four body "
                   "measurements as features, species as label, island, sex and year as meta columns; two "
                   "rows lack every measurement and eleven the sex.")
    options = (_MISSING,)

    def _make(self, missing):
        return read_table_sample("penguins.csv", "Palmer penguins", "species", missing)


@hookimpl
def register_samples():
    return [SwissRoll(), SCurve(), Circles(), Moons(), Blobs(), Iris(), Digits(), Wine(), BreastCancer(),
            Penguins()]
