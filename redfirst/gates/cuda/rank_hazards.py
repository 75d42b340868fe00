"""Collective hazards: the faults of a tensor-parallel step, injected at run time into each rank's step.

`mutate hazards` runs a gate with `ranks:` once per hazard (as redfirst.gates.cuda.hazards
does for one device); each rank's child wraps its step in `RankHazardStep`:

- `collective-order`: the step also issues two all-reduces of different sizes; the last rank
  issues them in the other order.
- `rank-host-branch`: on the last rank only, a host value computed per input (a Python
  number, branching on the rank) is written into the output while the step runs: a capture
  freezes it.
- `group-in-step`: the step makes a process group each time it runs, captured included.

The group gives the backend's primitives (redfirst.gates.cuda.sim.SimGroup, or the NCCL
group of redfirst.gates.cuda.rank_nccl): `all_reduce`, `new_group`, `scratch`, `host_write`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from redfirst.gates.cuda.hazards import host_scalar

COLLECTIVE_HAZARDS = ("collective-order", "rank-host-branch", "group-in-step")


class RankHazardStep:
    """A rank's step with one collective hazard injected; everything else is the inner step's."""

    def __init__(self, inner: Any, hazard: str, group: Any) -> None:
        if hazard not in COLLECTIVE_HAZARDS:
            raise ValueError(f"unknown collective hazard {hazard!r} (known: {', '.join(COLLECTIVE_HAZARDS)})")
        self.inner, self.hazard, self.group = inner, hazard, group
        self.seed = 0
        self.applicable = getattr(inner, "applicable", True)
        self.graph_required = getattr(inner, "graph_required", True)
        self.last = group.rank == group.world_size - 1
        self.pair = (group.scratch(3), group.scratch(5)) if hazard == "collective-order" else ()

    def inputs(self, seed: int, stream: Any) -> None:
        self.seed = seed
        self.inner.inputs(seed, stream)

    def __call__(self, stream: Any) -> None:
        if self.hazard == "group-in-step":
            self.group.new_group(stream)
        self.inner(stream)
        if self.hazard == "collective-order":
            for buf in (reversed(self.pair) if self.last and self.group.world_size > 1 else self.pair):
                self.group.all_reduce(buf, stream)
        if self.hazard == "rank-host-branch" and self.last:
            value = host_scalar(self.seed)   # read on the host when the step runs: a capture keeps this one
            for out in self.inner.outputs().values():
                self.group.host_write(out, value, stream)

    def outputs(self) -> Mapping[str, Any]:
        outs: Mapping[str, Any] = self.inner.outputs()
        return outs


def wrapper(hazard: str, group: Any) -> Callable[[Any], Any]:
    """What the rank child applies to the factory's step for `hazard`."""
    return lambda step: RankHazardStep(step, hazard, group)
