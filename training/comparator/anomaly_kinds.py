"""The names of the image-space anomaly kinds, apart from the code that draws them.

A recipe names the kinds its synthetic queries draw (``episodes.synthetic_kinds``), and
`padformer-edge config check` validates a recipe on a line PC without torch or OpenCV;
the drawing code (``anomalies``) needs OpenCV. So the names live here, imported by both.
"""

from __future__ import annotations

from collections.abc import Sequence

BLOB_KINDS = ("texture", "colour", "blur", "contrast")
DEFAULT_KINDS = BLOB_KINDS
THIN_KINDS = ("curve", "polyline", "crack", "scratch")
BODY_KINDS = ("pasted", "speckle")
SMALL_KIND_NAMES = (*THIN_KINDS, *BODY_KINDS)
ALL_KINDS = (*BLOB_KINDS, *SMALL_KIND_NAMES)


def unknown_kinds(kinds: Sequence[str]) -> list[str]:
    """The names in ``kinds`` that are no anomaly kind, in the order given, each once."""
    return list(dict.fromkeys(k for k in kinds if k not in ALL_KINDS))
