"""The tiny models every export test runs, and the float32 bound their outputs are held to."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch

from padformer_edge.model.padformer import PADFormer, build_model
from tests.model.test_model_edge import SMALL_EDGE
from tests.training.test_train_edge import TINY_EDGE

CASES = {
    "tiny": ("tiny", {}),
    "edge": ("edge", SMALL_EDGE),
    "edge-isolated": ("edge", {**SMALL_EDGE, "isolate_masked": True}),
    "edge-pointer": ("edge", {**TINY_EDGE, "feature_readout": "references"}),
}
"""Each preset's tiny model, plus the decoder switch that changes the exported graph most
(``isolate_masked``: self-attention under a boolean mask built from ``ids_restore``) and
the readout that adds a graph input (``feature_readout: references``: the query graph
mixes the references' CNN features, ``ref_targets``, which the reference graph yields)."""

EPS32 = float(np.finfo(np.float32).eps)
CNN_STAGES = 8
"""Sequential convolution stages of EfficientNet-Lite0 up to its stride-8 output (stem,
then the blocks of stages 1-3), each one more place rounding can enter."""


def tiny_model(case: str, seed: int = 0) -> PADFormer:
    """The case's model with seeded random weights (the CNN keeps its ImageNet weights)."""
    preset, overrides = CASES[case]
    torch.manual_seed(seed)
    return build_model(preset, **overrides).eval()


def float32_bound(model: PADFormer) -> float:
    """Relative bound for an exported output against torch's: eps(float32) times the
    longest reduction in the graph times the sequential blocks it passes through.

    A float32 dot product of length n is within about n * eps (relative to the sum of
    absolute terms) of exact, for any summation order, and the two runtimes sum in
    different orders; every encoder, decoder and CNN block adds one such rounding. The
    bound is scaled by the largest magnitude of the torch output by the caller.
    """
    cfg = model.config
    longest = max(
        cfg.embed_dim * cfg.mlp_ratio,
        cfg.decoder_embed_dim * cfg.mlp_ratio,
        cfg.patch_size**2 * 3,
        cfg.feature_dim if cfg.cnn_tokens else 0,
    )
    blocks = cfg.depth + cfg.decoder_depth + (CNN_STAGES if cfg.cnn_tokens else 1)
    return EPS32 * longest * blocks


def relative_error(found: np.ndarray, expected: np.ndarray) -> float:
    """Largest absolute difference over the largest magnitude of ``expected``."""
    scale = float(np.abs(expected).max())
    return float(np.abs(found - expected).max()) / max(scale, 1e-12)


def tiny_onnx_profile(folder: Path, max_batch: int) -> Path:
    """A profile named ``part`` under ``folder / "profiles"`` on the onnxruntime runtime:
    the tiny edge checkpoint, two generated references, 2 passes; returns the profiles
    folder."""
    from padformer_edge.detect.settings import DetectionSettings
    from padformer_edge.model.checkpoint import save_checkpoint
    from padformer_edge.profiles.create import create_profile
    from tests.detect_images import product_image
    from tests.line.make_fixture import write_image

    save_checkpoint(folder / "edge.safetensors", tiny_model("edge"))
    for seed in range(2):
        write_image(folder / f"references/{seed}.png", product_image(60, 80, seed))
    settings = DetectionSettings(
        metric="auto", passes=2, max_batch=max_batch, device="cpu", runtime="onnxruntime"
    )
    profiles = folder / "profiles"
    create_profile(
        profiles, "part", folder / "edge.safetensors", folder / "references", settings=settings
    )
    return profiles
