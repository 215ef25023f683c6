"""The research tools' tests render the same tiny dataset the evaluation tests do."""

from tests.evaluation.conftest import tiny_data

__all__ = ["tiny_data"]
