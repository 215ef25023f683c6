"""The research tools' tests render the same tiny dataset the evaluation tests do."""

from tests.evaluation.conftest import tiny_comparator, tiny_data

__all__ = ["tiny_comparator", "tiny_data"]
