"""Torch-native cuda-graph factories: a module and its inputs; the driver owns buffers, stream and poison.

Variants: `mlp` (nn.Sequential(Linear, GELU, Linear)), `encoder` (nn.TransformerEncoderLayer),
`float-scalar` (multiplies by a Python float set per input: not graph-safe). Shape = [batch, 16].
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from redfirst.gates.cuda.torch_step import Native, Tensor


class Scaled(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(16, 16)

    def forward(self, x: torch.Tensor, scale: float = 1.0) -> torch.Tensor:
        return self.lin(x) * scale


def build(variant: str, shape: tuple[int, ...]) -> Any:
    torch.manual_seed(0)
    if variant == "mlp":
        model: nn.Module = nn.Sequential(nn.Linear(16, 64), nn.GELU(), nn.Linear(64, 16))
    elif variant == "encoder":
        model = nn.TransformerEncoderLayer(d_model=16, nhead=4, dim_feedforward=32, dropout=0.0, batch_first=True)
    else:
        model = Scaled()
    model = model.cuda().eval()
    inputs = {"x": Tensor(tuple(shape) if variant != "encoder" else (shape[0], 8, shape[1]))}
    if variant == "float-scalar":
        return Native(model, inputs, host=lambda seed: {"scale": 0.25 * (1 + seed % 5)})
    return Native(model, inputs)
