"""What the command-line commands share: exit codes, the usage error, an argparse that raises,
and the console (info lines, notes held back until success, a self-erasing progress line)."""
from __future__ import annotations

import argparse
import os
import sys

from manifold_studio.algorithms.progress import CallbackProgress

PROG = "manifold-studio"
EXIT_OK, EXIT_INTERNAL, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
DEBUG_ENV = "MANIFOLD_STUDIO_DEBUG"


class UsageError(Exception):
    """Bad command-line input: reported on one line, exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing the usage and exiting."""

    def error(self, message):
        raise UsageError(f"{message} (see '{self.prog} --help')")


# --------------------------------------------------------------------------------------
# output helpers
# --------------------------------------------------------------------------------------
class Console:
    """Info lines (stdout, or stderr when a result goes to stdout), data notes and progress.

    Notes (rows dropped, columns left out, ...) are held back and printed to stderr only when
    the command succeeds, so a failing command prints exactly one error line.
    """

    def __init__(self, quiet: bool = False, info_to_stderr: bool = False):
        self.quiet = quiet
        self.info_stream = sys.stderr if info_to_stderr else sys.stdout
        self.tty = isatty(sys.stderr)
        self.notes: list[str] = []

    def info(self, text: str) -> None:
        if not self.quiet:
            print(text, file=self.info_stream, flush=True)

    def note(self, text: str) -> None:
        self.notes.append(text)

    def flush_notes(self) -> None:
        for text in self.notes:  # a text may carry its own prefix ("warning: ...")
            print(text if text.startswith("warning: ") else f"note: {text}", file=sys.stderr, flush=True)
        self.notes.clear()

    def progress(self, label: str):
        """A Progress for the algorithms: a self-erasing line on a terminal, else nothing."""
        if self.quiet or not self.tty:
            return None

        def show(fraction: float, message: str) -> None:
            line = f"{label}: {fraction * 100:3.0f}% {message}"[:terminal_columns() - 1]
            sys.stderr.write("\r\x1b[K" + line)
            sys.stderr.flush()

        return CallbackProgress(on_progress=show, min_interval=0.1)

    def end_progress(self) -> None:
        if not self.quiet and self.tty:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def isatty(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError):
        return False


def terminal_columns() -> int:
    try:
        return max(20, os.get_terminal_size(sys.stderr.fileno()).columns)
    except (OSError, ValueError, AttributeError):
        return 80


def format_seconds(t: float) -> str:
    return f"{t:.3f} s" if t < 10 else f"{t:.1f} s"




#: the longest message printed (a longer one is cut, ending in "...")
MAX_MESSAGE = 600


def one_line(text: str) -> str:
    """``text`` on one line of at most :data:`MAX_MESSAGE` characters."""
    line = " ".join(str(text).split())
    return line if len(line) <= MAX_MESSAGE else line[:MAX_MESSAGE - 3] + "..."


def print_error(message: str) -> None:
    print(f"{PROG}: error: {one_line(message)}", file=sys.stderr, flush=True)
