"""Shared pytest set-up: keep torch to one thread so tests behave the same on 2 cores."""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

try:
    import torch

    torch.set_num_threads(1)
except ImportError:  # the foundation tests do not need torch
    pass
