"""Training samples: a query and its N references, built on the CPU in loader workers.

Randomness is keyed, not streamed: every sample draws from a generator seeded by
(seed, stage, epoch, index), and the sampler yields (epoch, index) pairs. A resumed run,
a run with a different number of workers and each DDP rank therefore see exactly the
samples an uninterrupted single-process run would have seen.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import torch
from torch.utils.data import Dataset, Sampler

from padformer_edge.errors import UserError
from padformer_edge_training.augment import WithinViewAugment
from padformer_edge_training.data.images import read_rgb

STAGE_IDS = {"within_view": 1, "cross_view": 2}


def sample_generator(seed: int, stage: str, epoch: int, index: int) -> torch.Generator:
    """A generator that depends only on where the sample sits in the run."""
    state = np.random.SeedSequence([seed, STAGE_IDS[stage], epoch, index]).generate_state(2)
    return torch.Generator().manual_seed(int(state[0]) << 32 | int(state[1]))


def resolve_num_refs(good: dict[str, list[Path]], num_refs: int | str) -> int:
    """N as a number; 'all' means every other good image of the smallest class.

    A batch needs one N for all its samples, so 'all' is bounded by the class with the
    fewest images; a class with fewer than N + 1 images cannot give a query N others.
    """
    smallest = min(len(paths) for paths in good.values())
    if num_refs == "all":
        if smallest < 2:
            raise UserError("num_refs 'all' needs at least 2 good images in every class.")
        return smallest - 1
    too_small = {name: len(paths) for name, paths in good.items() if len(paths) < num_refs + 1}
    if too_small:
        raise UserError(
            f"class(es) {too_small} have fewer than num_refs + 1 = {num_refs + 1} good "
            "training images; add images or lower data.num_refs."
        )
    return int(num_refs)


class ReferenceSamples(Dataset):
    """Queries from every class's good images; how references are made is the stage's.

    ``cross_view``: N other good images of the same class, chosen afresh every epoch.
    ``within_view``: N rotated and elastically deformed copies of the query itself.
    Items are indexed by (epoch, index) pairs from ``EpochSampler``.
    """

    def __init__(
        self,
        good: dict[str, list[Path]],
        stage: str,
        num_refs: int,
        img_size: int,
        mean: Sequence[float],
        std: Sequence[float],
        seed: int = 0,
        augment: WithinViewAugment | None = None,
    ) -> None:
        if stage not in STAGE_IDS:
            raise ValueError(f"unknown stage {stage!r}")
        self.good, self.stage, self.num_refs = good, stage, num_refs
        self.img_size, self.seed = img_size, seed
        self.augment = augment or WithinViewAugment()
        self.mean = torch.tensor(mean, dtype=torch.float32).view(-1, 1, 1)
        self.std = torch.tensor(std, dtype=torch.float32).view(-1, 1, 1)
        self.items = [(name, i) for name, paths in good.items() for i in range(len(paths))]
        self.categories = list(good)

    def __len__(self) -> int:
        return len(self.items)

    def _normalise(self, x01: torch.Tensor) -> torch.Tensor:
        return (x01 - self.mean) / self.std

    def __getitem__(self, key: tuple[int, int]) -> dict[str, torch.Tensor]:
        epoch, index = key
        category, position = self.items[index]
        paths = self.good[category]
        generator = sample_generator(self.seed, self.stage, epoch, index)
        query = read_rgb(paths[position], self.img_size)
        if self.stage == "within_view":
            refs = self.augment(query, self.num_refs, generator)
        else:
            others = [i for i in range(len(paths)) if i != position]
            order = torch.randperm(len(others), generator=generator)[: self.num_refs]
            refs = torch.stack([read_rgb(paths[others[i]], self.img_size) for i in order])
        return {
            "query": self._normalise(query),
            "refs": self._normalise(refs),
            "category": torch.tensor(self.categories.index(category)),
        }


class EpochSampler(Sampler[tuple[int, int]]):
    """Yields (epoch, index) for one rank: a seeded shuffle per epoch, split across ranks.

    Each rank gets ``len // world_size`` samples per epoch (the remainder is dropped so
    every rank takes the same number of steps); ``start`` skips samples already trained
    on when a run resumes mid-epoch.
    """

    def __init__(
        self,
        length: int,
        epoch: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        start: int = 0,
    ) -> None:
        self.length, self.epoch, self.seed = length, epoch, seed
        self.rank, self.world_size, self.start = rank, world_size, start

    def per_rank(self) -> int:
        return self.length // self.world_size

    def __iter__(self) -> Iterator[tuple[int, int]]:
        generator = torch.Generator().manual_seed(self.seed * 100_003 + self.epoch)
        order = torch.randperm(self.length, generator=generator).tolist()
        mine = order[self.rank :: self.world_size][: self.per_rank()]
        return iter([(self.epoch, i) for i in mine[self.start :]])

    def __len__(self) -> int:
        return max(self.per_rank() - self.start, 0)


class StageSampler(Sampler[tuple[int, int]]):
    """Yields (epoch, index) for every epoch of a stage from one position, for one rank.

    One loader over a whole stage keeps its worker processes from the first epoch to the
    last: a loader per epoch starts fresh workers each time, and with a few dozen images
    (a 3-step epoch) the start of the workers, not the model, set the pace on a GPU. Each
    epoch contributes only the ``per_epoch`` samples its steps take, in ``EpochSampler``'s
    order, so a batch never spans two epochs and the samples are exactly those a loader
    per epoch would have given; ``start`` skips the samples already trained on in
    ``first_epoch`` when a run resumes mid-epoch.
    """

    def __init__(
        self,
        length: int,
        first_epoch: int,
        epochs: int,
        per_epoch: int,
        seed: int = 0,
        rank: int = 0,
        world_size: int = 1,
        start: int = 0,
    ) -> None:
        self.length, self.first_epoch, self.epochs = length, first_epoch, epochs
        self.per_epoch, self.seed, self.rank, self.world_size = per_epoch, seed, rank, world_size
        self.start = start
        if per_epoch > length // world_size:
            per_rank = length // world_size
            raise ValueError(f"{per_epoch} samples per epoch, but a rank has {per_rank}")

    def __iter__(self) -> Iterator[tuple[int, int]]:
        for epoch in range(self.first_epoch, self.epochs):
            sampler = EpochSampler(self.length, epoch, self.seed, self.rank, self.world_size)
            used = list(sampler)[: self.per_epoch]
            yield from used[self.start if epoch == self.first_epoch else 0 :]

    def __len__(self) -> int:
        epochs = max(self.epochs - self.first_epoch, 0)
        return max(epochs * self.per_epoch - (self.start if epochs else 0), 0)
