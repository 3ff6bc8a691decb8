"""The table's search joins conditions with and / or (issue 23: 'proline > 1000 and
flavanoids > 3' was refused)."""
import numpy as np
import pytest

from manifold_studio.tables.dataset_columns import Column
from manifold_studio.tables.search import SearchError, search_rows

rng = np.random.default_rng(0)
PROLINE = rng.uniform(300, 1700, size=200)
FLAV = rng.uniform(0.3, 5.0, size=200)
KIND = np.array(["black and white", "colour"] * 100, dtype=object)
COLS = [Column("proline", PROLINE, "feature"), Column("flavanoids", FLAV, "feature"), Column("kind", KIND, "label")]


def test_and_or_and_their_precedence():
    both = search_rows("proline > 1000 and flavanoids > 3", COLS, 200)
    assert both.mask.tolist() == ((PROLINE > 1000) & (FLAV > 3)).tolist() and both.count > 0
    either = search_rows("proline > 1600 or flavanoids < 0.5", COLS, 200)
    assert either.mask.tolist() == ((PROLINE > 1600) | (FLAV < 0.5)).tolist()
    mixed = search_rows("proline > 1500 and flavanoids > 3 or kind == colour", COLS, 200)
    expected = ((PROLINE > 1500) & (FLAV > 3)) | (KIND == "colour")
    assert mixed.mask.tolist() == expected.tolist() and " or " in mixed.description
    symbols = search_rows("proline > 1000 & flavanoids > 3", COLS, 200)
    assert symbols.mask.tolist() == both.mask.tolist()
    rows = search_rows("10-20 and flavanoids > 3", COLS, 200)
    assert rows.mask.tolist() == ((np.arange(200) >= 10) & (np.arange(200) <= 20) & (FLAV > 3)).tolist()


def test_a_label_with_the_word_and_is_still_a_text_search():
    res = search_rows("black and white", COLS, 200)
    assert res.mask.tolist() == (KIND == "black and white").tolist()


def test_a_bad_part_is_named():
    with pytest.raises(SearchError, match="numeric"):
        search_rows("proline > 1000 and flavanoids > lots", COLS, 200)
