"""What a `cuda-graph` factory returns: a step over device buffers it owns.

    def make_step(variant: str, shape: tuple[int, ...]) -> Step

The driver calls `inputs(seed, stream)` to write fresh inputs, `step(stream)` to queue the
work (eagerly, and once inside a thread-local capture), and compares every buffer of
`outputs()` bit for bit between graph replays and eager runs on the same inputs. All
buffers are allocated by the factory: nothing may be allocated inside `__call__`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Step(Protocol):
    # Write the inputs for `seed` (device buffers, and any host state the step reads).
    def inputs(self, seed: int, stream: int) -> None: ...

    # Queue the work on `stream`; must be capturable (no synchronisation, no allocation).
    def __call__(self, stream: int) -> None: ...

    # Output buffers by name: torch/CuPy device arrays, DeviceBuffer or DeviceView.
    def outputs(self) -> Mapping[str, Any]: ...


def applicable(step: Any) -> bool:
    """Optional attribute: False when this (variant, shape) does not run as a graph."""
    return bool(getattr(step, "applicable", True))


def graph_required(step: Any) -> bool:
    """Optional attribute: False when the code may fall back to eager for this (variant, shape)."""
    return bool(getattr(step, "graph_required", True))
