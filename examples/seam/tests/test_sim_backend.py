"""The sim backend records kernels over stored buffers and re-executes them on replay."""

from __future__ import annotations

import numpy as np
import pytest
from seam import backends


def test_replay_reexecutes_recorded_kernels_over_the_stored_buffers():
    sim = backends.create("sim")
    a, b, out = sim.alloc((2, 2)), sim.from_host(np.eye(2, dtype=np.float32)), sim.alloc((2, 2))
    sim.upload(a, np.ones((2, 2), dtype=np.float32))
    sim.begin_segment()
    sim.launch("matmul", out, a, b)
    segment = sim.end_segment()
    sim.upload(a, np.full((2, 2), 3.0, dtype=np.float32))
    sim.fill(out, np.nan)
    sim.replay_segment(segment)
    assert np.array_equal(sim.to_host(out), np.full((2, 2), 3.0, dtype=np.float32))


def test_end_segment_leaves_buffers_as_one_run_would():
    sim = backends.create("sim")
    a, out = sim.from_host(np.ones(3, dtype=np.float32)), sim.alloc((3,))
    sim.begin_segment()
    sim.launch("add", out, a, a)
    sim.end_segment()
    assert np.array_equal(sim.to_host(out), np.full(3, 2.0, dtype=np.float32))


def test_fresh_allocations_read_as_nan_until_written():
    sim = backends.create("sim")
    assert np.isnan(sim.to_host(sim.alloc((4,)))).all()


def test_eager_op_inside_an_open_segment_is_refused():
    sim = backends.create("sim")
    sim.begin_segment()
    with pytest.raises(RuntimeError, match="while a segment is open"):
        sim.run_eager(lambda: sim.alloc((1,)))


def test_counts_replayed_segments_and_eager_runs():
    sim = backends.create("sim")
    sim.begin_segment()
    segment = sim.end_segment()
    sim.replay_segment(segment)
    sim.replay_segment(segment)
    sim.run_eager(lambda: sim.alloc((1,)))
    assert (sim.counts().segments_replayed, sim.counts().eager_runs) == (2, 1)


def test_unknown_backend_names_the_known_ones():
    with pytest.raises(KeyError, match=r"unknown backend 'tpu' \(known: .*sim"):
        backends.create("tpu")
