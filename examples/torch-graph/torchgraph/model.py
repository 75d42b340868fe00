"""TinyLM: embedding, two pre-norm transformer encoder layers, a vocabulary head; seeded random weights.

`forward(tokens, temperature)` takes the sampling temperature as a device tensor: graph-safe.
`HostTemperature` is the same model called the way serving code often is, with the temperature
a Python float per request: a captured graph keeps the capture-time value, so it is not graph-safe.
"""

from __future__ import annotations

import torch
from torch import nn

VOCAB, DIM, HEADS, LAYERS = 256, 64, 4, 2


class TinyLM(nn.Module):
    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        torch.manual_seed(seed)
        self.embed = nn.Embedding(VOCAB, DIM)
        self.layers = nn.ModuleList(
            nn.TransformerEncoderLayer(DIM, HEADS, dim_feedforward=2 * DIM, dropout=0.0, batch_first=True,
                                       norm_first=True) for _ in range(LAYERS))
        self.norm = nn.LayerNorm(DIM)
        self.head = nn.Linear(DIM, VOCAB)

    def hidden(self, tokens: torch.Tensor) -> torch.Tensor:
        h = self.embed(tokens)
        for layer in self.layers:
            h = layer(h)
        return h

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(h))

    def forward(self, tokens: torch.Tensor, temperature: torch.Tensor) -> torch.Tensor:
        # temperature [batch, 1] on the device: each replay reads the value the inputs wrote
        return self.logits(self.hidden(tokens)) / temperature.unsqueeze(-1)


class HostTemperature(nn.Module):
    """TinyLM with the temperature as a Python float (per request): frozen into a captured graph."""

    def __init__(self, model: TinyLM) -> None:
        super().__init__()
        self.model = model

    def forward(self, tokens: torch.Tensor, temperature: float = 1.0) -> torch.Tensor:
        return self.model.logits(self.model.hidden(tokens)) / temperature


def model(seed: int = 0) -> TinyLM:
    return TinyLM(seed).cuda().eval()
