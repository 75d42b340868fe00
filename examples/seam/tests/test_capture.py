"""Unit tests of the seam (capture, replay, writeback, refusals) over a small forward of their own.

They never run the model's production forward: deleting its break-point call site must
leave this suite green (the seam-unit gate is that mutation's control).
"""

from __future__ import annotations

import numpy as np
import pytest
from seam import backends
from seam.backends import Backend, Buffer
from seam.capture import BreakableGraph, BreakPoint, CaptureRefused, Runtime, graph_break, interleave

B, H = 4, 8


class Tanh:
    """A break op: tanh of its input, returned in a fresh buffer; counts its calls."""

    def __init__(self, backend: Backend, scale: float) -> None:
        self.backend = backend
        self.scale = np.float32(scale)
        self.calls = 0

    def __call__(self, src: Buffer) -> Buffer:
        self.calls += 1
        return self.backend.from_host(np.tanh(self.backend.to_host(src) * self.scale))


def make_forward(weight: Buffer, ops: list[Tanh]):
    def forward(rt: Runtime, x: Buffer) -> Buffer:
        h = rt.launch("matmul", (B, H), x, weight)
        for op in ops:
            h = rt.launch("add", (B, H), h, graph_break(rt, op, h))
        return rt.launch("matmul", (B, H), h, weight)

    return forward


def batch(seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((B, H), dtype=np.float32)


@pytest.fixture
def backend() -> Backend:
    return backends.create("sim")


@pytest.fixture
def weight(backend: Backend) -> Buffer:
    return backend.from_host(np.random.default_rng(0).standard_normal((H, H), dtype=np.float32))


def eager(backend: Backend, forward, x: np.ndarray) -> np.ndarray:
    return backend.to_host(forward(Runtime(backend), backend.from_host(x)))


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.uint32), b.view(np.uint32)))


def test_capture_splits_forward_into_one_more_segment_than_breaks(backend, weight):
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [Tanh(backend, 1.0), Tanh(backend, 0.5)]), batch(1))
    assert (len(graph.segments), len(graph.breaks)) == (3, 2)


def test_replays_on_fresh_inputs_equal_eager_bit_for_bit(backend, weight):
    forward = make_forward(weight, [Tanh(backend, 1.0), Tanh(backend, 0.5)])
    graph = BreakableGraph(backend)
    graph.capture(forward, batch(1))
    for seed in (2, 3, 4):
        backend.fill(graph.output, np.nan)
        got = backend.to_host(graph.replay(batch(seed)))
        assert same_bits(got, eager(backend, forward, batch(seed))), f"replay on batch {seed}"


def test_replay_reads_the_inputs_copied_into_the_capture_input_buffer(backend, weight):
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [Tanh(backend, 1.0)]), batch(1))
    first = backend.to_host(graph.replay(batch(2)))
    second = backend.to_host(graph.replay(batch(3)))
    assert not same_bits(first, second)


def test_each_replay_runs_every_break_op_once(backend, weight):
    ops = [Tanh(backend, 1.0), Tanh(backend, 0.5)]
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, ops), batch(1))
    graph.replay(batch(2))
    graph.replay(batch(3))
    assert [op.calls for op in ops] == [3, 3]  # capture + two replays


def test_replay_writes_each_break_result_into_its_capture_time_destination(backend, weight):
    op = Tanh(backend, 1.0)
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [op]), batch(1))
    captured = backend.to_host(graph.breaks[0].dst)
    graph.replay(batch(2))
    after = backend.to_host(graph.breaks[0].dst)
    assert not same_bits(captured, after)
    assert same_bits(after, backend.to_host(op(graph.breaks[0].src)))


def test_capture_leaves_each_destination_holding_its_break_result_over_the_capture_inputs(backend, weight):
    op = Tanh(backend, 1.0)
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [op]), batch(1))
    h = backend.to_host(graph.breaks[0].src)
    assert same_bits(h, batch(1) @ backend.to_host(weight))
    assert same_bits(backend.to_host(graph.breaks[0].dst), np.tanh(h))


def test_interleave_puts_each_break_between_the_segments_around_it():
    breaks = [BreakPoint(op=print, src=i, dst=i) for i in range(2)]
    assert interleave(["s0", "s1", "s2"], breaks) == ["s0", breaks[0], "s1", breaks[1], "s2"]


def test_interleave_rejects_counts_that_do_not_surround():
    with pytest.raises(ValueError, match="cannot surround"):
        interleave(["s0"], [BreakPoint(op=print, src=0, dst=0)])


def test_graph_break_without_a_graph_runs_the_op_eagerly(backend):
    op = Tanh(backend, 1.0)
    src = backend.from_host(batch(1))
    out = graph_break(Runtime(backend), op, src)
    assert op.calls == 1
    assert same_bits(backend.to_host(out), np.tanh(batch(1)))


def test_refuses_the_same_break_op_twice_in_one_capture(backend, weight):
    op = Tanh(backend, 1.0)
    graph = BreakableGraph(backend)
    with pytest.raises(CaptureRefused, match="registered twice"):
        graph.capture(make_forward(weight, [op, op]), batch(1))


def test_refusal_leaves_the_backend_usable(backend, weight):
    op = Tanh(backend, 1.0)
    with pytest.raises(CaptureRefused):
        BreakableGraph(backend).capture(make_forward(weight, [op, op]), batch(1))
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [Tanh(backend, 1.0)]), batch(1))
    assert len(graph.segments) == 2


def test_refuses_a_non_contiguous_capture_input(backend, weight):
    strided = np.asfortranarray(batch(1))
    with pytest.raises(CaptureRefused, match="C-contiguous"):
        BreakableGraph(backend).capture(make_forward(weight, [Tanh(backend, 1.0)]), strided)


def test_refuses_a_second_capture_into_one_graph(backend, weight):
    graph = BreakableGraph(backend)
    graph.capture(make_forward(weight, [Tanh(backend, 1.0)]), batch(1))
    with pytest.raises(CaptureRefused, match="already captured"):
        graph.capture(make_forward(weight, [Tanh(backend, 1.0)]), batch(1))


def test_replay_before_capture_is_an_error(backend):
    with pytest.raises(RuntimeError, match="before capture"):
        BreakableGraph(backend).replay(batch(1))


def test_replay_after_a_refused_capture_is_an_error(backend, weight):
    op = Tanh(backend, 1.0)
    graph = BreakableGraph(backend)
    with pytest.raises(CaptureRefused):
        graph.capture(make_forward(weight, [op, op]), batch(1))
    with pytest.raises(RuntimeError, match="before capture"):
        graph.replay(batch(1))
