"""Find the images of a dataset on disk, whatever layout it was published in.

Four layouts are understood:

* ``mad-sim``: ``CLASS/train/good/*.png`` and ``CLASS/test/DEFECT/*.png`` with masks in
  ``CLASS/ground_truth/DEFECT/`` of the same name. File names are bare numbers
  (``0.png`` ... ``211.png``), so they are sorted numerically, not as text.
* ``mvtec``: the same tree with zero-padded names and masks named ``NAME_mask.png``.
* ``visa``: the split CSV shipped with VisA (``object,split,label,image,mask``), paths
  relative to the dataset root.
* ``folder``: a plain folder of good images of one product (its name is the class).

Every layout becomes the same ``DatasetIndex``: one ``ImageRecord`` per image, so the
rest of training never needs to know where the files came from.
"""

from __future__ import annotations

import csv
import re
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from padformer_edge.errors import UserError
from padformer_edge_training.data.images import is_image_file

Layout = Literal["auto", "mad-sim", "mvtec", "visa", "folder"]
LAYOUTS: tuple[str, ...] = ("auto", "mad-sim", "mvtec", "visa", "folder")
VISA_SPLIT_CSV = Path("split_csv") / "1cls.csv"


@dataclass(frozen=True)
class ImageRecord:
    """One image: its class, split (train/test), label ('good' or a defect) and mask."""

    path: Path
    category: str
    split: str
    label: str
    mask: Path | None = None

    @property
    def is_good(self) -> bool:
        return self.label == "good"


@dataclass
class DatasetIndex:
    """All images of a dataset, in a stable order (class, split, label, natural name)."""

    root: Path
    layout: str
    records: list[ImageRecord] = field(default_factory=list)

    def good_train(self) -> dict[str, list[Path]]:
        """Good training images per class: the only images training ever looks at."""
        by_class: dict[str, list[Path]] = defaultdict(list)
        for record in self.records:
            if record.split == "train" and record.is_good:
                by_class[record.category].append(record.path)
        return dict(sorted(by_class.items()))

    def summary(self) -> dict[str, int]:
        """Good training images per class, for logs and checkpoint metadata."""
        return {name: len(paths) for name, paths in self.good_train().items()}


def natural_key(name: str) -> tuple:
    """Sort key that orders '2.png' before '10.png' and '002.png' before '010.png'."""
    return tuple(
        (0, int(part), "") if part.isdigit() else (1, 0, part.lower())
        for part in re.split(r"(\d+)", name)
        if part
    )


