"""Preparation step ``one_hot``: one indicator column per category of the categorical columns."""
from __future__ import annotations

import numpy as np

from manifold_studio.algorithms.params import Int, TextList
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.hookspecs import hookimpl


def _is_number(c) -> bool:
    return isinstance(c, (int, float, np.integer, np.floating)) and not isinstance(c, bool)


class OneHot(Preprocessor):
    id = "one_hot"
    name = "One-hot encoding"
    handles_categorical = True
    help = ("Replaces each categorical column (or each column named in columns, e.g. an integer code) "
            "by one 0/1 column per category, named column=category, so that methods based on distances "
            "do not read category codes as amounts. A missing or unseen category gives zeros. A column "
            "with more than max_categories categories is refused, naming it (raise the limit, or leave "
            "the column out).")
    params = (
        TextList("columns", None, "The columns to encode (comma-separated names); none for every "
                 "categorical column.", allow_none=True),
        Int("max_categories", 100, "The most categories a column may have.", low=2),
    )

    def _fit(self, X):
        names = self._p["columns"]
        if names is None:
            names = [c for c in self.columns_in_ if c in self.categories_in_]
            if not names:
                raise self._error("there is no categorical column to encode; name the columns to encode "
                                  "with columns=...")
        pos = self.positions_of(names, "columns")
        limit = int(self._p["max_categories"])
        encoded: dict[str, list] = {}
        for j, nm in zip(pos, names):
            if nm in self.categories_in_:
                cats = list(self.categories_in_[nm])
            else:
                col = X[:, j]
                cats = [float(v) for v in np.unique(col[~np.isnan(col)])]
            if len(cats) > limit:
                raise self._error(f"column '{nm}' has {len(cats):,} categories, more than max_categories={limit}: "
                                  "raise max_categories, or leave the column out (select_columns exclude=...).")
            encoded[nm] = cats
        self.encoded_ = encoded
        out_names, out_cats = [], {}
        for nm in self.columns_in_:
            if nm in encoded:
                out_names.extend(f"{nm}={_label(c)}" for c in encoded[nm])
            else:
                out_names.append(nm)
                if nm in self.categories_in_:
                    out_cats[nm] = self.categories_in_[nm]
        self.columns_out_, self.categories_out_ = out_names, out_cats

    def _transform(self, X):
        blocks = []
        for j, nm in enumerate(self.columns_in_):
            col = X[:, j:j + 1]
            if nm not in self.encoded_:
                blocks.append(col)
                continue
            cats = self.encoded_[nm]
            if all(_is_number(c) for c in cats):  # category values (numbers) are in X as themselves
                values = np.asarray([float(c) for c in cats])
            else:  # text categories are in X as their index
                values = np.arange(len(cats), dtype=np.float64)
            blocks.append((col == values[None, :]).astype(np.float64))
        return np.hstack(blocks) if blocks else np.zeros((X.shape[0], 0))


def _label(c) -> str:
    if isinstance(c, float) and c == int(c):
        return str(int(c))
    return str(c)


@hookimpl
def register_preprocessors():
    return [OneHot]
