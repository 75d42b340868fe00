"""One arm on the simulated rank backend: the phases of redfirst.gates.cuda.arm over host buffers.

Warm-up; `repeat_eager` eager runs on the capture seed's inputs, each compared with the
first; capture (collectives recorded, not run); replay 0 on the captured inputs; then
`replays` replays on fresh per-rank inputs, each against an eager run on the same inputs.
Outputs are poisoned before every run. Comparisons are redfirst.gates.cuda.comparator's
host records, so the grader reads the same raw fields as for a device. What fails in the harness's
own work (poisoning, comparing, injecting a hazard) raises HarnessFailure: an ERROR, never the step's RED.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from redfirst.gates.cuda import step as steps
from redfirst.gates.cuda.arm import CAPTURE_SEED, POISON, Plan
from redfirst.gates.cuda.comparator import compare_host
from redfirst.gates.cuda.observation import Compared, Observation, replay_tally
from redfirst.gates.cuda.sim import SimGraph, SimGroup, SimStream, poison
from redfirst.gates.cuda.ulp import WIDTHS, max_ulp


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:400]


class HarnessFailure(Exception):
    """redfirst's own work on a rank failed (poisoning, snapshots, comparisons, injecting a hazard): the
    rank child reports it as an error (ERROR), never as the step failing (RED) or a hazard caught."""


def _harness(what: str, fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        raise HarnessFailure(f"{what}: {_one_line(exc)}") from exc


def seed_of(rank: int, seed: int) -> int:
    """Every rank is given the same seed (a tensor-parallel step's input is replicated); each rank
    writes its own input buffers from it, and draws anything rank-specific from `group.rank`."""
    return seed


def run_arm(factory: Any, variant: str, shape: tuple[int, ...], plan: Plan, group: SimGroup,
            progress: Callable[[str], None], wrap: Callable[[Any], Any] | None = None) -> Observation:
    stream = SimStream()
    comparisons: list[Compared] = []
    state: dict[str, Any] = {"applicable": True, "required": True, "at_capture": None, "nodes": None}

    def observed(failure_class: str | None, failure: str | None, eager_ok: bool) -> Observation:
        completed, passed = replay_tally(comparisons)
        log = group.log
        return Observation(
            variant=variant, shape=shape, applicable=state["applicable"], eager_passed=eager_ok,
            graph_required=state["required"], replays_completed=completed, replays_passed=passed,
            failure_class=failure_class, failure=failure, applicable_at_capture=state["at_capture"],
            graph_nodes=state["nodes"], comparisons=tuple(comparisons), device=group_device(group),
            capture="stream", hazard=None, rank=group.rank, world_size=group.world_size, tp_size=group.tp_size,
            collectives={"eager": [e for e in log if not e["capturing"]][:256],
                         "capture": [e for e in log if e["capturing"]]})

    def compare(phase: str, index: int, fresh: bool, outs: Mapping[str, Any], refs: Mapping[str, Any]) -> None:
        _harness(f"{variant} {list(shape)}: {phase} {index}: compare", _compare, phase, index, fresh, outs, refs)

    def _compare(phase: str, index: int, fresh: bool, outs: Mapping[str, Any], refs: Mapping[str, Any]) -> None:
        for name, a in outs.items():
            raw = compare_host(refs[name], a, str(a.dtype))
            record = raw.as_record()
            if raw.differing and str(a.dtype) in WIDTHS:
                record["max_ulp"] = max_ulp(refs[name].tobytes(), a.tobytes(), str(a.dtype))
            comparisons.append(Compared(phase, index, fresh, name, record))

    group.log = []
    try:
        progress("eager")
        step = factory(variant, tuple(shape), group)
        if wrap is not None:
            step = _harness("inject the hazard", wrap, step)
        state["applicable"], state["required"] = steps.applicable(step), steps.graph_required(step)
        if not state["applicable"]:
            return observed(None, "the step reports this variant and shape not applicable", True)
        outs: dict[str, np.ndarray[Any, Any]] = {str(k): v for k, v in step.outputs().items()}
        group.outputs = outs
        refs = {n: np.empty_like(a) for n, a in outs.items()}
        step.inputs(seed_of(group.rank, CAPTURE_SEED), stream)
        for _ in range(plan.warmup):
            step(stream)
        for r in range(plan.repeat_eager):
            step.inputs(seed_of(group.rank, CAPTURE_SEED), stream)
            _harness("poison the outputs", poison, outs, POISON[r % 2])
            step(stream)
            if r == 0:
                for n, a in outs.items():
                    refs[n][...] = a
            else:
                compare("eager", r, False, outs, refs)
    except HarnessFailure:
        raise
    except Exception as exc:
        return observed("eager", _one_line(exc), False)
    eager_ok = all(c.holds for c in comparisons)
    if not eager_ok:
        return observed(None, "eager not deterministic: two eager runs on the same inputs differ", False)
    try:
        progress("capture")
        step.inputs(seed_of(group.rank, CAPTURE_SEED), stream)
        graph = SimGraph(stream, step)
        state["nodes"], state["at_capture"] = graph.nodes, steps.applicable(step)
    except HarnessFailure:
        raise
    except Exception as exc:
        return observed("capture", _one_line(exc), eager_ok)
    if state["at_capture"] != state["applicable"]:
        return observed(None, "applicability changed between eager runs and capture", eager_ok)
    try:
        progress("replay")
        for k in range(plan.replays + 1):
            seed = seed_of(group.rank, CAPTURE_SEED if k == 0 else 1000 + k)
            if k:
                step.inputs(seed, stream)
                _harness("poison the outputs", poison, outs, POISON[0])
                step(stream)
                for n, a in outs.items():
                    refs[n][...] = a
            step.inputs(seed, stream)
            _harness("poison the outputs", poison, outs, POISON[1])
            graph.launch(stream)
            compare("replay", k, k > 0, outs, refs)
    except HarnessFailure:
        raise
    except Exception as exc:
        return observed("replay", _one_line(exc), eager_ok)
    failed = [c for c in comparisons if c.phase == "replay" and not c.holds]
    if failed:
        bad = failed[0]
        return observed("replay", f"replay {bad.index} output {bad.output}: {bad.raw.get('differing')} differing "
                                  f"of {bad.raw.get('values')}", eager_ok)
    return observed(None, None, eager_ok)


def group_device(group: SimGroup) -> dict[str, Any]:
    from redfirst.gates.cuda.sim import device

    return device(group.rank)
