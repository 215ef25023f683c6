"""The ``compare`` metric's section of the detection settings: which comparator it reads."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from padformer_edge.detect.settings import MethodSettings


class CompareSettings(MethodSettings):
    """``metric: compare``: the learned comparison, with the comparator named by its
    sha256."""

    metric: Literal["compare"] = Field("compare", description="the learned comparison")
    comparator: str | None = Field(
        None,
        description=(
            "the sha256 of the comparator the compare metric reads: a profile records the "
            "shipped default when it is made, so a later default leaves its scores as they "
            "were (doctor says how to move it); none: the shipped default"
        ),
    )

    def weights_sha256(self) -> str | None:
        """The comparator: what a compare profile records instead of a checkpoint."""
        return self.comparator

    @classmethod
    def from_earlier(cls, section: dict[str, Any], recorded: Any) -> dict[str, Any]:
        """A profile written before profiles named their comparator was made with the
        first comparator shipped: record it (the one its calibration's signature names,
        when it names one), so that a newer default does not change its scores."""
        if section.get("comparator") is not None:
            return section
        from padformer_edge.weights import earliest_comparator_sha256

        named = recorded.get("comparator") if isinstance(recorded, dict) else None
        sha256 = named if isinstance(named, str) else earliest_comparator_sha256()
        return section if sha256 is None else {**section, "comparator": sha256}
