"""Which good training images serve as the N references of each test image.

``random`` draws N per class once (seeded by seed and class name, so adding a class does
not change another's draw) and every test image of the class shares them, as in the
paper's few-shot protocol. ``nearest`` and ``farthest`` pick, per test image, the N
training views whose cameras look at the object from the closest or most distant
directions: the best and worst cases of the paper's reference study. Direction is the
angle between camera positions seen from the object's centre, which is what decides how
much of the same surface two views show; roll about the viewing axis is ignored because
the model's STN can undo an in-plane rotation.
"""

from __future__ import annotations

import json
import zlib
from pathlib import Path

import numpy as np

from padformer_edge.detect.ref_strategy import REF_STRATEGIES
from padformer_edge.errors import UserError
from padformer_edge_training.data.layouts import ImageRecord


def pose_key(path: str | Path) -> str:
    """``train/good/3`` for ``./train/good/3.png``: how transforms.json names a frame."""
    text = str(path).replace("\\", "/")
    while text.startswith("./"):
        text = text[2:]
    return str(Path(text).with_suffix("")).replace("\\", "/")


def read_view_directions(class_dir: Path) -> dict[str, np.ndarray]:
    """Unit camera directions (from the object's centre) of every frame in transforms.json."""
    file = class_dir / "transforms.json"
    try:
        frames = json.loads(file.read_text())["frames"]
        directions = {}
        for frame in frames:
            position = np.asarray(frame["transform_matrix"], dtype=np.float64)[:3, 3]
            directions[pose_key(frame["file_path"])] = position / np.linalg.norm(position)
    except FileNotFoundError as err:
        raise UserError(
            f"{file} does not exist; nearest/farthest references need camera poses, "
            "use --ref-strategy random for data without them."
        ) from err
    except (ValueError, KeyError, TypeError, IndexError) as err:
        raise UserError(
            f"{file} is not a NeRF-style transforms file (frames with file_path and a 4x4 "
            f"transform_matrix): {err}; fix or remove it."
        ) from err
    return directions


class ReferencePicker:
    """Chooses ``shots`` good training images of a class for a test image."""

    def __init__(
        self, good_train: dict[str, list[Path]], shots: int, strategy: str, seed: int
    ) -> None:
        if strategy not in REF_STRATEGIES:
            raise UserError(
                f"reference strategy '{strategy}' is unknown; choose one of "
                f"{', '.join(REF_STRATEGIES)}."
            )
        if shots < 1:
            raise UserError(f"--shots {shots} must be at least 1.")
        small = {c: len(p) for c, p in good_train.items() if len(p) < shots}
        if small:
            raise UserError(
                f"class(es) {small} have fewer good training images than --shots {shots}; "
                "lower --shots or add images."
            )
        self.good_train, self.shots, self.strategy, self.seed = good_train, shots, strategy, seed
        self._directions: dict[Path, dict[str, np.ndarray]] = {}

    def random_set(self, category: str) -> list[Path]:
        candidates = self.good_train[category]
        rng = np.random.default_rng([self.seed, zlib.crc32(category.encode())])
        return [candidates[i] for i in sorted(rng.choice(len(candidates), self.shots, False))]

    def direction(self, path: Path) -> np.ndarray:
        class_dir = path.parents[2]  # CLASS/{train,test}/LABEL/NAME
        if class_dir not in self._directions:
            self._directions[class_dir] = read_view_directions(class_dir)
        key = pose_key(path.relative_to(class_dir))
        try:
            return self._directions[class_dir][key]
        except KeyError:
            raise UserError(
                f"{class_dir / 'transforms.json'} has no camera pose for {key}; "
                "use --ref-strategy random or add the pose."
            ) from None

    def pick(self, record: ImageRecord) -> list[Path]:
        """The references of ``record`` (a test image), in a stable order."""
        if self.strategy == "random":
            return self.random_set(record.category)
        candidates = self.good_train[record.category]
        query = self.direction(record.path)
        angles = np.array(
            [np.arccos(np.clip(self.direction(p) @ query, -1, 1)) for p in candidates]
        )
        order = np.argsort(angles if self.strategy == "nearest" else -angles, kind="stable")
        return [candidates[i] for i in order[: self.shots]]
