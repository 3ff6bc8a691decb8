"""Data sets and the loader / sample contracts (Qt-free).

A :class:`Dataset` is what every loader returns and every algorithm consumes: a name, an
(n, d) float matrix, optional labels, optional feature names, where it came from and the
load report (columns left out, rows with missing values, ...).

Loader plugins subclass :class:`Loader`; sample data plugins subclass :class:`Sample`.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

import numpy as np

from manifold_studio.algorithms.params import Param, validate_params
from manifold_studio.errors import DataError


@dataclass
class Dataset:
    name: str
    X: np.ndarray
    labels: np.ndarray | None = None
    feature_names: list[str] | None = None
    source: str = ""
    label_name: str | None = None
    #: human-readable notes from loading (e.g. "column 'species' is not numeric: left out")
    report: list[str] = field(default_factory=list)
    #: optional per-row images (n, h, w) for thumbnails
    images: np.ndarray | None = None

    def __post_init__(self):
        X = np.asarray(self.X, dtype=np.float64)
        if X.ndim != 2:
            raise DataError(f"Data set '{self.name}': the matrix must be 2-D, got shape {X.shape}.")
        self.X = X
        if self.labels is not None:
            labels = np.asarray(self.labels)
            if labels.shape != (X.shape[0],):
                raise DataError(f"Data set '{self.name}': {labels.shape[0] if labels.ndim else 0} labels "
                                f"for {X.shape[0]} rows.")
            self.labels = labels
        if self.feature_names is not None:
            self.feature_names = [str(f) for f in self.feature_names]
            if len(self.feature_names) != X.shape[1]:
                raise DataError(f"Data set '{self.name}': {len(self.feature_names)} feature names "
                                f"for {X.shape[1]} columns.")

    @property
    def n_samples(self) -> int:
        return int(self.X.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.X.shape[1])

    @property
    def has_labels(self) -> bool:
        return self.labels is not None

    def describe(self) -> str:
        lab = f", labels: {self.label_name or 'yes'}" if self.has_labels else ", no labels"
        return f"{self.name}: {self.n_samples:,} × {self.n_features}{lab}"

    def subset(self, rows, name: str | None = None) -> "Dataset":
        rows = np.asarray(rows)
        return Dataset(name or self.name, self.X[rows],
                       None if self.labels is None else self.labels[rows],
                       self.feature_names, self.source, self.label_name, [],
                       None if self.images is None else self.images[rows])


class Loader:
    """A file loader plugin: declares the extensions it reads and its options."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    #: lower-case extensions with the dot, e.g. (".csv", ".tsv")
    extensions: ClassVar[tuple[str, ...]] = ()
    #: options (label column, delimiter, ...) as constraints, like algorithm parameters
    options: ClassVar[tuple[Param, ...]] = ()

    def can_load(self, path: Path) -> bool:
        return Path(path).suffix.lower() in self.extensions

    def load(self, path, **options) -> Dataset:
        path = Path(path)
        opts = {p.name: p.default for p in self.options}
        opts.update(validate_params(self.options, options))
        if not path.exists():
            raise DataError(f"File not found: {path}")
        if path.is_file() and path.stat().st_size == 0:
            raise DataError(f"{path.name} is empty (0 bytes).")
        return self._load(path, **opts)

    def _load(self, path: Path, **options) -> Dataset:  # pragma: no cover - abstract
        raise NotImplementedError

    def iter_chunks(self, path, chunk_rows: int = 100_000, **options):
        """The file as consecutive :class:`Dataset` chunks of at most ``chunk_rows`` rows, with the
        same columns, for files larger than memory (``manifold_studio.extend.out_of_core``). The first
        chunk's report holds the load remarks. This default loads the whole file and slices it;
        loaders that can read part of a file (CSV, .npy) override it to keep memory bounded."""
        ds = self.load(path, **options)
        step = max(1, int(chunk_rows))
        for start in range(0, max(ds.n_samples, 1), step):
            part = ds.subset(np.arange(start, min(start + step, ds.n_samples)))
            part.report = list(ds.report) if start == 0 else []
            yield part


class Sample:
    """A built-in sample data set, generated or shipped with the plugin."""

    id: ClassVar[str] = ""
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: generator options such as n_samples, noise, random_state
    options: ClassVar[tuple[Param, ...]] = ()

    def load(self, **options) -> Dataset:
        opts = {p.name: p.default for p in self.options}
        opts.update(validate_params(self.options, options))
        ds = self._make(**opts)
        ds.source = f"sample:{self.id}"
        return ds

    def _make(self, **options) -> Dataset:  # pragma: no cover - abstract
        raise NotImplementedError
