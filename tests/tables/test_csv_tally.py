"""Line numbers of a plain CSV from the counts taken as pandas reads it (no second pass over the
file), and the scan as the fallback whenever those counts do not prove one record per line."""
import numpy as np
import pandas as pd
import pytest

import manifold_studio.tables.readers as readers
from manifold_studio.errors import DataError
from manifold_studio.tables import read_csv_table
from manifold_studio.tables.lines import TallyReader


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def numbers(n=50, d=4, seed=0):
    X = np.random.default_rng(seed).normal(size=(n, d)).round(6)
    return X, ",".join(f"x{j}" for j in range(d)) + "\n" + "".join(",".join(map(str, r)) + "\n" for r in X)


def test_plain_numbers_need_no_scan(tmp_path, monkeypatch):
    X, text = numbers()
    path = write(tmp_path, "plain.csv", text)

    def no_scan(*args, **kwargs):
        raise AssertionError("the file was scanned a second time")

    monkeypatch.setattr(readers, "record_lines", no_scan)
    table = read_csv_table(path).table
    np.testing.assert_array_equal(table.row_ids, np.arange(2, 52))
    got = np.column_stack([table.column(f"x{j}").values for j in range(4)])
    np.testing.assert_array_equal(got, pd.read_csv(path).to_numpy())
    np.testing.assert_array_equal(got, X)


def test_tally_counts_bytes_as_pandas_reads(tmp_path):
    path = write(tmp_path, "t.csv", "a;b\r\n1;2\r\n3;4")   # CRLF, no final line feed
    with TallyReader(path, ";") as fh:
        frame = pd.read_csv(fh, sep=";")
        assert (fh.newlines, fh.delimiters, fh.quoted) == (2, 3, False)
        np.testing.assert_array_equal(fh.record_lines(len(frame), 2, True), [2, 3])
        assert fh.record_lines(len(frame), 3, True) is None   # other widths are not proven


@pytest.mark.parametrize("text,line,found", [
    ("a,b,c\n1,2,3\n4,5,6,oops\n7,8,9\n", 3, 4),   # a long record with content
    ("a,b,c\n1,2,3\n4,5,6\n7,8\n", 4, 2),         # a short record (its last field missing)
    ("a,b,c\n1,2,3\n4,5\n6,7,8,9\n", 3, 2),       # one short and one long: the totals agree
])
def test_ragged_records_are_still_refused_by_line(tmp_path, text, line, found):
    with pytest.raises(DataError, match=f"line {line}: expected 3 fields .* found {found}"):
        read_csv_table(write(tmp_path, "r.csv", text))


def test_blank_lines_quotes_and_blank_extra_fields_fall_back_to_the_scan(tmp_path):
    t = read_csv_table(write(tmp_path, "b.csv", "a,b\n1,2\n\n3,4\n5,6,,\n")).table
    np.testing.assert_array_equal(t.row_ids, [2, 4, 5])
    np.testing.assert_array_equal(t.column("b").values, [2.0, 4.0, 6.0])
    t = read_csv_table(write(tmp_path, "q.csv", 'a,b,c\n1,2,"x\ny"\n3,4,z\n')).table
    np.testing.assert_array_equal(t.row_ids, [2, 4])


def test_a_short_row_estimate_grows_the_block(tmp_path, monkeypatch):
    X, text = numbers(n=40)
    plan = readers.plan_csv(write(tmp_path, "g.csv", text), scan=False)
    plan.row_estimate = 3
    monkeypatch.setattr(readers, "FAST_CHUNK_ROWS", 7)
    block, numeric, others, lines = readers._chunked_columns(plan)
    np.testing.assert_array_equal(block, X)
    np.testing.assert_array_equal(lines, np.arange(2, 42))
    assert numeric == [f"x{j}" for j in range(4)] and others is None


def test_spaces_opening_fields_past_the_sniffed_head_are_still_skipped(tmp_path):
    rows = "".join(f"{i}.000000,{i % 7}.500000,a\n" for i in range(16_000))   # > 256 KiB without spaces
    path = write(tmp_path, "s.csv", "x,y,z\n" + rows + "5, NA, b\n")
    table = read_csv_table(path).table
    assert np.isnan(table.column("y").values[-1]) and table.column("y").values[-2] == 15_999 % 7 + 0.5
    z = table.column("z")
    assert z.categories[z.values[-1]] == "b"
    with TallyReader(path, ",") as fh:
        fh.read()
        assert fh.opening_spaces == 2
