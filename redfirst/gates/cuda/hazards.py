"""Graph hazards: the classic capture faults, injected at run time into a gate's step, no source edited.

`mutate hazards GATE` runs the gate once per hazard with `--hazard NAME`; the child wraps the
factory's step in `HazardStep`, which owns the outputs the driver compares and adds the fault:

- `host-scalar-frozen`: a host value computed per input is written into the output by a
  memset whose value argument a capture bakes in (a Python float set per call, frozen).
- `fresh-allocation`: while captured, the result goes into another buffer (allocated for the
  capture) instead of the static output the caller reads.
- `outputs-not-written`: while captured, the output write is left out.
- `skipped-warmup`: the step initialises lazily on its first call (a workspace allocation and
  a synchronous upload, as cuBLAS and autotuners do), and the driver captures before any
  warm-up or eager call.
- `stale-input`: while captured, the step reads a copy of its inputs that no later input
  refresh reaches (torch-native steps: the driver owns their inputs; others are unscoped).

A hazard the gate turns RED is KILLED; one it leaves GREEN SURVIVED: the gate cannot see it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from redfirst.gates.cuda import capture
from redfirst.gates.cuda.buffers import DeviceBuffer, DeviceView, copy_async, fill_async, view_of

HAZARDS = ("host-scalar-frozen", "fresh-allocation", "outputs-not-written", "skipped-warmup", "stale-input")
WORKSPACE = 1 << 20


class Unscoped(Exception):
    """The hazard cannot be injected into this step (the reason says why)."""


class HazardFailure(Exception):
    """The harness failed to inject the hazard (its own buffers or copies): ERROR, never the step's failure."""


def host_scalar(seed: int) -> int:
    # differs from the capture seed's (0) for every seed that is not a multiple of 254
    return 1 + (int(seed) * 37) % 254


class HazardStep:
    """A step with one hazard injected; outputs are copies the wrapper owns, written after each call."""

    def __init__(self, inner: Any, hazard: str) -> None:
        if hazard not in HAZARDS:
            raise ValueError(f"unknown hazard {hazard!r} (known: {', '.join(HAZARDS)})")
        if hazard == "stale-input" and not callable(getattr(inner, "input_tensors", None)):
            raise Unscoped("stale-input needs a step whose inputs the driver owns (a torch-native step)")
        self.inner = inner
        self.hazard = hazard
        self.seed = 0
        self.calls = 0
        self.captures_first = hazard == "skipped-warmup"
        self.applicable = getattr(inner, "applicable", True)
        self.graph_required = getattr(inner, "graph_required", True)
        self.sources = {str(k): view_of(v) for k, v in inner.outputs().items()}
        self.static = {k: DeviceBuffer.like(v) for k, v in self.sources.items()}
        self.elsewhere = {k: DeviceBuffer.like(v) for k, v in self.sources.items()}
        self.workspace: DeviceBuffer | None = None
        # made now, outside any capture: a copy of the inputs as they are, which no refresh reaches
        self.stale = {k: v.clone() for k, v in inner.input_tensors().items()} if hazard == "stale-input" else {}

    def inputs(self, seed: int, stream: int) -> None:
        self.seed = seed
        self.inner.inputs(seed, stream)

    def __call__(self, stream: int) -> None:
        self.calls += 1
        capturing = capture.capturing(stream)
        if self.hazard == "skipped-warmup" and self.workspace is None:
            import numpy as np

            self.workspace = DeviceBuffer(WORKSPACE, "uint8")
            self.workspace.upload(np.zeros(WORKSPACE, dtype=np.uint8), stream)  # synchronous: lazy init
        if self.hazard == "stale-input" and capturing:
            self._call_on_stale_inputs(stream)
        else:
            self.inner(stream)
        try:
            self._write_outputs(capturing, stream)
        except Exception as exc:
            if capturing:
                raise  # a capture that rejects the injected fault is the fault's effect
            raise HazardFailure(f"hazard {self.hazard}: the harness's output copy failed: {exc}") from exc

    def _write_outputs(self, capturing: bool, stream: int) -> None:
        for name, src in self.sources.items():
            if capturing and self.hazard == "outputs-not-written":
                continue
            dst = self.elsewhere[name] if capturing and self.hazard == "fresh-allocation" else self.static[name]
            copy_async(dst.ptr, src.ptr, src.nbytes, stream)
            if self.hazard == "host-scalar-frozen":
                fill_async(dst.ptr, host_scalar(self.seed), 1, stream)

    def _call_on_stale_inputs(self, stream: int) -> None:
        inner = self.inner
        live = dict(inner.input_tensors())
        inner.static = self.stale  # read by the graph, refreshed by no one
        try:
            inner(stream)
        finally:
            inner.static = live

    def outputs(self) -> Mapping[str, DeviceView]:
        return {k: b.view for k, b in self.static.items()}

    def close(self) -> None:
        for b in (*self.static.values(), *self.elsewhere.values(), *([self.workspace] if self.workspace else [])):
            b.free()
        close = getattr(self.inner, "close", None)
        if callable(close):
            close()
