"""Gate entry points (driver `python`, `run: seam.gates:<function>`).

Each function records evidence through `redfirst.gates.evidence` and returns None: the gate
files, not these functions, decide. The backend is `sim` unless SEAM_BACKEND names another.
"""

from __future__ import annotations

import os

import numpy as np

from redfirst.gates import evidence
from seam import backends
from seam.model import Config, Model

# replay 0 repeats the capture batch; replays 1.. get batches the capture never saw
REPLAYS = 4


def _model() -> Model:
    return Model(Config.load(), backends.create(os.environ.get("SEAM_BACKEND", "sim")))


def g1_replay() -> None:
    """G1: every replay, on fresh inputs with the output poisoned first, equals an eager forward."""
    eager, graphed = _model(), _model()
    batches = [eager.inputs(seed=1000 + step) for step in range(REPLAYS)]
    captured = graphed.capture(batches[0], position=0)
    replays = 0
    for step, batch in enumerate(batches):
        expected = eager.run_eager(batch, position=step)
        graphed.backend.fill(captured.output, np.nan)
        logits = graphed.backend.to_host(captured.replay(batch, position=step))
        evidence.tensor("logits.eager", expected, step=step)
        evidence.tensor("logits.graph", logits, step=step)
        replays += 1
    evidence.counter("replays", replays)


def g2_reachability() -> None:
    """G2: the production forward, captured, reaches the break point once per layer."""
    model = _model()
    captured = model.capture(model.inputs(seed=1), position=0)
    evidence.counter("segments_captured", len(captured.graph.segments))
    evidence.counter("breaks_captured", len(captured.graph.breaks))


def g3_counts() -> None:
    """G3: one replay replays every segment and runs every break op, each exactly once
    (counted by the backend, not taken from the seam's own lists)."""
    model = _model()
    captured = model.capture(model.inputs(seed=1), position=0)
    before = model.backend.counts()
    captured.replay(model.inputs(seed=2), position=1)
    after = model.backend.counts()
    evidence.counter("segments", after.segments_replayed - before.segments_replayed)
    evidence.counter("breaks", after.eager_runs - before.eager_runs)
