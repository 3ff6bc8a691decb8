"""Line numbers and field counts of a delimited text file, for row ids and ragged-row messages.

pandas' C parser reads the values; this module finds, for every non-blank record, the line of the
file it starts on (the default row id, and what every message quotes) and checks that no record
has fewer fields than the header (pandas would silently pad it) or more non-blank ones.

Plain 8-bit or UTF-8 files without quote characters are scanned in blocks with NumPy (a fraction
of the time pandas takes); quoted fields (which may hold delimiters and line breaks), UTF-16 and
whitespace-separated files go through Python's ``csv`` module.

:class:`TallyReader` avoids that scan altogether in the common case: pandas reads the file through
it, and it counts the line feeds and delimiters (and notes quote characters) of the bytes as they
pass, so that a file whose every line is one record with the header's field count gets its line
numbers without a second pass over the file.
"""
from __future__ import annotations

import csv
import io

import numpy as np

from manifold_studio.errors import DataError

_BLOCK = 1 << 23

__all__ = ["record_lines", "TallyReader", "byte_scannable"]

#: the encodings whose delimiter and line-feed bytes can be counted as bytes
_BYTE_ENCODINGS = ("utf-8-sig", "latin-1")


def byte_scannable(encoding: str, char: str | None) -> bool:
    """Whether a file in ``encoding`` with delimiter ``char`` can be scanned as bytes."""
    return char is not None and encoding in _BYTE_ENCODINGS


class TallyReader(io.BufferedReader):
    """A binary file that counts, in the bytes read from it, the line feeds, the delimiters and
    the spaces that open a field (what pandas' ``skipinitialspace`` would skip), and notes
    whether a quote character occurs (fast counts of data already in cache)."""

    def __init__(self, path, char: str):
        super().__init__(io.FileIO(path, "rb"), buffer_size=1 << 20)
        self._delim = ord(char)
        self.newlines = self.delimiters = self.opening_spaces = 0
        self.quoted = False
        self._last = b""
        self._field_start = True   # the next byte opens a field (the file's first byte does)

    def _tally(self, data: bytes) -> bytes:
        if data:   # (numpy counts bytes several times faster than bytes.count)
            a = np.frombuffer(data, dtype=np.uint8)
            feeds, delims = a == 10, a == self._delim
            self.newlines += int(np.count_nonzero(feeds))
            self.delimiters += int(np.count_nonzero(delims))
            if b" " in data:
                spaces = a == 32
                opens = feeds[:-1] | delims[:-1]
                self.opening_spaces += int(np.count_nonzero(opens & spaces[1:])) + int(self._field_start and spaces[0])
            self._field_start = bool(feeds[-1] or delims[-1])
            self.quoted = self.quoted or b'"' in data
            self._last = data[-1:]
        return data

    def read(self, size=-1):
        return self._tally(super().read(size))

    def read1(self, size=-1):
        return self._tally(super().read1(size))

    def readinto(self, b):
        n = super().readinto(b)
        if n:
            self._tally(bytes(memoryview(b)[:n]))
        return n

    def record_lines(self, rows: int, fields: int, has_header: bool) -> np.ndarray | None:
        """After the whole file was read: the line numbers of its ``rows`` records when every line
        is one record of ``fields`` fields, else None (scan the file with :func:`record_lines`).
        The caller must know that no record was short (pandas pads short records with missing
        values): then equal totals mean no line has more fields either, and no blank lines."""
        if self.quoted or fields < 1:
            return None
        total = self.newlines + (1 if self._last not in (b"", b"\n") else 0)
        if total != rows + bool(has_header) or self.delimiters != (fields - 1) * total:
            return None
        start = 2 if has_header else 1
        return np.arange(start, start + rows, dtype=np.int64)


def _ragged(where: str, line: int, expected: int, found: int, has_header: bool) -> DataError:
    what = "the header" if has_header else "the first row"
    return DataError(f"{where}, line {line}: expected {expected} fields (as in {what}) but found {found}; "
                     "the file is ragged.")


