"""Every part of the network learns from the reconstruction loss."""

import torch

from padformer_edge.model.padformer import build_model


def _loss_backward(model, seed):
    g = torch.Generator().manual_seed(seed)
    query = torch.randn(2, 3, 64, 64, generator=g)
    recon = model(query, torch.randn(2, 3, 3, 64, 64, generator=g), generator=g)[0].pixels
    model.zero_grad()
    (recon - query).pow(2).mean().backward()


def test_every_parameter_group_receives_gradient():
    torch.manual_seed(0)
    model = build_model("tiny")
    _loss_backward(model, 0)
    grads = {n: p.grad for n, p in model.named_parameters()}
    assert all(g is not None for g in grads.values())
    groups = {
        "encoder": "encoder.",
        "stn output": "decoder.layers.0.stn.fc.2.",
        "global tokens": "decoder.global_tokens",
        "local tokens": "decoder.local_tokens",
        "mask token": "decoder.mask_token",
        "reference projection": "decoder.ref_embed.",
        "cross-attention": "decoder.layers.0.cross_attn.",
        "pixel head": "decoder.head.",
    }
    for label, prefix in groups.items():
        norm = sum(g.abs().sum() for n, g in grads.items() if n.startswith(prefix))
        assert norm > 0, label
    for name in (
        "encoder.cls_token",
        "encoder.patch_embed.proj.weight",
        "encoder.blocks.0.attn.qkv.weight",
    ):
        assert grads[name].abs().sum() > 0, name


def test_after_one_step_the_whole_stn_learns():
    torch.manual_seed(0)
    model = build_model("tiny")
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    _loss_backward(model, 0)
    opt.step()  # the zero-initialised last FC blocks gradient to the convs only at step 0
    _loss_backward(model, 1)
    for name, param in model.named_parameters():
        assert param.grad.abs().sum() > 0, name
