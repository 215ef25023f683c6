"""Checkpoint files on disk: round trip, clear refusals, MAE and timm encoder import."""

import json

import numpy as np
import pytest
import torch
from safetensors import safe_open
from safetensors.torch import save_file

from padformer_edge.errors import UserError
from padformer_edge.model.checkpoint import (
    file_sha256,
    load_checkpoint,
    load_encoder_weights,
    save_checkpoint,
)
from padformer_edge.model.padformer import build_model


def _mae_position_table(dim, grid):
    """The fixed table MAE stores: channels [0, dim/2) from the column, the rest from the row."""
    omega = 1.0 / 10000 ** (np.arange(dim // 4) / (dim / 4))
    rows, cols = np.meshgrid(np.arange(grid), np.arange(grid), indexing="ij")

    def encode(pos):
        angles = pos.reshape(-1)[:, None] * omega[None, :]
        return np.concatenate([np.sin(angles), np.cos(angles)], axis=1)

    table = np.concatenate([np.zeros((1, dim)), np.concatenate([encode(cols), encode(rows)], 1)])
    return torch.from_numpy(table).float().unsqueeze(0)


def _mae_layout(embed_dim, depth, patch, grid, decoder_dim=16):
    """Random weights under the key names of an official MAE pre-training checkpoint."""
    d, hidden = embed_dim, embed_dim * 2
    state = {
        "cls_token": torch.randn(1, 1, d),
        "pos_embed": _mae_position_table(d, grid),
        "patch_embed.proj.weight": torch.randn(d, 3, patch, patch),
        "patch_embed.proj.bias": torch.randn(d),
        "norm.weight": torch.randn(d),
        "norm.bias": torch.randn(d),
        "mask_token": torch.randn(1, 1, decoder_dim),
        "decoder_embed.weight": torch.randn(decoder_dim, d),
        "decoder_pred.weight": torch.randn(patch * patch * 3, decoder_dim),
    }
    for i in range(depth):
        for name, shape in {
            "norm1.weight": (d,), "norm1.bias": (d,),
            "attn.qkv.weight": (3 * d, d), "attn.qkv.bias": (3 * d,),
            "attn.proj.weight": (d, d), "attn.proj.bias": (d,),
            "norm2.weight": (d,), "norm2.bias": (d,),
            "mlp.fc1.weight": (hidden, d), "mlp.fc1.bias": (hidden,),
            "mlp.fc2.weight": (d, hidden), "mlp.fc2.bias": (d,),
        }.items():  # fmt: skip
            state[f"blocks.{i}.{name}"] = torch.randn(shape)
    return state


def test_round_trip_restores_weights_config_and_metadata(tmp_path):
    torch.manual_seed(0)
    model = build_model("tiny", top_k=4, use_aat=False)
    path = tmp_path / "ckpt" / "m.safetensors"
    save_checkpoint(path, model, {"data": {"images": 12}, "stage": "cross-view"})
    loaded, meta = load_checkpoint(path)
    assert meta == {"data": {"images": 12}, "stage": "cross-view"}
    assert loaded.config == model.config and loaded.preset_name == "tiny"
    assert not loaded.training
    for (name, a), b in zip(model.state_dict().items(), loaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert len(file_sha256(path)) == 64
    assert file_sha256(path) == file_sha256(path)
    with safe_open(str(path), framework="pt") as fh:  # plain safetensors, no pickle
        header = fh.metadata()
    assert header["format"] == "padformer-edge/1" and header["preset"] == "tiny"
    assert json.loads(header["config"])["top_k"] == 4


def test_missing_and_foreign_files_give_one_clear_sentence(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        load_checkpoint(tmp_path / "nope.safetensors")
    junk = tmp_path / "junk.safetensors"
    junk.write_bytes(b"definitely not a model")
    with pytest.raises(UserError, match="is not a safetensors file"):
        load_checkpoint(junk)
    foreign = tmp_path / "foreign.safetensors"
    save_file({"w": torch.zeros(2)}, str(foreign))
    with pytest.raises(UserError, match="not a padformer-edge checkpoint"):
        load_checkpoint(foreign)


def test_a_flipped_byte_in_the_weights_is_detected(tmp_path):
    path = tmp_path / "m.safetensors"
    save_checkpoint(path, build_model("tiny"))
    data = bytearray(path.read_bytes())
    data[-3] ^= 0xFF
    path.write_bytes(bytes(data))
    with pytest.raises(UserError, match="corrupt"):
        load_checkpoint(path)


def test_mae_checkpoint_loads_into_the_encoder_with_nothing_missing(tmp_path):
    model = build_model("tiny")
    cfg = model.config
    state = _mae_layout(cfg.embed_dim, cfg.depth, cfg.patch_size, cfg.grid_size)
    path = tmp_path / "mae_pretrain.pth"
    torch.save({"model": state, "epoch": 799}, path)
    ignored = load_encoder_weights(model, path)
    assert set(ignored) == {
        "pos_embed",
        "mask_token",
        "decoder_embed.weight",
        "decoder_pred.weight",
    }
    assert torch.equal(model.encoder.blocks[0].attn.qkv.weight, state["blocks.0.attn.qkv.weight"])
    assert torch.equal(model.encoder.cls_token, state["cls_token"])


def test_timm_safetensors_file_loads_and_skips_the_head(tmp_path):
    model = build_model("tiny")
    cfg = model.config
    state = _mae_layout(cfg.embed_dim, cfg.depth, cfg.patch_size, cfg.grid_size)
    state = {k: v for k, v in state.items() if not k.startswith(("decoder_", "mask_token"))}
    state["head.weight"] = torch.randn(10, cfg.embed_dim)
    path = tmp_path / "vit.safetensors"
    save_file(state, str(path))
    assert load_encoder_weights(model, path) == ["head.weight", "pos_embed"]
    assert torch.equal(model.encoder.norm.weight, state["norm.weight"])


def test_learned_position_embeddings_are_refused(tmp_path):
    model = build_model("tiny")
    cfg = model.config
    state = _mae_layout(cfg.embed_dim, cfg.depth, cfg.patch_size, cfg.grid_size)
    state["pos_embed"] = torch.randn_like(state["pos_embed"])
    path = tmp_path / "supervised_vit.pth"
    torch.save({"model": state}, path)
    with pytest.raises(UserError, match="learned position embeddings"):
        load_encoder_weights(model, path)


def test_wrong_encoder_file_names_missing_unexpected_and_mismatched_keys(tmp_path):
    model = build_model("tiny")
    cfg = model.config
    deeper = _mae_layout(cfg.embed_dim, cfg.depth + 1, cfg.patch_size, cfg.grid_size)
    path = tmp_path / "deeper.pth"
    torch.save({"model": deeper}, path)
    with pytest.raises(UserError, match=r"12 unexpected keys: blocks\.1\.") as err:
        load_encoder_weights(model, path)
    assert "\n" not in str(err.value)
    wider = _mae_layout(cfg.embed_dim * 2, cfg.depth, cfg.patch_size, cfg.grid_size)
    torch.save({"model": wider}, path)
    with pytest.raises(UserError, match=r"shape mismatches: blocks\.0"):
        load_encoder_weights(model, path)
    missing = dict(list(deeper.items())[:3])
    torch.save({"model": missing}, path)
    with pytest.raises(UserError, match="missing keys"):
        load_encoder_weights(model, path)


def test_pickled_objects_and_missing_weight_files_are_refused(tmp_path):
    model = build_model("tiny")
    with pytest.raises(UserError, match="does not exist"):
        load_encoder_weights(model, tmp_path / "absent.pth")
    path = tmp_path / "object.pth"
    torch.save({"model": {"layer": object()}}, path)
    with pytest.raises(UserError, match="without pickle"):
        load_encoder_weights(model, path)