def _scan_bytes(path, char: str):
    """(line numbers, field counts, None) of the non-blank lines, or None when the file holds a
    quote character. A line with a delimiter is never blank; the others are checked for content."""
    delim = ord(char)
    lines_out, fields_out = [], []
    done = 0  # lines completed before the current block
    carry = b""
    with open(path, "rb") as fh:
        while True:
            chunk = fh.read(_BLOCK)
            last = not chunk
            buf = carry + chunk if not last else carry + b"\n"
            if buf.find(b'"') >= 0:
                return None
            a = np.frombuffer(buf, dtype=np.uint8)
            nl = np.flatnonzero(a == 10)
            if not len(nl):
                carry = buf
                continue
            starts = np.empty(len(nl), dtype=np.int64)
            starts[0] = 0
            starts[1:] = nl[:-1] + 1
            dpos = np.flatnonzero(a[:nl[-1] + 1] == delim)
            fields = np.searchsorted(dpos, nl) - np.searchsorted(dpos, starts) + 1
            nonblank = fields > 1
            for k in np.flatnonzero(~nonblank):  # lines without a delimiter: blank unless they hold text
                nonblank[k] = bool(buf[starts[k]:nl[k]].strip())
            numbers = np.arange(done + 1, done + len(nl) + 1, dtype=np.int64)
            lines_out.append(numbers[nonblank])
            fields_out.append(fields[nonblank])
            done += len(nl)
            carry = buf[nl[-1] + 1:]
            if last:
                break
    if not lines_out:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), None
    return np.concatenate(lines_out), np.concatenate(fields_out), None


def _scan_text(path, encoding: str, char: str | None):
    lines, fields, trimmed = [], [], []
    with open(path, encoding=encoding, newline="", errors="replace") as fh:
        if char is None:
            for i, ln in enumerate(fh.read().splitlines(), 1):
                n = len(ln.split())
                if n:
                    lines.append(i)
                    fields.append(n)
                    trimmed.append(n)
        else:
            reader = csv.reader(fh, delimiter=char, skipinitialspace=True)
            start = 1
            try:
                for rec in reader:
                    if rec and (len(rec) > 1 or rec[0].strip()):
                        lines.append(start)
                        fields.append(len(rec))
                        trimmed.append(len(rec) - _trailing_blanks(rec))
                    start = reader.line_num + 1
            except csv.Error as exc:
                raise DataError(f"{path.name}, line {reader.line_num}: cannot be read as CSV ({exc}).") from None
    return (np.asarray(lines, dtype=np.int64), np.asarray(fields, dtype=np.int64),
            np.asarray(trimmed, dtype=np.int64))


def _trailing_blanks(rec: list[str]) -> int:
    k = 0
    for f in reversed(rec[1:]):
        if f.strip():
            break
        k += 1
    return k


def _extra_fields_blank(path, encoding: str, char: str, line_numbers: set[int], expected: int) -> int | None:
    """The first of ``line_numbers`` whose fields past ``expected`` are not all blank, or None."""
    with open(path, encoding=encoding, newline="", errors="replace") as fh:
        for i, ln in enumerate(fh, 1):
            if i in line_numbers:
                extra = ln.rstrip("\r\n").split(char)[expected:]
                if any(f.strip() for f in extra):
                    return i
    return None


def record_lines(path, encoding: str, char: str | None, has_header: bool, where: str,
                 careful: bool = False) -> np.ndarray:
    """The starting line of every data record (header excluded), after checking that each
    record has as many fields as the header (blank trailing fields are allowed). ``careful``
    skips the NumPy scan (for files whose lines end in a lone carriage return)."""
    scanned = None
    if byte_scannable(encoding, char) and not careful:
        scanned = _scan_bytes(path, char)
        fast = scanned is not None
    if scanned is None:
        scanned, fast = _scan_text(path, encoding, char), False
    lines, fields, trimmed = scanned
    if not len(lines):
        return lines
    expected = int(fields[0])
    short = np.flatnonzero(fields < expected)
    long_ = np.flatnonzero((fields if trimmed is None else trimmed) > expected)
    if len(long_) and fast:
        bad_line = _extra_fields_blank(path, encoding, char, set(lines[long_].tolist()), expected)
        long_ = long_[lines[long_] == bad_line] if bad_line is not None else long_[:0]
    first_bad = min([*short[:1].tolist(), *long_[:1].tolist()], default=None)
    if first_bad is not None:
        raise _ragged(where, int(lines[first_bad]), expected, int(fields[first_bad]), has_header)
    return lines[1:] if has_header else lines