def _images_in(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(
        (p for p in folder.iterdir() if is_image_file(p)), key=lambda p: natural_key(p.name)
    )


def _find_mask(gt_folder: Path, image: Path) -> Path | None:
    """The mask for ``image``: same stem (MAD-Sim) or stem + '_mask' (MVTec-AD)."""
    if not gt_folder.is_dir():
        return None
    for stem in (image.stem, f"{image.stem}_mask"):
        for candidate in sorted(gt_folder.glob(f"{_glob_escape(stem)}.*")):
            if is_image_file(candidate):
                return candidate
    return None


def _glob_escape(text: str) -> str:
    """Escape glob metacharacters so odd file names match only themselves."""
    return re.sub(r"([\[\]*?])", r"[\1]", text)


def _class_dirs(root: Path) -> list[Path]:
    return sorted(
        (p for p in root.iterdir() if p.is_dir() and (p / "train" / "good").is_dir()),
        key=lambda p: natural_key(p.name),
    )


def _index_tree(root: Path, layout: str) -> list[ImageRecord]:
    """MAD-Sim and MVTec-AD share one tree; only name padding and mask suffixes differ."""
    # A single class folder may be given instead of the dataset root.
    class_dirs = [root] if (root / "train" / "good").is_dir() else _class_dirs(root)
    records: list[ImageRecord] = []
    for class_dir in class_dirs:
        category = class_dir.name
        for path in _images_in(class_dir / "train" / "good"):
            records.append(ImageRecord(path, category, "train", "good"))
        test_dir = class_dir / "test"
        labels = (
            sorted(p.name for p in test_dir.iterdir() if p.is_dir()) if test_dir.is_dir() else []
        )
        for label in labels:
            gt = class_dir / "ground_truth" / label
            for path in _images_in(test_dir / label):
                mask = None if label == "good" else _find_mask(gt, path)
                records.append(ImageRecord(path, category, "test", label, mask))
    return records


def _index_visa(root: Path, split_csv: Path) -> list[ImageRecord]:
    """VisA: one CSV row per image; 'normal' becomes 'good', 'anomaly' keeps its name."""
    try:
        handle = split_csv.open(newline="", encoding="utf-8")
    except OSError as err:
        raise UserError(
            f"VisA split file {split_csv} cannot be read ({err}); check the path."
        ) from err
    records = []
    with handle:
        reader = csv.DictReader(handle)
        needed = {"object", "split", "label", "image"}
        if reader.fieldnames is None or not needed <= set(reader.fieldnames):
            raise UserError(
                f"VisA split file {split_csv} lacks the columns {sorted(needed)}; "
                "use the split_csv/1cls.csv shipped with VisA."
            )
        for line, row in enumerate(reader, start=2):
            split = row["split"].strip().lower()
            if split not in ("train", "test"):
                raise UserError(f"{split_csv}, line {line}: split must be train or test.")
            label = "good" if row["label"].strip().lower() == "normal" else "anomaly"
            mask_text = (row.get("mask") or "").strip()
            records.append(
                ImageRecord(
                    root / row["image"].strip(),
                    row["object"].strip(),
                    split,
                    label,
                    root / mask_text if mask_text else None,
                )
            )
    missing = [r.path for r in records if not r.path.is_file()]
    if missing:
        raise UserError(
            f"{len(missing)} image(s) listed in {split_csv} are missing, e.g. {missing[0]}; "
            "point --data at the VisA root the CSV paths are relative to."
        )
    return records


def _index_folder(root: Path) -> list[ImageRecord]:
    return [ImageRecord(path, root.name, "train", "good") for path in _images_in(root)]


def detect_layout(root: Path) -> str:
    """Guess the layout; zero-padded names tell MVTec-AD from MAD-Sim."""
    if (root / VISA_SPLIT_CSV).is_file():
        return "visa"
    class_dirs = [root] if (root / "train" / "good").is_dir() else _class_dirs(root)
    if class_dirs:
        names = [p.stem for p in _images_in(class_dirs[0] / "train" / "good")]
        padded = any(len(n) > 1 and n.isdigit() and n.startswith("0") for n in names)
        return "mvtec" if padded else "mad-sim"
    return "folder"


def index_dataset(
    root: str | Path,
    layout: Layout = "auto",
    categories: list[str] | None = None,
    split_csv: str | Path | None = None,
) -> DatasetIndex:
    """Index the dataset at ``root``; every problem a user can fix is a ``UserError``."""
    root = Path(root)
    if not root.is_dir():
        raise UserError(f"data folder {root} does not exist; pass --data with the dataset root.")
    if layout not in LAYOUTS:
        raise UserError(f"unknown data layout '{layout}'; choose one of: {', '.join(LAYOUTS)}.")
    if layout == "auto":
        layout = "visa" if split_csv is not None else detect_layout(root)
    if layout == "visa":
        csv_path = Path(split_csv) if split_csv is not None else root / VISA_SPLIT_CSV
        records = _index_visa(root, csv_path)
    elif layout == "folder":
        records = _index_folder(root)
    else:
        records = _index_tree(root, layout)
    if categories:
        known = {r.category for r in records}
        unknown = sorted(set(categories) - known)
        if unknown:
            raise UserError(
                f"class(es) {unknown} not found in {root}; available: {', '.join(sorted(known))}."
            )
        records = [r for r in records if r.category in set(categories)]
    index = DatasetIndex(root, layout, records)
    if not index.good_train():
        raise UserError(
            f"no good training images found in {root} (read as layout '{layout}'); "
            "check --data and data.layout."
        )
    return index
