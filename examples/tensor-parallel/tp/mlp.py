"""The tensor-parallel MLP with torch.distributed (NCCL), for `ranks: {backend: nccl}` gates.

The same sharding and variants as tp/sim_mlp.py, as a torch module on the rank's device; the
factory returns a `Native`, so redfirst owns the buffers, the stream and the poisoning.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from redfirst.gates.cuda.torch_step import Native, Tensor


class TpMlp(nn.Module):
    def __init__(self, hidden: int, group: Any, variant: str) -> None:
        super().__init__()
        inner = 4 * hidden // group.tp_size
        gen = torch.Generator().manual_seed(1234)             # the full weights: the same on every rank
        up = torch.randn(4 * hidden, hidden, generator=gen) / math.sqrt(hidden)
        down = torch.randn(hidden, 4 * hidden, generator=gen) / math.sqrt(4 * hidden)
        r = group.rank % group.tp_size
        self.up = nn.Linear(hidden, inner, bias=False)        # column-parallel
        self.down = nn.Linear(inner, hidden, bias=False)      # row-parallel
        with torch.no_grad():
            self.up.weight.copy_(up[r * inner:(r + 1) * inner])
            self.down.weight.copy_(down[:, r * inner:(r + 1) * inner])
        self.swap = variant == "order-fault" and group.rank == group.world_size - 1

    def forward(self, x: torch.Tensor, scale: float | None = None) -> dict[str, torch.Tensor]:
        hid = torch.relu(self.up(x))
        ssq = (hid * hid).sum(-1)
        y = self.down(hid)
        for t in ((ssq, y) if self.swap else (y, ssq)):
            dist.all_reduce(t)
        if scale is not None:
            y = y * scale
        return {"y": y, "ssq": ssq}


def build(variant: str, shape: tuple[int, ...], group: Any) -> Native:
    if variant not in ("graph-safe", "order-fault", "host-scalar"):
        raise ValueError(f"unknown variant {variant!r}")
    model = TpMlp(shape[-1], group, variant).to(group.device).eval()
    host = None
    if variant == "host-scalar" and group.rank == group.world_size - 1:
        def host(seed: int) -> dict[str, float]:
            return {"scale": 1.0 + 0.25 * (seed % 4)}        # a Python float per input, on this rank only
    return Native(model, {"x": Tensor(tuple(shape))}, host=host)
