"""The numbers every readout of a score map shares, in a module without torch: the
paper's readout, the query blur, the smoothing bounds and the chunking of pass maps.
``readout``, ``tensor_ops``, ``images`` and the methods' numpy scoring read them from here;
the fused score's own settings are that method's (``methods.padformer.fused_scoring``).
"""

from __future__ import annotations

PAPER_READOUT_SETTINGS = {"consistency_filter": True, "sigma": 0.0}
"""The paper's readout of a job (the consistency-filtered pass mean, unsmoothed) as plain
values: ``readout.PAPER_READOUT`` is built from it, and a signature can name it
without torch."""
MAX_READOUT_SIGMA = 32.0
"""Upper bound of a readout's smoothing, in model pixels (``readout.Readout``)."""
BLUR_KERNEL, BLUR_SIGMA = 7, 1.4
"""The paper's query smoothing: a Gaussian of sigma 1.4 in a 7 x 7 kernel, per channel
(``readout.blur``; the line's numpy scoring reads the same numbers)."""
MIN_SIDE = BLUR_KERNEL // 2 + 1
"""The shortest image side a query may have: the blur's reflect padding needs more pixels
than its radius."""
SMOOTH_MAX_SIGMA = 8.0
"""A readout's Gaussian runs at full size up to this sigma; beyond, on a frame shrunk by
an integer factor (``readout.smooth``)."""
MAX_CHUNK_VALUES = 1 << 25
"""float32 values per chunk of per-pass colour maps (128 MiB): passes are folded in
chunks so a 20 MP frame never holds every pass's map at once."""
