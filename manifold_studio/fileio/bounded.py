"""Bounded reading of NumPy files (``.npy``, and the members of ``.npz`` archives: data files,
model files, project files): nothing is allocated before the declared sizes have been checked.

Every array is read in two steps. First its header (a few hundred bytes) gives its shape and
data type; the size they imply is compared with

- the bytes really present (the ``.npy`` file's size, or the member's uncompressed size in the
  archive): a header that declares more than the file holds is a lie and is refused by name;
- the load limit (:func:`max_load_bytes`), for one array and for all arrays of one file together;
- for a compressed member larger than :data:`BOMB_FLOOR_BYTES`, the compression ratio (at most
  :data:`MAX_COMPRESSION_RATIO`): a few megabytes that inflate to gigabytes are refused.

Only then is the array read; running out of memory anyway becomes a :class:`DataError` that says
how much was asked for.

**The load limit** is, in order of precedence: the environment variable
``MANIFOLD_STUDIO_MAX_LOAD_BYTES`` (bytes, or with a suffix ``K``, ``M``, ``G``, ``T``: ``64G``);
the module constant :data:`MAX_LOAD_BYTES` when a program sets it; otherwise half of the machine's
physical memory (:data:`FALLBACK_LOAD_BYTES`, 8 GiB, where that cannot be read).

Non-regular files (FIFOs, devices, sockets) are refused before they are opened
(:func:`check_regular_file`): opening a FIFO for reading would block until a writer comes.
"""
from __future__ import annotations

import os
import re
import stat
import zipfile
import zlib
from pathlib import Path

import numpy as np

from manifold_studio.errors import DataError

ENV_VAR = "MANIFOLD_STUDIO_MAX_LOAD_BYTES"
#: the load limit in bytes when a program sets one (the environment variable wins); None: the default
MAX_LOAD_BYTES: int | None = None
#: the default limit is this fraction of the physical memory...
DEFAULT_RAM_FRACTION = 0.5
#: ...or this many bytes where the physical memory cannot be read
FALLBACK_LOAD_BYTES = 8 * 2**30
#: a compressed member that inflates beyond this size...
BOMB_FLOOR_BYTES = 64 * 2**20
#: ...may inflate at most this many times its compressed size
MAX_COMPRESSION_RATIO = 200
#: how many names a message lists before "and N more"
LIST_LIMIT = 8
#: the most members an archive may have
MAX_MEMBERS = 100_000
#: the longest .npy header read (numpy's own default limit)
MAX_HEADER_BYTES = 10_000

#: what reading a damaged archive can raise (zipfile raises NotImplementedError for an unknown
#: compression method: one flipped header bit is enough)
ARCHIVE_ERRORS = (OSError, EOFError, zipfile.BadZipFile, zlib.error, NotImplementedError)

__all__ = ["max_load_bytes", "human_bytes", "name_list", "check_regular_file", "npy_header",
           "check_npy_file", "BoundedNpz", "out_of_memory", "ENV_VAR", "MAX_LOAD_BYTES"]

_SUFFIXES = {"": 1, "K": 2**10, "M": 2**20, "G": 2**30, "T": 2**40}


def _physical_memory() -> int | None:
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return None


def max_load_bytes() -> int:
    """The most bytes one file may ask for (see the module's description)."""
    text = os.environ.get(ENV_VAR, "").strip()
    if text:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*([KMGT]?)i?B?", text, re.I)
        if not match or float(match.group(1)) <= 0:
            raise DataError(f"The environment variable {ENV_VAR}={text[:40]!r} is not a size: give bytes "
                            "or a number with K, M, G or T (e.g. 16G).")
        return int(float(match.group(1)) * _SUFFIXES[match.group(2).upper()])
    if MAX_LOAD_BYTES is not None:
        return int(MAX_LOAD_BYTES)
    ram = _physical_memory()
    return int(ram * DEFAULT_RAM_FRACTION) if ram else FALLBACK_LOAD_BYTES


