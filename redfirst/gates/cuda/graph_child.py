"""The child process of the `cuda-graph` driver: runs every (variant, shape) arm of a factory
and appends one observation per arm to `$GATES_EVIDENCE/evidence.jsonl`.

    python -m redfirst.gates.cuda.graph_child --run module:function --variants '["dense"]' \
        --shapes '[[1, 128]]' --warmup 2 --replays 4 --repeat-eager 2

Exit status: 0 when every arm was observed (whatever it showed: the observations carry the
verdict; a factory that cannot be loaded is an `error` observation, graded ERROR), 2 for a
usage error. Without cuda-python or
a device it records one `unavailable` observation and exits 0: the grader makes that
NO_DECISION ("cannot produce capture evidence").
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import sys
from collections.abc import Sequence
from typing import Any

from redfirst.gates import evidence
from redfirst.gates.cuda.observation import KIND


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m redfirst.gates.cuda.graph_child")
    p.add_argument("--run", required=True, help="factory module:function")
    p.add_argument("--variants", required=True, help="JSON list of variant names")
    p.add_argument("--shapes", required=True, help="JSON list of shapes (lists of integers)")
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--replays", type=int, default=4)
    p.add_argument("--repeat-eager", type=int, default=2)
    p.add_argument("--device", type=int, default=0)
    p.add_argument("--capture", choices=("stream", "torch"), default="stream",
                   help="capture on the raw stream, or through torch.cuda.CUDAGraph")
    p.add_argument("--hazard", default=None, help="inject this graph hazard (redfirst.gates.cuda.hazards)")
    p.add_argument("--dtype", choices=("float32", "bfloat16", "float16"), default=None,
                   help="the dtype of a Native factory's floating inputs and module")
    return p


def load_factory(spec: str) -> Any:
    """`module:function` imported with the working directory first on sys.path."""
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise ValueError(f"factory {spec!r} is not module:function")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    target: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        target = getattr(target, part)
    if not callable(target):
        raise ValueError(f"factory {spec!r} is not callable")
    return target


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        variants = [str(v) for v in json.loads(args.variants)]
        shapes = [tuple(int(x) for x in s) for s in json.loads(args.shapes)]
    except (ValueError, TypeError) as exc:
        print(f"graph_child: bad --variants/--shapes: {exc}", file=sys.stderr)
        return 2
    rec = evidence.recorder()
    if not rec.active:
        print(f"graph_child: {evidence.ENV} is not set; nowhere to record observations", file=sys.stderr)
        return 2

    from redfirst.gates.cuda import rt

    try:
        from redfirst.gates.cuda import comparator
        from redfirst.gates.cuda.device import identify

        identity = identify(args.device)
        comp = comparator.get()
    except Exception as exc:  # no cuda-python, driver, device or NVRTC: no evidence, never a verdict on the code
        reason = str(exc) if isinstance(exc, rt.Unavailable) else f"comparator unavailable: {type(exc).__name__}: {exc}"
        rec.observation(KIND, unavailable=reason)
        print(f"cannot produce capture evidence: {reason}", file=sys.stderr)
        return 0
    print(f"device: {identity.describe()}", file=sys.stderr)

    try:
        factory = load_factory(args.run)
    except Exception as exc:  # the gate names a factory that cannot be loaded: the gate is wrong (ERROR)
        message = f"cannot load factory {args.run!r}: {type(exc).__name__}: {exc}"
        rec.observation(KIND, error=message)
        print(f"graph_child: {message}", file=sys.stderr)
        return 0

    from redfirst.gates.cuda.arm import Plan, run_arm
    from redfirst.gates.cuda.hazards import HAZARDS, HazardFailure, Unscoped

    if args.hazard is not None and args.hazard not in HAZARDS:
        rec.observation(KIND, error=f"unknown hazard {args.hazard!r} (known: {', '.join(HAZARDS)})")
        return 0

    plan = Plan(warmup=args.warmup, replays=args.replays, repeat_eager=args.repeat_eager)
    stream = rt.new_stream()
    values = differing = replays = 0
    for variant in variants:
        for shape in shapes:
            try:
                obs = run_arm(factory, variant, shape, plan, stream, comp, identity.as_record(),
                              capture_mode=args.capture, hazard=args.hazard, dtype=args.dtype)
            except Unscoped as exc:
                rec.observation(KIND, unscoped=f"hazard {args.hazard}: {exc}")
                print(f"hazard {args.hazard} does not apply: {exc}", file=sys.stderr)
                return 0
            except HazardFailure as exc:  # the harness failed, not the step: ERROR, never a kill
                rec.observation(KIND, error=f"harness failure: {exc}")
                print(f"graph_child: harness failure: {exc}", file=sys.stderr)
                return 0
            rec.observation(KIND, **obs.fields())
            fresh = [c for c in obs.comparisons if c.phase == "replay"]
            values += sum(c.values for c in fresh)
            differing += sum(c.differing for c in fresh)
            replays += obs.replays_completed
            status = obs.failure_class or ("ok" if obs.failure is None else "no decision")
            print(f"{obs.label}: {status}; {obs.replays_completed} replays, "
                  f"{sum(c.values for c in fresh)} values, {sum(c.differing for c in fresh)} differing"
                  + (f"; {obs.failure}" if obs.failure else ""), file=sys.stderr)
    rec.counter("cuda_graph.values", values)
    rec.counter("cuda_graph.differing", differing)
    rec.counter("cuda_graph.replays", replays)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
