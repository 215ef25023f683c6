"""Synthetic pose-agnostic anomaly benchmark: MAD-Sim-layout datasets rendered from any
textured 3D model (or a built-in one) with defects made in 3D and pixel-exact masks.

Other code calls ``render_dataset``; ``builtin_names`` lists the stable built-in classes;
``procedural_specs`` names random procedural objects for training a generic model.
"""

from padformer_edge_training.synth.builtins import BUILTINS, builtin_names
from padformer_edge_training.synth.dataset import ViewCounts, render_dataset
from padformer_edge_training.synth.defects import DEFECT_KINDS
from padformer_edge_training.synth.procedural import procedural_specs

__all__ = [
    "BUILTINS",
    "DEFECT_KINDS",
    "ViewCounts",
    "builtin_names",
    "procedural_specs",
    "render_dataset",
]
