"""Which synthetic defect kinds training may see, and which are kept for measurement only.

A defect kind the model was trained on says little about how it finds defects it has
never seen, so the kinds are split into two families, declared here and nowhere else:
the **training** family may appear in anything training reads, the **held-out** family
only in validation and test renders, where its rows are computed once. The trainer calls
``refuse_held_out_dataset`` where it opens its data, so a render made with ``--defects
all`` cannot leak a held-out kind; anything else that feeds training (a recipe's list of
kinds, a synthetic-anomaly generator) calls ``refuse_held_out`` on the kinds it names.

This module is deliberately free of imports from ``synth`` (which loads pybullet), so
the trainer can check its data without pulling in the renderer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from padformer_edge.errors import UserError

TRAINING_FAMILY = ("Stains", "Burrs", "Missing", "Dents", "Discoloured")
HELD_OUT_FAMILY = ("Foreign", "Cracks")
FAMILIES = {"training": TRAINING_FAMILY, "held-out": HELD_OUT_FAMILY}


def held_out_in(kinds: Iterable[str]) -> list[str]:
    """The held-out kinds among ``kinds``, in the order given, each once.

    Names match exactly as ``padformer-edge synth`` writes its folders: a real dataset's
    own labels (MVTec AD's lower-case ``crack``) are not synthetic kinds and pass.
    """
    found: list[str] = []
    for kind in kinds:
        if kind in HELD_OUT_FAMILY and kind not in found:
            found.append(kind)
    return found


def refuse_held_out(kinds: Iterable[str], source: str) -> None:
    """Raise when ``kinds`` (named by a recipe, a generator or a dataset) holds a held-out kind.

    ``source`` says where the kinds came from (a recipe path and key, a dataset folder),
    so the one-sentence error points the user at what to change.
    """
    found = held_out_in(kinds)
    if found:
        raise UserError(
            f"{source} contains the held-out defect kind {found[0]!r}, which training must "
            f"never see; use only the training family ({', '.join(TRAINING_FAMILY)}), for a "
            "render with --defects training."
        )


def refuse_held_out_dataset(root: Path, labels: Iterable[str]) -> None:
    """Raise when the dataset at ``root`` holds images of a held-out kind.

    ``labels`` are the image labels training indexed (its test folders' names); the
    ``defect_kinds`` that ``synth`` records in ``dataset.json`` count too, so a render
    made with a held-out kind is refused even when only some of its classes are used.
    Training reads only good images, but a render holding a held-out kind is a
    validation or test render: training on its good views would measure on parts and
    poses the model has seen.
    """
    kinds = list(labels)
    manifest = root / "dataset.json"
    if manifest.is_file():
        try:
            recorded = json.loads(manifest.read_text()).get("defect_kinds", [])
        except (OSError, ValueError, AttributeError):
            recorded = []  # not a synth manifest: the folders alone decide
        kinds += [k for k in recorded if isinstance(k, str)]
    refuse_held_out(kinds, f"training dataset {root}")
