"""float16 checkpoint storage: half the file, float32 in memory, outputs within fp16 rounding."""

import torch
from safetensors import safe_open
from safetensors.torch import load_file

from padformer_edge.model.checkpoint import load_checkpoint, save_checkpoint
from padformer_edge.model.padformer import build_model

FP16_RELATIVE = 2.0**-11  # float16 keeps 11 significant bits: round-to-nearest error bound
FP16_SMALLEST_NORMAL = 2.0**-14


def _trained_looking_model() -> torch.nn.Module:
    """A tiny model with weights moved off their initial values (e.g. non-zero biases)."""
    torch.manual_seed(3)
    model = build_model("tiny")
    with torch.no_grad():
        for param in model.parameters():
            param.add_(0.02 * torch.randn_like(param))
    return model.eval()


def test_half_storage_halves_the_file_and_loads_as_float32(tmp_path):
    model = _trained_looking_model()
    full, half = tmp_path / "full.safetensors", tmp_path / "half.safetensors"
    save_checkpoint(full, model, {"note": "full"})
    save_checkpoint(half, model, {"note": "half"}, half=True)
    assert half.stat().st_size < 0.55 * full.stat().st_size
    with safe_open(str(half), framework="pt") as fh:
        assert fh.metadata()["storage"] == "float16"
    stored = {t.dtype for t in load_file(str(half)).values()}
    assert stored <= {torch.float16, torch.int64} and torch.float16 in stored
    loaded, meta = load_checkpoint(half)
    assert meta == {"note": "half"}
    for name, original in model.state_dict().items():
        restored = loaded.state_dict()[name]
        assert restored.dtype == original.dtype, name
        bound = FP16_RELATIVE * original.abs() + FP16_SMALLEST_NORMAL
        assert ((restored - original).abs() <= bound).all(), name


def test_a_half_checkpoint_reconstructs_like_the_original(tmp_path):
    model = _trained_looking_model()
    path = tmp_path / "half.safetensors"
    save_checkpoint(path, model, half=True)
    loaded, _ = load_checkpoint(path)
    size = model.config.img_size
    generator = torch.Generator().manual_seed(0)
    query = torch.randn(2, 3, size, size, generator=generator)
    refs = torch.randn(2, 3, 3, size, size, generator=generator)
    mask = model.random_mask(2, torch.Generator().manual_seed(1))
    with torch.no_grad():
        expected = model(query, refs, mask=mask)[0].pixels
        got = loaded(query, refs, mask=mask)[0].pixels
    error = (got - expected).abs().max() / expected.abs().max()
    assert 0 < error < 1e-2  # changed (it is not the same file) but only by fp16 rounding
