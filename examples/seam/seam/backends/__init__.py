"""Backends: where buffers live and how a segment is recorded and replayed.

The model and the seam use only the `Backend` Protocol. `sim` records numpy kernels
over stored buffers; a `cuda` backend (stream capture through cuda-python) is one more
module plus one registry line.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

# A backend's buffer (a numpy array for sim, device memory for cuda): opaque to the seam.
Buffer = Any
# A recorded segment, replayable any number of times: opaque to the seam.
Segment = Any
# A break op: reads stored buffers, returns its result in a FRESH buffer.
BreakOp = Callable[..., Buffer]

KERNELS = ("matmul", "rmsnorm", "add")


@dataclass(frozen=True)
class Counts:
    """What a backend has executed since it was created (read by gates, not kept by the seam)."""

    segments_replayed: int
    eager_runs: int


class Backend(Protocol):
    # the registry name, such as "sim"
    name: str

    # A stored buffer of `shape` and `dtype`; its contents are undefined until written.
    def alloc(self, shape: tuple[int, ...], dtype: str = "float32") -> Buffer: ...

    # A stored buffer with the shape and dtype of `like`, contents undefined.
    def alloc_like(self, like: Buffer) -> Buffer: ...

    # Copy `src` into `dst` (same shape and dtype); outside any open segment.
    def copy_into(self, dst: Buffer, src: Buffer) -> None: ...

    # Copy a host array into the stored buffer `dst`.
    def upload(self, dst: Buffer, host: np.ndarray) -> None: ...

    # A fresh buffer holding a copy of a host array.
    def from_host(self, host: np.ndarray) -> Buffer: ...

    # A host copy of a buffer.
    def to_host(self, buf: Buffer) -> np.ndarray: ...

    # Fill a buffer with one value (used to poison outputs before a replay).
    def fill(self, buf: Buffer, value: float) -> None: ...

    # Run kernel `name` (one of KERNELS) writing `out`; recorded when a segment is open.
    def launch(self, name: str, out: Buffer, *args: Buffer) -> None: ...

    # Open a segment: launches from now on are recorded into it.
    def begin_segment(self) -> None: ...

    # Close the open segment; the buffers it writes hold the result of running it once.
    def end_segment(self) -> Segment: ...

    # Close the open segment, if any, and drop it (capture failed).
    def abort_segment(self) -> None: ...

    # Re-execute a recorded segment against the buffers it was recorded over.
    def replay_segment(self, segment: Segment) -> None: ...

    # Run a break op eagerly, outside any segment; its result is a fresh buffer.
    def run_eager(self, op: BreakOp, *args: Buffer) -> Buffer: ...

    # Segments replayed and break ops run so far.
    def counts(self) -> Counts: ...


REGISTRY: dict[str, str] = {
    "sim": "sim",
    "cuda": "cuda",  # imported only when asked for: needs a GPU and cuda-python
}


def create(name: str) -> Backend:
    """A new backend instance; KeyError names the known backends."""
    if name not in REGISTRY:
        raise KeyError(f"unknown backend {name!r} (known: {', '.join(sorted(REGISTRY))})")
    module = importlib.import_module(f"seam.backends.{REGISTRY[name]}")
    backend: Backend = module.create()
    return backend
