"""Which synthetic defect kinds training may see, and what each of the others measures.

A defect kind the model was trained on says little about how it finds defects it has
never seen, so the kinds the renderer knows fall into three families, declared here and
nowhere else:

- **training**: in anything training reads (renders, recipes, validation choices), next
  to the image-space anomalies made at train time;
- **transfer**: 3D kinds shaped like what the image-space generators draw (thin lines,
  small added bodies), and the scratches ``synth --thin-px`` draws 1-3 camera pixels wide
  on framed renders (``SCRATCHES``: not a 3D kind, so ``--defects transfer`` renders only
  the 3D two). They measure transfer from those generators to defects on unseen objects;
  a validation render of them (another seed) may serve choices, and says so;
- **unseen**: a 3D kind whose shape no generator and no training kind makes, used for no
  choice at all and measured once per test render. It carries the unseen-kind claim.

Transfer and unseen kinds together are the **held-out** kinds: never in training data.
The trainer calls ``refuse_held_out_dataset`` where it opens its data, so a render made
with ``--defects all`` cannot leak one; anything else that feeds training (a recipe's
list of kinds, a synthetic-anomaly generator) calls ``refuse_held_out`` on the kinds it
names. Both name the family of the kind they refuse.

This module is deliberately free of imports from ``synth`` (which loads pybullet), so
the trainer can check its data without pulling in the renderer.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path

from padformer_edge.errors import UserError

TRAINING_FAMILY = ("Stains", "Burrs", "Missing", "Dents", "Discoloured")
SCRATCHES = "Scratches"  # the test folder of a framed render's camera-pixel scratches
TRANSFER_FAMILY = ("Foreign", "Cracks", SCRATCHES)
UNSEEN_FAMILY = ("Bent",)
HELD_OUT_FAMILY = (*TRANSFER_FAMILY, *UNSEEN_FAMILY)  # never in training: transfer + unseen
FAMILIES = {"training": TRAINING_FAMILY, "transfer": TRANSFER_FAMILY, "unseen": UNSEEN_FAMILY}


def family_of(kind: str) -> str | None:
    """The family word of a synthetic kind (``FAMILIES``' key), None for any other label."""
    for word, kinds in FAMILIES.items():
        if kind in kinds:
            return word
    return None


def held_out_in(kinds: Iterable[str]) -> list[str]:
    """The held-out (transfer or unseen) kinds among ``kinds``, in the order given, each once.

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
    so the one-sentence error points the user at what to change; the sentence names the
    kind's family, so the user knows what the kind was kept back to measure.
    """
    found = held_out_in(kinds)
    if found:
        family = family_of(found[0]) or "held-out"
        members = ", ".join(FAMILIES.get(family, HELD_OUT_FAMILY))
        raise UserError(
            f"{source} contains the held-out defect kind {found[0]!r} of the {family} family "
            f"({members}), which training must never see; use only the training family "
            f"({', '.join(TRAINING_FAMILY)}), for a render with --defects training."
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
