"""Gate functions (driver `python`) of the breakable-graph example."""

from __future__ import annotations

import torch

from redfirst.gates import evidence
from torchgraph.breakable import Breakable
from torchgraph.model import VOCAB, model

REPLAYS, BATCH, SEQ = 4, 2, 16


def _tokens(seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, VOCAB, (BATCH, SEQ), generator=g).cuda()


def g1_breakable() -> None:
    """G1: every replay of the piecewise-captured forward (segments, eager break, writeback), on
    fresh inputs with the output poisoned first, equals the eager forward bit for bit."""
    net = model()
    graphed = Breakable(net, _tokens(0))
    for step in range(REPLAYS):
        tokens = _tokens(1000 + step)
        expected = graphed.eager(tokens)
        graphed.out.fill_(float("nan"))
        logits = graphed.replay(tokens)
        torch.cuda.synchronize()
        evidence.tensor("logits.eager", expected, step=step)
        evidence.tensor("logits.graph", logits, step=step)
    evidence.counter("replays", REPLAYS)
    evidence.counter("segments", graphed.segments)
    evidence.counter("breaks", graphed.breaks)
