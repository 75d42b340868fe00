"""The model: linear in, then per layer [rmsnorm, qkv matmul, KV attention (a break), o matmul,
residual], then rmsnorm and logits. Float32 with fixed seeds, so eager and replay agree bit for bit.

Attention is the break op: it keeps a per-layer KV cache and attends over the positions
written so far, a length that grows with the decode position (host state that a recorded
segment cannot see), so it runs eagerly between segments.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from seam.backends import Backend, Buffer
from seam.capture import BreakableGraph, Runtime, graph_break

CONFIG = Path(__file__).resolve().parent.parent / "config.json"


@dataclass(frozen=True)
class Config:
    num_layers: int
    hidden: int
    batch: int
    vocab: int
    max_positions: int
    seed: int

    @classmethod
    def load(cls, path: Path = CONFIG) -> Config:
        return cls(**json.loads(path.read_text()))


@dataclass(frozen=True)
class Layer:
    norm: Buffer
    w_qkv: Buffer
    w_o: Buffer


class DecodeState:
    """The host-side decode position every attention op reads: the reason attention is a break."""

    def __init__(self) -> None:
        self.position = 0


class KVAttention:
    """One layer's attention over its KV cache: writes this step's k, v at the current position,
    then attends over positions 0..position. Writing a position again with the same inputs
    leaves the cache as it was, so a replay at the capture position reproduces capture."""

    def __init__(self, layer: int, config: Config, backend: Backend, state: DecodeState) -> None:
        self.layer = layer
        self.hidden = config.hidden
        self.backend = backend
        self.state = state
        shape = (config.max_positions, config.batch, config.hidden)
        self.keys = np.zeros(shape, dtype=np.float32)
        self.values = np.zeros(shape, dtype=np.float32)

    def __repr__(self) -> str:
        return f"KVAttention(layer={self.layer})"

    def __call__(self, qkv_buf: Buffer) -> Buffer:
        qkv = self.backend.to_host(qkv_buf)
        q, k, v = np.split(qkv, 3, axis=-1)
        pos = self.state.position
        self.keys[pos] = k
        self.values[pos] = v
        scores = np.einsum("bh,pbh->bp", q, self.keys[: pos + 1]) * np.float32(1.0 / math.sqrt(self.hidden))
        scores -= scores.max(axis=-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(axis=-1, keepdims=True)
        out = np.einsum("bp,pbh->bh", weights, self.values[: pos + 1]).astype(np.float32)
        return self.backend.from_host(out)


class Model:
    def __init__(self, config: Config, backend: Backend) -> None:
        self.config = config
        self.backend = backend
        self.state = DecodeState()
        rng = np.random.default_rng(config.seed)
        h, scale = config.hidden, np.float32(1.0 / math.sqrt(config.hidden))

        def weight(*shape: int) -> Buffer:
            return backend.from_host(rng.standard_normal(shape, dtype=np.float32) * scale)

        def gain() -> Buffer:
            return backend.from_host(rng.uniform(0.5, 1.5, size=h).astype(np.float32))

        self.w_in = weight(h, h)
        self.layers = [Layer(gain(), weight(h, 3 * h), weight(h, h)) for _ in range(config.num_layers)]
        self.final_norm = gain()
        self.w_out = weight(h, config.vocab)
        self.attention = [KVAttention(i, config, backend, self.state) for i in range(config.num_layers)]

    def forward(self, rt: Runtime, x: Buffer) -> Buffer:
        """The one forward: eager when `rt` has no graph, recorded as segments when it has one."""
        b, h = self.config.batch, self.config.hidden
        hidden = rt.launch("matmul", (b, h), x, self.w_in)
        for i, layer in enumerate(self.layers):
            normed = rt.launch("rmsnorm", (b, h), hidden, layer.norm)
            qkv = rt.launch("matmul", (b, 3 * h), normed, layer.w_qkv)
            attn = graph_break(rt, self.attention[i], qkv)
            hidden = rt.launch("add", (b, h), hidden, rt.launch("matmul", (b, h), attn, layer.w_o))
        normed = rt.launch("rmsnorm", (b, h), hidden, self.final_norm)
        return rt.launch("matmul", (b, self.config.vocab), normed, self.w_out)

    def run_eager(self, x: np.ndarray, position: int) -> np.ndarray:
        """Logits of one decode step, run eagerly."""
        self.state.position = position
        out = self.forward(Runtime(self.backend), self.backend.from_host(x))
        return self.backend.to_host(out)

    def capture(self, x: np.ndarray, position: int, graph_type: type[BreakableGraph] = BreakableGraph
                ) -> CapturedModel:
        """Capture the forward at `position` over inputs `x` (the production capture path)."""
        self.state.position = position
        graph = graph_type(self.backend)
        graph.capture(self.forward, x)
        return CapturedModel(self, graph)

    def inputs(self, seed: int) -> np.ndarray:
        """A batch of activations for one decode step, reproducible from `seed`."""
        rng = np.random.default_rng(seed)
        return rng.standard_normal((self.config.batch, self.config.hidden), dtype=np.float32)


@dataclass(frozen=True)
class CapturedModel:
    model: Model
    graph: BreakableGraph

    @property
    def output(self) -> Buffer:
        return self.graph.output

    def replay(self, x: np.ndarray, position: int) -> Buffer:
        """Logits buffer of one decode step, replayed (the capture-time output buffer)."""
        self.model.state.position = position
        return self.graph.replay(x)
