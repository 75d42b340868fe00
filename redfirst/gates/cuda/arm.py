"""One arm of the cuda-graph driver: a step at one (variant, shape), eager then captured.

Order (DESIGN section 6): warm up; `repeat_eager` eager runs on the same inputs, each
compared with the first; capture in thread-local mode; replay 0 on the inputs it was
captured with; then `replays` replays, each on fresh inputs, each compared with an eager
run on the same inputs. Outputs are poisoned before every run, so a run that does not
write an output cannot pass by finding the previous result there.

A fresh replay that differs from eager is then told apart from a stale capture: the step is
captured again on that replay's own inputs, by a step the factory builds anew, and replayed once
("recapture" k, the replay's output as reference). Equal bit for bit, the replay computed what a capture of those inputs computes
(the captured kernels differ from eager: kernel selection under capture); different, the first
capture is stale. Only that comparison may let a gate's `max_ulp` cover a fresh replay.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from redfirst.gates.cuda import capture, rt
from redfirst.gates.cuda import step as steps
from redfirst.gates.cuda.buffers import DeviceBuffer, DeviceView, copy_async, fill_async, view_of
from redfirst.gates.cuda.comparator import DeviceComparator
from redfirst.gates.cuda.observation import Compared, Observation, replay_tally
from redfirst.gates.cuda.ulp import WIDTHS, max_ulp

POISON = (0xA5, 0x5A)
CAPTURE_SEED = 0


@dataclass(frozen=True)
class Plan:
    warmup: int = 2
    replays: int = 4
    repeat_eager: int = 2


def _outputs(step: Any) -> dict[str, DeviceView]:
    outs = step.outputs()
    if not isinstance(outs, Mapping) or not outs:
        raise TypeError("outputs() must return a non-empty mapping of name -> device array")
    return {str(k): view_of(v) for k, v in outs.items()}


def _poison(outs: Mapping[str, DeviceView], round_: int, stream: int) -> None:
    for v in outs.values():
        fill_async(v.ptr, POISON[round_ % 2], v.nbytes, stream)


def _snapshot(outs: Mapping[str, DeviceView], into: Mapping[str, DeviceBuffer], stream: int) -> None:
    for name, v in outs.items():
        copy_async(into[name].ptr, v.ptr, v.nbytes, stream)


def _one_line(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".splitlines()[0][:400]


def _capture(mode: str, stream: int, step: Any) -> Any:
    if mode == "torch":
        from redfirst.gates.cuda.torch_step import TorchGraph

        return TorchGraph(stream, step)
    return capture.capture(stream, step)


def make_step(factory: Any, variant: str, shape: tuple[int, ...], stream: int, hazard: str | None,
              dtype: str | None = None, wrap: Any = None) -> Any:
    """The factory's step: a Step as is, a torch-native one adapted (its floating inputs and module in
    `dtype` when the gate declares one), wrapped by `wrap` (a rank's collective hazard), with the
    graph hazard (if any) injected."""
    from redfirst.gates.cuda.torch_step import NativeStep, as_native

    made = factory(variant, tuple(shape))
    native = as_native(made)
    step = NativeStep(native, stream, dtype) if native is not None else made
    if wrap is not None:
        step = wrap(step)
    if hazard:
        from redfirst.gates.cuda.hazards import HazardFailure, HazardStep, Unscoped

        try:
            step = HazardStep(step, hazard)
        except (rt.Unavailable, Unscoped):
            raise
        except Exception as exc:  # the step was built: what failed is the injection, the harness's own work
            raise HazardFailure(f"cannot inject hazard {hazard}: {_one_line(exc)}") from exc
    return step


def run_arm(factory: Any, variant: str, shape: tuple[int, ...], plan: Plan, stream: int,
            comparator: DeviceComparator, device: dict[str, Any], capture_mode: str = "stream",
            hazard: str | None = None, dtype: str | None = None, wrap: Any = None,
            recapture: bool = True) -> Observation:
    """Observe one (variant, shape). Failures of the code under test become the observation's
    failure class; only a failure of the harness itself raises (and hazards.Unscoped).
    `recapture` False: no second capture (a rank of a group: its peers would not join the
    collectives a capture of one rank alone replays)."""
    from redfirst.gates.cuda.hazards import HazardFailure, Unscoped
    from redfirst.gates.cuda.torch_step import frameworks

    comparisons: list[Compared] = []
    state: dict[str, Any] = {"applicable": True, "required": True, "at_capture": None, "nodes": None}

    def observed(failure_class: str | None, failure: str | None, eager_ok: bool) -> Observation:
        completed, passed = replay_tally(comparisons)
        return Observation(
            variant=variant, shape=shape, applicable=state["applicable"], eager_passed=eager_ok,
            graph_required=state["required"], replays_completed=completed, replays_passed=passed,
            failure_class=failure_class, failure=failure, applicable_at_capture=state["at_capture"],
            graph_nodes=state["nodes"], comparisons=tuple(comparisons), device=device,
            capture=capture_mode, hazard=hazard, frameworks=frameworks(),
        )

    def compare(phase: str, index: int, fresh: bool, outs: Mapping[str, DeviceView],
                refs: Mapping[str, DeviceBuffer]) -> None:
        for name, v in outs.items():
            raw = comparator.compare(refs[name].view, v, stream)
            record = raw.as_record()
            if raw.differing and v.dtype in WIDTHS:  # how far apart, over the whole output, on the raw bits
                from redfirst.gates.cuda.buffers import copy_to_host

                record["max_ulp"] = max_ulp(copy_to_host(refs[name].ptr, v.nbytes, stream).tobytes(),
                                            copy_to_host(v.ptr, v.nbytes, stream).tobytes(), v.dtype)
            comparisons.append(Compared(phase, index, fresh, name, record))

    def eager(step: Any, outs: Mapping[str, DeviceView], refs: Mapping[str, DeviceBuffer],
              scratch: Mapping[str, DeviceBuffer]) -> None:
        step.inputs(CAPTURE_SEED, stream)
        for _ in range(plan.warmup):
            step(stream)
        rt.synchronize(stream)
        for r in range(plan.repeat_eager):
            step.inputs(CAPTURE_SEED, stream)
            _poison(outs, r, stream)
            step(stream)
            _snapshot(outs, refs if r == 0 else scratch, stream)
            rt.synchronize(stream)
            if r:
                compare("eager", r, False, {n: b.view for n, b in scratch.items()}, refs)

    def captured(step: Any) -> Any:
        step.inputs(CAPTURE_SEED, stream)
        rt.synchronize(stream)
        graph = _capture(capture_mode, stream, step)
        state["nodes"] = graph.nodes
        state["at_capture"] = steps.applicable(step)
        return graph

    # eager: factory, warm-up, determinism (the skipped-warmup hazard captures before all of it)
    graph = None
    try:
        step = make_step(factory, variant, shape, stream, hazard, dtype, wrap)
        state["applicable"], state["required"] = steps.applicable(step), steps.graph_required(step)
        if not state["applicable"]:
            return observed(None, "the step reports this variant and shape not applicable", True)
        outs = _outputs(step)
        refs = {n: DeviceBuffer.like(v) for n, v in outs.items()}
        scratch = {n: DeviceBuffer.like(v) for n, v in outs.items()}
        first = bool(getattr(step, "captures_first", False))
        if first:
            try:
                graph = captured(step)
            except Exception as exc:
                return observed("capture", _one_line(exc), True)
        eager(step, outs, refs, scratch)
    except (rt.Unavailable, Unscoped, HazardFailure):
        raise
    except Exception as exc:
        return observed("eager", _one_line(exc), False)
    eager_ok = all(c.holds for c in comparisons)
    if not eager_ok:
        return observed(None, "eager not deterministic: two eager runs on the same inputs differ", False)

    # capture, on the capture-time inputs
    if graph is None:
        try:
            graph = captured(step)
        except Exception as exc:
            return observed("capture", _one_line(exc), eager_ok)
    if state["at_capture"] != state["applicable"]:
        return observed(None, "applicability changed between eager runs and capture", eager_ok)

    def recaptured(k: int, seed: int) -> None:
        """Replay k's outputs against a capture made on its own inputs by a step the factory builds
        anew (warmed up as the first was), replayed once: nothing the first step kept from its own
        capture (a cached value, a baked scalar) is in the second."""
        _snapshot(outs, scratch, stream)
        again, other = None, None
        try:
            other = make_step(factory, variant, shape, stream, hazard, dtype, wrap)
            other_outs = _outputs(other)
            if other_outs.keys() != outs.keys():
                return
            other.inputs(seed, stream)
            for _ in range(plan.warmup):
                other(stream)
            other.inputs(seed, stream)
            rt.synchronize(stream)
            again = _capture(capture_mode, stream, other)
            other.inputs(seed, stream)
            _poison(other_outs, 0, stream)
            again.launch(stream)
            rt.synchronize(stream)
            compare("recapture", k, True, other_outs, scratch)
        except Exception:       # no second capture: nothing is recorded, the difference stands
            return
        finally:
            if again is not None:
                again.destroy()
            close = getattr(other, "close", None)
            if callable(close):
                close()

    # replays: 0 as captured (reference: eager run 0), then fresh inputs
    try:
        for k in range(plan.replays + 1):
            seed = CAPTURE_SEED if k == 0 else 1000 + k
            if k:
                step.inputs(seed, stream)
                _poison(outs, 0, stream)
                step(stream)
                _snapshot(outs, refs, stream)
            step.inputs(seed, stream)
            _poison(outs, 1, stream)  # never the poison of the eager run it is compared with
            graph.launch(stream)
            rt.synchronize(stream)
            compare("replay", k, k > 0, outs, refs)
            if recapture and k and any(c.phase == "replay" and c.index == k and not c.holds for c in comparisons):
                recaptured(k, seed)
    except HazardFailure:
        raise
    except Exception as exc:
        return observed("replay", _one_line(exc), eager_ok)
    finally:
        graph.destroy()
        for buf in (*refs.values(), *scratch.values()):
            buf.free()
        close = getattr(step, "close", None)
        if callable(close):
            close()
    failed = [c for c in comparisons if c.phase == "replay" and not c.holds]
    if failed:
        first_bad = failed[0]
        return observed("replay", f"replay {first_bad.index} output {first_bad.output}: "
                                  f"{first_bad.raw.get('differing')} differing of {first_bad.raw.get('values')}",
                        eager_ok)
    return observed(None, None, eager_ok)
