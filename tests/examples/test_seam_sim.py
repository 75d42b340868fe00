"""The embedded seam example (examples/seam) on its sim backend: the properties its gates and
mutations rely on. Each test breaks if the property in its name does; the broken seams are
built by subclassing the real one, never by editing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seam"
REPLAYS = 4


@pytest.fixture
def seam(monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """The example's modules, imported from examples/seam and forgotten afterwards."""
    monkeypatch.syspath_prepend(str(EXAMPLE))
    import seam.backends as backends
    import seam.capture as capture
    import seam.model as model

    yield SimpleNamespace(backends=backends, capture=capture, model=model)
    for name in [n for n in sys.modules if n == "seam" or n.startswith("seam.")]:
        del sys.modules[name]


def replay_matches(seam: SimpleNamespace, graph_type: type | None = None) -> list[bool]:
    """Per replay: do the captured model's logits equal an eager forward's, bit for bit?
    Replay 0 repeats the capture batch, later replays get fresh batches; outputs poisoned first."""
    config = seam.model.Config.load()
    eager = seam.model.Model(config, seam.backends.create("sim"))
    graphed = seam.model.Model(config, seam.backends.create("sim"))
    batches = [eager.inputs(seed=1000 + step) for step in range(REPLAYS)]
    captured = graphed.capture(batches[0], position=0, graph_type=graph_type or seam.capture.BreakableGraph)
    matches = []
    for step, batch in enumerate(batches):
        expected = eager.run_eager(batch, position=step)
        graphed.backend.fill(captured.output, np.nan)
        got = graphed.backend.to_host(captured.replay(batch, position=step))
        matches.append(bool(np.array_equal(expected.view(np.uint32), got.view(np.uint32))))
    return matches


def test_replays_equal_eager_bit_for_bit(seam):
    assert replay_matches(seam) == [True] * REPLAYS


def test_missing_writeback_differs_from_the_second_replay_on_not_the_first(seam):
    base: Any = seam.capture.BreakableGraph

    class NoWriteback(base):
        def _run_break(self, brk):
            self.backend.run_eager(brk.op, brk.src)

    assert replay_matches(seam, NoWriteback) == [True] + [False] * (REPLAYS - 1)


def test_replaying_all_segments_before_all_breaks_differs(seam):
    base: Any = seam.capture.BreakableGraph

    class SegmentsThenBreaks(base):
        def _replay_order(self):
            return [*self.segments, *self.breaks]

    assert not all(replay_matches(seam, SegmentsThenBreaks))


def test_production_forward_hits_the_break_point_once_per_layer(seam, monkeypatch):
    config = seam.model.Config.load()
    calls = []
    real = seam.model.graph_break

    def counting_graph_break(rt, op, src):
        calls.append(op)
        return real(rt, op, src)

    monkeypatch.setattr(seam.model, "graph_break", counting_graph_break)
    model = seam.model.Model(config, seam.backends.create("sim"))
    model.run_eager(model.inputs(seed=1), position=0)
    assert len(calls) == config.num_layers
    captured = model.capture(model.inputs(seed=1), position=1)
    assert len(calls) == 2 * config.num_layers
    assert len(captured.graph.segments) == config.num_layers + 1


def test_production_capture_is_not_refused(seam):
    # the refusal guard must stay quiet on the forward it exists to protect
    model = seam.model.Model(seam.model.Config.load(), seam.backends.create("sim"))
    model.capture(model.inputs(seed=1), position=0)


def test_duplicate_break_op_is_refused(seam):
    backend = seam.backends.create("sim")
    op = seam.model.KVAttention(0, seam.model.Config.load(), backend, seam.model.DecodeState())

    def forward(rt, x):
        return seam.capture.graph_break(rt, op, seam.capture.graph_break(rt, op, x))

    with pytest.raises(seam.capture.CaptureRefused, match="registered twice"):
        seam.capture.BreakableGraph(backend).capture(forward, np.zeros((8, 96), dtype=np.float32))


def evidence_of(function: str, tmp_path: Path) -> list[dict]:
    """Run a gate function in a child process, as the python driver does, and read its evidence."""
    env = {**os.environ, "GATES_EVIDENCE": str(tmp_path)}
    proc = subprocess.run([sys.executable, "-c", f"import seam.gates as g; g.{function}()"], cwd=EXAMPLE,
                          env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in (tmp_path / "evidence.jsonl").read_text().splitlines()]


def test_g1_function_records_each_replay_and_its_eager_reference(tmp_path):
    records = evidence_of("g1_replay", tmp_path)
    tensors = [(r["tensor"], r["step"]) for r in records if "tensor" in r]
    assert sorted(tensors) == sorted((name, step) for name in ("logits.eager", "logits.graph")
                                     for step in range(REPLAYS))
    assert {"counter": "replays", "value": REPLAYS} in records
    for r in records:
        if "tensor" in r:
            assert (tmp_path / r["file"]).stat().st_size == 4 * int(np.prod(r["shape"]))


def test_g2_and_g3_functions_count_segments_and_breaks_from_config(tmp_path):
    layers = json.loads((EXAMPLE / "config.json").read_text())["num_layers"]
    g2 = evidence_of("g2_reachability", tmp_path / "g2")
    g3 = evidence_of("g3_counts", tmp_path / "g3")
    assert {"counter": "segments_captured", "value": layers + 1} in g2
    assert {"counter": "segments", "value": layers + 1} in g3
    assert {"counter": "breaks", "value": layers} in g3
