"""The nearest-reference distance's maps from the search's best cosines, written once for
torch tensors (``distance_search``, the torch metrics) and numpy arrays
(``distance_line``, the torch-free line): one minus each cell's best cosine, and each
mix's mean over the magnifications it reads, either at the query's size
(``upsampled_distances``, ``mix_distances``: the ``fused`` mix adds it to every pass's
pixel errors) or left on each magnification's cells (``level_distances``: the
``distance`` metric reads them there, ``readout.read_levels``). No torch is imported here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from padformer_edge.detect.array_ops import Array, ops_of
from padformer_edge.methods.padformer.mix import Mix

Distances = dict[tuple[int, bool], Array]
"""(magnification, turned references) -> ``[H, W]`` nearest-reference distance map."""


Cosines = Mapping[tuple[int, bool], Array]
"""(magnification, turned references) -> ``[h, w]`` best cosine of each query cell."""


def level_distances(mixes: Sequence[Mix], best: Cosines) -> list[list[Array] | None]:
    """Each mix's distance as one ``[h, w]`` map per magnification it reads (1..zoom, on
    that magnification's cells), whose mean at the query's size is its map; None for a
    mix that weighs none."""
    return [
        [1.0 - best[level, mix.turns] for level in range(1, mix.zoom + 1)]
        if mix.reference_weight > 0
        else None
        for mix in mixes
    ]


def upsampled_distances(best: Mapping[tuple[int, bool], Array], size: tuple[int, int]) -> Distances:
    """Each ``[h, w]`` map of best cosines (by magnification and turns) as its ``[H, W]``
    distance at the query's ``size``: any cell of any reference counts, not the same
    place, since the part is seen from another side in every reference."""
    found: Distances = {}
    for key, cosines in best.items():
        found[key] = ops_of(cosines).upsample(1.0 - cosines, size)
    return found


def reference_distance(distances: Distances, zoom: int, turns: bool) -> Array:
    """The reference distance of a mix reading magnifications 1..``zoom`` (with turned
    references when ``turns``): the mean of those magnifications' maps."""
    maps = [distances[level, turns] for level in range(1, zoom + 1)]
    return ops_of(maps[0]).mean(ops_of(maps[0]).stack(maps, 0), 0) if len(maps) > 1 else maps[0]


def mix_distances(mixes: Sequence[Mix], distances: Distances) -> list[Array | None]:
    """Each mix's ``[H, W]`` reference distance, None for a mix that weighs none."""
    return [
        reference_distance(distances, mix.zoom, mix.turns) if mix.reference_weight > 0 else None
        for mix in mixes
    ]
