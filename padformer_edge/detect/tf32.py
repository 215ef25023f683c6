"""Whether CUDA may run float32 detection in TF32: one choice for the whole process.

torch decides TF32 for cuDNN's convolutions and for the matrix products in two switches
that are process-wide, and cuDNN's is on by default: a detection asked for in fp32 then
runs its CNN in TF32 and misses the CPU's maps by more than ``PARITY_RTOL`` (measured on an
H200: 0.04 to 0.08 of the map's maximum with the ``compare`` metric, 4e-6 to 1e-3 with
TF32 off). So TF32 is off unless the process chose it, and the choice belongs to the
process (the daemon's ``worker.allow_tf32``), not to a profile: one daemon serves several
profiles through the same switches.

The choice is kept here, apart from the torch code that applies it
(``device.apply_float32``, run where a CUDA device is resolved for detection), so that the
daemon can make it before it knows whether any of its profiles loads torch at all (a line
install never does).
"""

from __future__ import annotations

_allowed = False


def allow_tf32(allowed: bool) -> None:
    """Choose TF32 for the CUDA detectors this process builds from now on."""
    global _allowed
    _allowed = bool(allowed)


def tf32_allowed() -> bool:
    """The choice ``allow_tf32`` made; False (float32 means float32) unless it was called."""
    return _allowed
