"""The runtimes a detection can run on: the one list, importable by anything.

Its own module (no imports of the package) so that the daemon's config, which the
operator's page loads, can name the runtimes without importing the detection package.
"""

from __future__ import annotations

from typing import Literal, get_args

RuntimeName = Literal["torch", "onnxruntime", "openvino"]
RUNTIMES: tuple[str, ...] = get_args(RuntimeName)
GRAPH_RUNTIMES = ("onnxruntime", "openvino")
"""The runtimes that run exported graphs rather than the torch model."""