def human_bytes(n: int | float) -> str:
    """``1536`` -> ``'1.5 KiB'``."""
    n = float(n)
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if abs(n) < 1024 or unit == "EiB":
            return f"{int(n):,} bytes" if unit == "bytes" else f"{n:,.1f} {unit}"
        n /= 1024
    return f"{n:,.1f} EiB"  # pragma: no cover


def name_list(names, limit: int = LIST_LIMIT, width: int = 40) -> str:
    """``'a', 'b', 'c' and 17 more``: a bounded listing (each name cut to ``width`` characters)."""
    names = list(names)
    shown = ", ".join(repr(str(n)[:width]) for n in names[:limit])
    return shown + (f" and {len(names) - limit:,} more" if len(names) > limit else "")


def check_regular_file(path, what: str = "file") -> Path:
    """``path`` if it is a regular file; a FIFO, device or socket is refused at once (without
    opening it). A missing path or a folder is left to the caller's own message."""
    path = Path(path)
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return path
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return path
    kind = ("a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device" if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
            else "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
    raise DataError(f"{path.name} is {kind}, not a regular {what}: give a file saved on disk.")


def out_of_memory(where: str, asked: int | None, exc: BaseException | None = None) -> DataError:
    """The :class:`DataError` for a MemoryError while loading ``where``."""
    # numpy says "Unable to allocate 29.1 TiB for an array with shape ...": that amount first
    match = re.search(r"allocate ([\d.,]+ ?[KMGTPE]?i?B)", str(exc or ""))
    amount = (match.group(1) if match else human_bytes(asked) if asked is not None
              else "more memory than is available")
    return DataError(f"{where}: not enough memory to load it ({amount} asked for, load limit "
                     f"{human_bytes(max_load_bytes())}).")


def npy_header(fh, where: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, header_bytes)`` read from the start of an open .npy stream; the size of
    the data it declares is ``prod(shape) * dtype.itemsize`` (see :func:`declared_bytes`)."""
    fmt = np.lib.format
    try:
        version = fmt.read_magic(fh)
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _fortran, dtype = reader(fh, max_header_size=MAX_HEADER_BYTES)
        offset = fh.tell()
    except (ValueError, SyntaxError, TypeError, *ARCHIVE_ERRORS) as exc:
        raise DataError(f"{where} is not a readable NumPy array (its header is damaged: "
                        f"{str(exc).splitlines()[0][:120] if str(exc) else type(exc).__name__}).") from None
    return tuple(int(s) for s in shape), dtype, offset


def declared_bytes(shape, dtype) -> int:
    """The data size a header declares, in exact integers (numpy's product could overflow)."""
    count = 1
    for s in shape:
        count *= int(s)
    return count * (dtype.itemsize if not dtype.hasobject else 0)


def _check_declared(where: str, shape, dtype, offset: int, available: int, limit: int) -> int:
    if dtype.hasobject:
        return 0  # refused by numpy itself (allow_pickle=False), with the caller's message
    size = declared_bytes(shape, dtype)
    if size > max(available - offset, 0):
        raise DataError(f"{where} is truncated or forged: its header declares shape {_shape(shape)} of "
                        f"{dtype.str} ({human_bytes(size)}), but it holds only "
                        f"{human_bytes(max(available - offset, 0))} of data.")
    if size > limit:
        raise DataError(f"{where}: it would need {human_bytes(size)} (shape {_shape(shape)}), more than the "
                        f"load limit of {human_bytes(limit)} (set {ENV_VAR} to raise it).")
    return size


def _shape(shape) -> str:
    text = "(" + ", ".join(f"{s:,}" for s in shape) + ("," if len(shape) == 1 else "") + ")"
    return text if len(text) <= 80 else text[:77] + "...)"


def check_npy_file(path: Path, where: str | None = None) -> tuple[tuple[int, ...], np.dtype, int]:
    """Check a .npy file's header against its size and the load limit before anything is
    allocated; returns ``(shape, dtype, declared bytes)``."""
    path = Path(path)
    where = where or path.name
    check_regular_file(path)
    with open(path, "rb") as fh:
        shape, dtype, offset = npy_header(fh, where)
    size = _check_declared(where, shape, dtype, offset, path.stat().st_size, max_load_bytes())
    return shape, dtype, size


class BoundedNpz:
    """An open ``.npz`` archive whose members are read only after their declared sizes passed
    the checks. ``files`` lists the member names (without ``.npy``), as ``np.load`` does.

    ::

        with BoundedNpz(path, "project") as npz:
            arr = npz.load("X")        # DataError naming the member on a lie, a bomb, no memory
    """

    def __init__(self, path, what: str = "file", source=None):
        self.path = Path(path)
        self.name = self.path.name
        self.what = what
        try:
            self._zip = zipfile.ZipFile(source if source is not None else self.path)
            infos = self._zip.infolist()
        except (ValueError, *ARCHIVE_ERRORS) as exc:
            raise DataError(f"{self.name} is not a readable {what}: {_first_line(exc)}") from None
        if len(infos) > MAX_MEMBERS:
            self._zip.close()
            raise DataError(f"{self.name} holds {len(infos):,} members, more than the {MAX_MEMBERS:,} a "
                            f"{what} may have.")
        self._infos: dict[str, zipfile.ZipInfo] = {}
        for info in infos:
            key = info.filename[:-4] if info.filename.endswith(".npy") else info.filename
            self._infos.setdefault(key, info)
        self.files = list(self._infos)
        self.limit = max_load_bytes()
        self._loaded = 0

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self._zip.close()

    def __contains__(self, key):
        return key in self._infos

    def where(self, key: str) -> str:
        return f"{self.name}: member '{str(key)[:60]}'"

    def header(self, key: str) -> tuple[tuple[int, ...], np.dtype, int]:
        """``(shape, dtype, declared bytes)`` of a member, checked against the archive's own
        record of its size, the compression ratio and the load limit; nothing is allocated."""
        info = self._infos[key]
        where = self.where(key)
        try:
            with self._zip.open(info) as fh:
                shape, dtype, offset = npy_header(fh, where)
        except DataError:
            raise
        except (RuntimeError, ValueError, *ARCHIVE_ERRORS) as exc:
            raise DataError(f"{where} is damaged ({_first_line(exc)}).") from None
        size = _check_declared(where, shape, dtype, offset, info.file_size, self.limit)
        if (info.compress_type != zipfile.ZIP_STORED and info.file_size > BOMB_FLOOR_BYTES
                and info.file_size > MAX_COMPRESSION_RATIO * max(info.compress_size, 1)):
            raise DataError(f"{where} inflates from {human_bytes(info.compress_size)} to "
                            f"{human_bytes(info.file_size)} (more than {MAX_COMPRESSION_RATIO} times): "
                            "refused as a compression bomb.")
        return shape, dtype, size

    def load(self, key: str) -> np.ndarray:
        """The member's array (``allow_pickle=False``), after :meth:`header`'s checks; the sizes of
        all members loaded from this archive together stay within the load limit."""
        if key not in self._infos:
            raise DataError(f"{self.name} has no member '{str(key)[:60]}'.")
        _shape_, _dtype, size = self.header(key)
        where = self.where(key)
        if self._loaded + size > self.limit:
            raise DataError(f"{self.name}: its arrays together need more than the load limit of "
                            f"{human_bytes(self.limit)} (at member '{str(key)[:60]}'; set {ENV_VAR} to raise it).")
        try:
            with self._zip.open(self._infos[key]) as fh:
                arr = np.lib.format.read_array(fh, allow_pickle=False, max_header_size=MAX_HEADER_BYTES)
        except MemoryError:
            raise out_of_memory(where, size) from None
        except ValueError as exc:
            if "pickle" in str(exc).lower() or "object arrays" in str(exc).lower():
                raise DataError(f"{where} holds Python objects (an object array), which cannot be loaded "
                                "safely: loading them would unpickle data that can run code.") from None
            raise DataError(f"{where} is damaged ({_first_line(exc)}).") from None
        except (RuntimeError, *ARCHIVE_ERRORS) as exc:
            raise DataError(f"{where} is damaged ({_first_line(exc)}).") from None
        self._loaded += size
        return arr


def _first_line(exc: BaseException, width: int = 160) -> str:
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    return text if len(text) <= width else text[:width - 3] + "..."
