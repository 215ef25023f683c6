"""A profile's empty-belt photo: copied in by ``profile create --background``, checked
against its recorded sha256, and turned into the belt model its frames are located with.

The belt model is fitted once per detector (a few tens of ms: the photo's colours at a
coarse scale), not per frame. A profile without a photo scores frames whole, as every
profile made before did: the references' borders alone lose parts on a mottled belt
(docs/research.md#locate), so locating is not switched on by guess.
"""

from __future__ import annotations

import shutil
from dataclasses import replace
from pathlib import Path

from padformer_edge.detect.framed import LIGHT, SURROUND, Framing
from padformer_edge.detect.images import read_image
from padformer_edge.detect.locate import BeltModel
from padformer_edge.errors import UserError
from padformer_edge.files.digest import file_sha256
from padformer_edge.images.decode import IMAGE_SUFFIXES
from padformer_edge.methods.interface import ReferenceSlot
from padformer_edge.profiles.layout import BACKGROUND_STEM
from padformer_edge.profiles.schema import BackgroundEntry


def copy_background(folder: Path, photo: str | Path) -> BackgroundEntry:
    """Copy the belt photo into the profile ``folder`` being made, after checking that it
    is a picture, and record its sha256 (the bytes the profile keeps)."""
    photo = Path(photo).expanduser()
    if photo.suffix.lower() not in IMAGE_SUFFIXES:
        raise UserError(
            f"--background {photo} is not an image file ({', '.join(sorted(IMAGE_SUFFIXES))}); "
            "give a photo of the camera's empty belt."
        )
    BeltModel.from_photo(read_image(photo))  # refused here, not at the first frame
    name = BACKGROUND_STEM + photo.suffix.lower()
    shutil.copyfile(photo, folder / name)
    return BackgroundEntry(
        file=name, sha256=file_sha256(folder / name), source=str(photo.absolute())
    )


def load_framing(folder: Path, entry: BackgroundEntry, profile: str) -> Framing:
    """The profile's framing: its belt photo checked unchanged, its belt model fitted."""
    path = folder / entry.file
    if not path.is_file():
        raise UserError(
            f"profile '{profile}': its belt photo {path} is missing; put it back, or make the "
            "profile again with `profile create --background PHOTO`."
        )
    actual = file_sha256(path)
    if actual != entry.sha256:
        raise UserError(
            f"profile '{profile}': belt photo {path} differs from the sha256 profile.yaml "
            f"records ({entry.sha256[:12]}..., the file has {actual[:12]}...); put the "
            "original back, or make the profile again with the new photo."
        )
    return Framing(BeltModel.from_photo(read_image(path)), actual)


def framed_slot(slot: ReferenceSlot, framing: Framing) -> ReferenceSlot:
    """The reference cache's slot for cropped references: keyed by the belt photo and the
    margin and light too, so a cache of whole references (or other crops) is never read
    for them."""
    named = (
        f"framing {framing.background_sha256} margin {framing.margin:g} light {LIGHT} "
        f"surround {SURROUND}"
    )
    return replace(slot, reference_sha256s=(*slot.reference_sha256s, named))
