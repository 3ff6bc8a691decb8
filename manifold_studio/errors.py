"""Exception types shared by every layer (Qt-free).

Every message raised with these types is meant to be shown to a user as is:
it names the offending parameter, file, column or row and says what is allowed.
"""


class ManifoldStudioError(Exception):
    """Base class of every error Manifold Studio raises on purpose."""


class InvalidParameterError(ManifoldStudioError, ValueError):
    """A parameter value is outside its declared constraint."""


class DataError(ManifoldStudioError, ValueError):
    """The data given to an algorithm or a loader cannot be used."""


class NotFittedError(ManifoldStudioError, ValueError, AttributeError):
    """``extend`` (or another fitted-only method) was called before ``fit``."""


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
