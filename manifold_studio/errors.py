"""Exception types shared by every layer (Qt-free).

Every message raised with these types is meant to be shown to a user as is:
it names the offending parameter, file, column or row and says what is allowed.
"""
import signal


class ManifoldStudioError(Exception):
    """Base class of every error Manifold Studio raises on purpose."""


class InvalidParameterError(ManifoldStudioError, ValueError):
    """A parameter value is outside its declared constraint."""


class DataError(ManifoldStudioError, ValueError):
    """The data given to an algorithm or a loader cannot be used."""


class NotFittedError(ManifoldStudioError, ValueError, AttributeError):
    """``extend`` (or another fitted-only method) was called before ``fit``.

    Raise it through :func:`not_fitted`: when scikit-learn is already loaded (a pipeline, a
    scikit-learn check), the error is also scikit-learn's ``NotFittedError``, so code written for
    scikit-learn recognises it — without making scikit-learn a dependency."""


_SKLEARN_NOT_FITTED = None


def not_fitted(message: str) -> NotFittedError:
    """A :class:`NotFittedError` (also scikit-learn's ``NotFittedError`` when scikit-learn is loaded)."""
    global _SKLEARN_NOT_FITTED
    import sys

    exceptions = sys.modules.get("sklearn.exceptions")
    if exceptions is None:
        return NotFittedError(message)
    if _SKLEARN_NOT_FITTED is None:
        _SKLEARN_NOT_FITTED = type("NotFittedError", (NotFittedError, exceptions.NotFittedError),
                                   {"__module__": __name__, "__doc__": NotFittedError.__doc__})
    return _SKLEARN_NOT_FITTED(message)


class WriteError(ManifoldStudioError, OSError):
    """A file could not be written (full disk, no permission, I/O error); what was there before
    is unchanged. Also an ``OSError``, for callers that catch those."""


class FitCancelled(ManifoldStudioError):
    """Raised by ``Progress.checkpoint`` when the user asked to stop."""


class PluginError(ManifoldStudioError):
    """A plugin could not be loaded or returned something invalid."""


class UnknownAlgorithmError(ManifoldStudioError, KeyError):
    """No loaded plugin provides the requested algorithm id."""

    def __str__(self):  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class ConvergenceWarning(UserWarning):
    """An iterative fit stopped at its iteration limit before meeting its stopping rule."""


def error_message(exc: BaseException) -> str:
    """A one-line message for a user: our own errors as they are, others with their type."""
    if isinstance(exc, ManifoldStudioError):
        return str(exc) or type(exc).__name__
    text = str(exc)
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def with_note(message: str, note: str) -> str:
    """``message`` as a sentence, then ``note`` as another ("… set target_weight=0. The previous
    result is still shown."), never "….; the …"; ``message`` alone when ``note`` is empty."""
    text = message.rstrip()
    if not note:
        return text
    text += "" if text.endswith((".", "!", "?", ":")) else "."
    note = note.strip()
    return f"{text} {note[:1].upper()}{note[1:]}{'' if note.endswith(('.', '!', '?')) else '.'}"


def describe_exit(code: int | None, unfinished: str = "without returning a result") -> str:
    """What the exit status of a dead child process means, in words (a negative code is the
    signal that ended it, as subprocess and multiprocessing report it)."""
    if code is None:
        return "did not end"
    if code < 0:
        try:
            name = signal.Signals(-code).name
        except ValueError:
            name = f"signal {-code}"
        meaning = {"SIGSEGV": "a crash (segmentation fault) in the plugin's code",
                   "SIGBUS": "a crash (bus error) in the plugin's code",
                   "SIGABRT": "the plugin's code aborted",
                   "SIGKILL": "it was killed — usually by the system when memory runs out",
                   "SIGFPE": "a crash (arithmetic fault) in the plugin's code",
                   "SIGILL": "a crash (illegal instruction) in the plugin's code"}.get(name, "it was stopped")
        return f"ended by {name}: {meaning}"
    return f"exited with code {code} {unfinished} (the plugin ended its own process)"
