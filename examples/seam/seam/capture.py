"""The seam: a forward captured as segments split at break points.

In the spirit of SGLang's breakable CUDA graph: `capture` runs a forward once with a
segment open; each `graph_break` closes the segment, runs its op eagerly, stores the
result in a capture-time destination buffer that later segments read, and opens the
next segment. `replay` re-executes the segments in capture order and runs each break
op eagerly between them, writing its fresh result back into that destination.

The forward is written once against `Runtime`; with no graph it runs eagerly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from seam.backends import Backend, BreakOp, Buffer, Segment


class CaptureRefused(Exception):
    """The seam cannot capture this forward; the message says why."""


@dataclass(frozen=True)
class BreakPoint:
    op: BreakOp
    src: Buffer   # the stored buffer the op reads
    dst: Buffer   # the capture-time destination later segments read


@dataclass(frozen=True)
class Runtime:
    """What a forward is written against: stored buffers, kernel launches, break points."""

    backend: Backend
    graph: BreakableGraph | None = None

    def launch(self, name: str, shape: tuple[int, ...], *args: Buffer) -> Buffer:
        out = self.backend.alloc(shape)
        self.backend.launch(name, out, *args)
        return out


Forward = Callable[[Runtime, Buffer], Buffer]


def graph_break(rt: Runtime, op: BreakOp, src: Buffer) -> Buffer:
    """Run `op` on `src` outside any graph: eagerly now, and eagerly at every replay."""
    if rt.graph is None:
        return rt.backend.run_eager(op, src)
    return rt.graph.break_at(op, src)


def interleave(segments: Sequence[Segment], breaks: Sequence[BreakPoint]) -> list[Segment | BreakPoint]:
    """segment 0, break 0, segment 1, ..., break N-1, segment N: the order they were captured in."""
    if len(segments) != len(breaks) + 1:
        raise ValueError(f"{len(segments)} segments cannot surround {len(breaks)} breaks")
    order: list[Segment | BreakPoint] = []
    for segment, brk in zip(segments, breaks, strict=False):
        order += [segment, brk]
    return [*order, segments[-1]]


class BreakableGraph:
    """One captured forward over stored buffers. Capture once, replay many times."""

    def __init__(self, backend: Backend) -> None:
        self.backend = backend
        self.segments: list[Segment] = []
        self.breaks: list[BreakPoint] = []
        self._input: Buffer | None = None
        self._output: Buffer | None = None

    @property
    def output(self) -> Buffer:
        """The capture-time output buffer; every replay writes it again."""
        if self._output is None:
            raise RuntimeError("nothing captured yet")
        return self._output

    def capture(self, forward: Forward, example: np.ndarray) -> Buffer:
        """Run `forward` once over a stored copy of `example`, recording it; returns the output buffer."""
        if self._input is not None:
            raise CaptureRefused("this graph is already captured; capture a new BreakableGraph")
        if not example.flags.c_contiguous:
            raise CaptureRefused("capture input must be C-contiguous: replays copy fresh inputs over it whole")
        self._input = self.backend.alloc(example.shape, str(example.dtype))
        self.backend.upload(self._input, example)
        self.backend.begin_segment()
        try:
            output = forward(Runtime(self.backend, self), self._input)
            self.segments.append(self.backend.end_segment())
        except BaseException:
            self.backend.abort_segment()
            raise
        self._output = output
        return output

    def break_at(self, op: BreakOp, src: Buffer) -> Buffer:
        """Called by graph_break during capture: split here and run `op` eagerly."""
        self._refuse_duplicate_break(op)
        self.segments.append(self.backend.end_segment())
        fresh = self.backend.run_eager(op, src)
        dst = self.backend.alloc_like(fresh)
        self.backend.copy_into(dst, fresh)  # capture-time value of the destination
        self.breaks.append(BreakPoint(op, src, dst))
        self.backend.begin_segment()
        return dst

    def replay(self, inputs: np.ndarray) -> Buffer:
        """Copy `inputs` into the capture-time input buffer and re-execute; returns the output buffer."""
        if self._output is None:  # never captured, or the capture failed part way
            raise RuntimeError("replay before capture")
        self.backend.upload(self._input, inputs)
        for step in self._replay_order():
            if isinstance(step, BreakPoint):
                self._run_break(step)
            else:
                self.backend.replay_segment(step)
        return self.output

    def _replay_order(self) -> list[Segment | BreakPoint]:
        return interleave(self.segments, self.breaks)

    def _run_break(self, brk: BreakPoint) -> None:
        fresh = self.backend.run_eager(brk.op, brk.src)
        self.backend.copy_into(brk.dst, fresh)  # writeback: later segments read brk.dst, not the fresh buffer

    def _refuse_duplicate_break(self, op: BreakOp) -> None:
        # one stateful op at two break points would advance its state twice per replay
        if any(brk.op is op for brk in self.breaks):
            raise CaptureRefused(f"break op {op!r} is registered twice in one capture")
