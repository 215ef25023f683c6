"""What torch sees of CUDA, as one JSON line: run as ``python -m padformer_edge.devices.gpu_probe``.

``doctor`` must answer without importing torch (it checks a line PC in a second, and a
torch-free line install has no torch to import), yet only torch can say whether the
daemon's ``auto``/``cuda`` device will be a GPU: a CPU wheel on a PC with an NVIDIA card
sees none. So doctor asks this module in a child process, and only where a GPU driver is
loaded at all (``device_check``).
"""

from __future__ import annotations

import json
from typing import Any


def cuda_view() -> dict[str, Any]:
    """torch's version and, for its first CUDA device, name and total memory in bytes."""
    import torch

    view: dict[str, Any] = {"torch": torch.__version__, "cuda": torch.version.cuda}
    if not torch.cuda.is_available():
        return {**view, "device": None}
    props = torch.cuda.get_device_properties(0)
    return {**view, "device": {"name": props.name, "total_bytes": int(props.total_memory)}}


if __name__ == "__main__":
    print(json.dumps(cuda_view()))
