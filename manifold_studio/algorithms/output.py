"""Names and containers of an embedding's output, for scikit-learn pipelines:
``get_feature_names_out`` (``<id>0, <id>1, ...`` as scikit-learn's "pca0", "pca1") and
``set_output(transform="pandas")``, which makes ``transform`` and ``fit_transform`` return pandas
DataFrames with those columns and the input's index (what ``Pipeline.set_output`` asks of every
step). pandas is imported only when such output is asked for."""
from __future__ import annotations

import numpy as np

from manifold_studio.errors import InvalidParameterError

__all__ = ["OutputNamesMixin"]


class OutputNamesMixin:
    """For estimators with ``id``, ``n_features_in_`` and an ``embedding_`` (n, k)."""

    _OUTPUTS = ("default", "pandas")

    def get_feature_names_out(self, input_features=None) -> np.ndarray:
        """Names of the output coordinates: ``<id>0 ... <id>(k-1)`` (object array of str)."""
        self.check_is_fitted("get_feature_names_out")
        if input_features is not None:
            names = list(input_features)
            known = getattr(self, "feature_names_in_", None)
            if known is not None and list(known) != [str(v) for v in names]:
                raise ValueError("input_features is not equal to feature_names_in_.")
            if len(names) != self.n_features_in_:
                raise ValueError(f"input_features should have length equal to number of features "
                                 f"({self.n_features_in_}), got {len(names)}.")
        prefix = self.id or type(self).__name__.lower()
        return np.asarray([f"{prefix}{i}" for i in range(self.embedding_.shape[1])], dtype=object)

    def set_output(self, *, transform=None):
        """Container of ``transform`` / ``fit_transform`` results: "default" (numpy) or "pandas";
        None leaves it unchanged (scikit-learn's set_output API)."""
        if transform is None:
            return self
        if transform not in self._OUTPUTS:
            raise InvalidParameterError(f"Invalid output container {transform!r} for set_output: "
                                        f"allowed {', '.join(map(repr, self._OUTPUTS))}.")
        self._sklearn_output_config = {**getattr(self, "_sklearn_output_config", {}), "transform": transform}
        return self

    def _wrap_output(self, Z, X):
        if getattr(self, "_sklearn_output_config", {}).get("transform", "default") != "pandas":
            return Z
        import pandas as pd   # deferred: an optional container, only pandas output needs it

        index = getattr(X, "index", None)
        return pd.DataFrame(np.asarray(Z), columns=self.get_feature_names_out(),
                            index=index if index is not None and len(index) == len(Z) else None)
