"""The reference cache's per-layer terms: same reconstructions as before, old checkpoints load.

``fixtures/tiny_concat_stn*.safetensors`` were written by the model as it was before the
STN split its first convolution (commit 84014bc, ``fixtures/make_tiny_concat_stn.py``):
a two-layer decoder with input-dependent warps, and its reconstruction of fixed inputs.
"""

from pathlib import Path

import pytest
import torch
from safetensors.torch import load_file

from padformer_edge.model.checkpoint import load_checkpoint
from padformer_edge.model.encoder import shuffle_ids
from padformer_edge.model.padformer import ReferenceCache, build_model

FIXTURES = Path(__file__).parents[1] / "fixtures"


def _old_model_and_io():
    model, meta = load_checkpoint(FIXTURES / "tiny_concat_stn.safetensors")
    return model, meta, load_file(FIXTURES / "tiny_concat_stn_io.safetensors")


def test_a_checkpoint_from_the_concatenated_stn_loads_key_for_key():
    model, meta, _ = _old_model_and_io()
    assert meta == {"written_by": "84014bc"}
    fresh = build_model("tiny", img_size=32, decoder_embed_dim=16, decoder_depth=2, top_k=4)
    assert model.config == fresh.config
    old_keys = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    assert old_keys == {k: tuple(v.shape) for k, v in fresh.state_dict().items()}
    assert old_keys["decoder.layers.1.stn.localization.0.weight"] == (32, 32, 7, 7)


def test_cached_reconstruction_equals_the_previous_model():
    model, _, io = _old_model_and_io()
    with torch.no_grad():
        cache = model.encode_references(io["refs"])
        assert len(cache.layer_terms) == 2
        assert cache.layer_terms[0].stn.shape == (1, 2, 32, 4, 4)
        assert cache.layer_terms[0].key_values.shape == (1, 2, 16, 32)
        cached = model.reconstruct(io["query"], cache, io["mask"])
        # The decoder on its own computes the terms inside each call instead.
        ids_shuffle, ids_restore, visible = shuffle_ids(io["mask"])
        latent = model.encoder(io["query"], ids_shuffle[:, :visible])
        uncached = model.unpatchify(
            model.decoder.head(model.decoder(latent, ids_restore, cache.tokens))
        )
    torch.testing.assert_close(cached, io["reconstruction"])
    torch.testing.assert_close(uncached, cached)


def test_stn_terms_depend_on_the_layer_and_follow_the_cache_to_a_device():
    model, _, io = _old_model_and_io()
    with torch.no_grad():
        cache = model.encode_references(io["refs"])
    first, second = cache.layer_terms
    assert (first.stn - second.stn).abs().max() > 1e-3  # one term per layer, not one shared
    assert (first.key_values - second.key_values).abs().max() > 1e-3
    moved = cache.to("cpu")
    assert isinstance(moved, ReferenceCache)
    for a, b in zip(moved.layer_terms, cache.layer_terms, strict=True):
        assert torch.equal(a.stn, b.stn) and torch.equal(a.key_values, b.key_values)
    refs = torch.randn(1, 2, 3, 64, 64)
    (plain,) = (
        build_model("tiny", use_stn=False, use_selection=False).encode_references(refs).layer_terms
    )
    assert plain.stn is None and plain.key_values is None


def test_passes_over_one_image_can_share_its_patch_embedding():
    model, _, io = _old_model_and_io()
    rows = torch.tensor([0, 0, 1, 0, 1])
    mask = io["mask"][torch.tensor([0, 1, 1, 0, 0])]
    with torch.no_grad():
        cache = model.encode_references(io["refs"])
        shared = model.reconstruct(io["query"], cache, mask, rows=rows)
        repeated = model.reconstruct(io["query"][rows], cache, mask)
    torch.testing.assert_close(shared, repeated)
    for bad in (torch.tensor([0, 2, 1, 0, 1]), rows.view(5, 1)):
        with pytest.raises(ValueError, match="rows must be a 1-D index into the 2 query images"):
            model.reconstruct(io["query"], cache, mask, rows=bad)
