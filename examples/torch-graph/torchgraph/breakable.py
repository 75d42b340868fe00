"""The SGLang-style breakable CUDA graph: the forward captured as segments, with eager breaks between.

A break is an op that cannot live in a graph (here: top-k routing that reads its choice back
to the host, `.tolist()`, as data-dependent dispatch does). Capture runs the forward once:
each segment is captured into its own torch.cuda.CUDAGraph, each break runs eagerly. A replay
runs segment graphs and breaks in order; each break's fresh result is written back into the
static buffer the next segment's graph reads (the writeback): without it, that graph reads
whatever the capture left there.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from torchgraph.model import TinyLM


def route(h: torch.Tensor) -> torch.Tensor:
    """The break: keep each row's top-scoring half of the features, chosen on the host."""
    scores = h.float().abs().sum(dim=(0, 1))
    keep = sorted(scores.topk(h.shape[-1] // 2).indices.tolist())  # to the host: no graph can hold this
    mask = torch.zeros(h.shape[-1], device=h.device, dtype=h.dtype)
    mask[keep] = 1
    return h * mask


class Breakable:
    """TinyLM's forward as [embed + layer 0] | route | [layer 1 + head], captured piecewise."""

    def __init__(self, model: TinyLM, tokens: torch.Tensor) -> None:
        self.model = model
        self.tokens = tokens.clone()                       # static input of segment 1
        self.mid = torch.empty(*tokens.shape, model.embed.embedding_dim, device=tokens.device)
        with torch.no_grad():
            self.g1, self.first = _capture(lambda t: model.layers[0](model.embed(t)), self.tokens)
            self.mid.copy_(route(self.first))               # the break runs eagerly at capture too
            self.g2, self.out = _capture(lambda h: model.logits(model.layers[1](h)), self.mid)
        self.segments, self.breaks = 2, 1

    def replay(self, tokens: torch.Tensor) -> torch.Tensor:
        self.tokens.copy_(tokens)
        self.g1.replay()
        with torch.no_grad():
            fresh = route(self.first)
        self.mid.copy_(fresh)  # writeback: segment 2's graph reads self.mid, not the fresh tensor
        self.g2.replay()
        return self.out

    def eager(self, tokens: torch.Tensor) -> torch.Tensor:
        with torch.no_grad():
            h = route(self.model.layers[0](self.model.embed(tokens)))
            return self.model.logits(self.model.layers[1](h))


def _capture(fn: Callable[[torch.Tensor], torch.Tensor],
             static_in: torch.Tensor) -> tuple[torch.cuda.CUDAGraph, torch.Tensor]:
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(2):                                  # warm-up off the capture stream
            fn(static_in)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        out = fn(static_in)
    return graph, out
