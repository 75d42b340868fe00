"""The tensor-parallel MLP on the simulated rank backend (CPU, numpy, no torch).

Each rank holds a column shard of the up projection and the matching row shard of the down
projection: `hid = relu(x @ up_r)`, `y = hid @ down_r`, and the partial `y` is all-reduced;
so is `ssq`, the per-token sum of squares of the intermediate, sharded over the ranks.
Variants (shape: [tokens, hidden]):

- `graph-safe`: every rank issues all-reduce(y) then all-reduce(ssq).
- `order-fault`: the last rank issues all-reduce(ssq) first: the ranks' collectives differ.
- `host-scalar`: the last rank scales `y` by a Python float it reads per input (a
  rank-dependent host branch): a capture keeps the capture-time float.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np


class TpMlp:
    def __init__(self, variant: str, shape: tuple[int, ...], group: Any) -> None:
        if variant not in ("graph-safe", "order-fault", "host-scalar"):
            raise ValueError(f"unknown variant {variant!r}")
        tokens, hidden = shape
        dtype = np.dtype(group.dtype)
        inner = 4 * hidden // group.tp_size
        rng = np.random.default_rng(1234)                     # the full weights: the same on every rank
        up = rng.standard_normal((hidden, 4 * hidden)) / math.sqrt(hidden)
        down = rng.standard_normal((4 * hidden, hidden)) / math.sqrt(4 * hidden)
        r = group.rank % group.tp_size
        self.up = up[:, r * inner:(r + 1) * inner].astype(dtype)       # column-parallel
        self.down = down[r * inner:(r + 1) * inner, :].astype(dtype)   # row-parallel
        self.x = np.zeros((tokens, hidden), dtype)
        self.hid = np.zeros((tokens, inner), dtype)
        self.y = np.zeros((tokens, hidden), dtype)
        self.ssq = np.zeros(tokens, dtype)
        self.variant, self.group, self.seed = variant, group, 0
        self.last = group.rank == group.world_size - 1

    def inputs(self, seed: int, stream: Any) -> None:
        self.seed = seed
        self.x[...] = np.random.default_rng(seed).standard_normal(self.x.shape)

    def __call__(self, stream: Any) -> None:
        stream.launch(lambda: np.matmul(self.x, self.up, out=self.hid))
        stream.launch(lambda: np.maximum(self.hid, 0, out=self.hid))
        stream.launch(lambda: np.sum(self.hid * self.hid, axis=1, out=self.ssq))
        stream.launch(lambda: np.matmul(self.hid, self.down, out=self.y))
        first, second = (self.ssq, self.y) if self.variant == "order-fault" and self.last else (self.y, self.ssq)
        self.group.all_reduce(first, stream)
        self.group.all_reduce(second, stream)
        if self.variant == "host-scalar" and self.last:
            scale = 1.0 + 0.25 * (self.seed % 4)              # read on the host, on this rank only
            stream.launch(lambda: np.multiply(self.y, scale, out=self.y))

    def outputs(self) -> dict[str, Any]:
        return {"y": self.y, "ssq": self.ssq}


def build(variant: str, shape: tuple[int, ...], group: Any) -> TpMlp:
    return TpMlp(variant, shape, group)
