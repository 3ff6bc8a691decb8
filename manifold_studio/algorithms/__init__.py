"""Qt-free algorithm contract, parameter constraints, progress and shared numerics."""
from manifold_studio.algorithms.base import (
    Algorithm, ClassificationAlgorithm, ClusteringAlgorithm, EmbeddingAlgorithm, KINDS,
)
from manifold_studio.algorithms.params import AnyOf, Bool, Choice, Float, Int, IntTuple, Param, Text, TextList
from manifold_studio.algorithms.preprocessing import Preprocessor
from manifold_studio.algorithms.progress import (
    CallbackProgress, FitCancelled, NullProgress, Progress, SubProgress, as_progress,
)
from manifold_studio.algorithms.state_schema import Fitted

__all__ = [
    "Algorithm", "EmbeddingAlgorithm", "ClusteringAlgorithm", "ClassificationAlgorithm", "KINDS",
    "Param", "Int", "Float", "Bool", "Choice", "IntTuple", "AnyOf", "Text", "TextList", "Preprocessor",
    "Progress", "FitCancelled", "NullProgress", "CallbackProgress", "SubProgress", "as_progress",
    "Fitted",
]
