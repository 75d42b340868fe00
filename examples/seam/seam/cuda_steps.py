"""A `cuda-graph` driver factory over the seam model's segments (gate seam-g1-graph-cuda).

Variant `head` is the model's last segment (final rmsnorm, logits matmul); variant `block`
is one layer's dense work around the break (rmsnorm, qkv matmul; then o matmul and the
residual add over a fixed attention result). Each is captured whole by the driver on its
own stream and replayed on fresh inputs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from seam.backends.cuda import CudaBackend, CudaBuffer
from seam.model import Config, Model


class SegmentStep:
    def __init__(self, variant: str, shape: tuple[int, ...]) -> None:
        if variant not in ("head", "block"):
            raise ValueError(f"unknown variant {variant!r} (head, block)")
        batch, hidden = shape
        config = Config.load()
        if hidden != config.hidden:
            raise ValueError(f"hidden must be {config.hidden} (config.json), got {hidden}")
        self.backend = CudaBackend()
        self.model = Model(config, self.backend)
        self.variant = variant
        b = self.backend
        self.x = b.alloc((batch, hidden))
        self.attn = b.alloc((batch, hidden))
        self.normed = b.alloc((batch, hidden))
        self.qkv = b.alloc((batch, 3 * hidden))
        self.o = b.alloc((batch, hidden))
        self.hidden = b.alloc((batch, hidden))
        self.logits = b.alloc((batch, config.vocab))

    def inputs(self, seed: int, stream: int) -> None:
        self.backend.stream = stream
        rng = np.random.default_rng(seed)
        self.backend.upload(self.x, rng.standard_normal(self.x.shape, dtype=np.float32))
        self.backend.upload(self.attn, rng.standard_normal(self.attn.shape, dtype=np.float32))

    def __call__(self, stream: int) -> None:
        b, m = self.backend, self.model
        b.stream = stream
        if self.variant == "head":
            b.launch("rmsnorm", self.normed, self.x, m.final_norm)
            b.launch("matmul", self.logits, self.normed, m.w_out)
        else:
            layer = m.layers[0]
            b.launch("rmsnorm", self.normed, self.x, layer.norm)
            b.launch("matmul", self.qkv, self.normed, layer.w_qkv)
            b.launch("matmul", self.o, self.attn, layer.w_o)
            b.launch("add", self.hidden, self.x, self.o)

    def outputs(self) -> Mapping[str, CudaBuffer]:
        if self.variant == "head":
            return {"normed": self.normed, "logits": self.logits}
        return {"qkv": self.qkv, "hidden": self.hidden}


def make_step(variant: str, shape: tuple[int, ...]) -> Any:
    return SegmentStep(variant, tuple(shape))
