"""The assembled network can learn: a few optimiser steps fit a small batch."""

import torch
import torch.nn.functional as F

from padformer_edge.model.padformer import build_model


def test_a_few_steps_fit_a_batch_whose_references_show_the_query():
    torch.manual_seed(0)
    model = build_model("tiny")
    g = torch.Generator().manual_seed(0)
    smooth = F.avg_pool2d(torch.rand(2, 3, 64, 64, generator=g), 9, stride=1, padding=4)
    query = model.normalize(smooth)
    refs = query.unsqueeze(1).expand(-1, 3, -1, -1, -1)  # within-view: references = query
    opt = torch.optim.AdamW(model.parameters(), lr=2e-3)
    losses = []
    for _ in range(40):
        recon = model(query, refs, generator=g)[0].pixels
        loss = (recon - query).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.3 * losses[0]
