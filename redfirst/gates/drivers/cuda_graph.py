"""Driver `cuda-graph` (DESIGN section 6): eager, captured and replayed steps, graded from raw observations.

The child (`python -m redfirst.gates.cuda.graph_child`) records one observation per (variant,
shape); `grade_observations` decides from those raw records alone, so `gates regrade`
reproduces the verdict on a machine without a GPU. Aggregates the child wrote
(`replays_passed`, `eager_passed`) are not trusted: they are recomputed from the
comparisons.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.cuda.observation import DEFAULTS, KIND, Compared, Observation
from redfirst.gates.cuda.rank_grade import UNSCOPED, declared_ranks, grade_ranks
from redfirst.gates.drivers import Driver, Invocation
from redfirst.gates.evidence import ENV
from redfirst.gates.model import Gate
from redfirst.verdict import Cause, Outcome, error, green, no_decision, red

NO_EVIDENCE = "cannot produce capture evidence"
FLOATING = ("float32", "bfloat16", "float16", "float64")


def _plain(value: Any) -> Any:
    # options are frozen (tuples) by the loader; JSON wants lists
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def declared(gate: Gate) -> tuple[list[str], list[tuple[int, ...]], dict[str, int]]:
    d = gate.driver
    variants = [str(v) for v in _plain(d.option("variants", []))]
    shapes = [tuple(int(x) for x in s) for s in _plain(d.option("shapes", []))]
    plan = {k: int(d.option(k, v)) for k, v in DEFAULTS.items()}
    return variants, shapes, plan


def with_hazard(gate: Gate, hazard: str) -> Gate:
    """`gate` with the driver option `hazard` (set by `mutate hazards` and by regrade of its records only)."""
    options = tuple(sorted((*[(k, v) for k, v in gate.driver.options if k != "hazard"], ("hazard", hazard))))
    return dataclasses.replace(gate, driver=dataclasses.replace(gate.driver, options=options))


class CudaGraphDriver(Driver):
    name = "cuda-graph"
    default_format = "none"
    option_keys = frozenset({"variants", "shapes", "warmup", "replays", "repeat_eager", "capture", "ranks", "dtype",
                             "max_ulp"})
    counts_format = None
    unserved = "capture evidence"
    runner = None

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        variants, shapes, plan = declared(gate)
        d = gate.driver
        run = gate.driver.run if isinstance(gate.driver.run, str) else " ".join(gate.driver.run)
        argv: tuple[str, ...] = (
            sys.executable, "-m", "redfirst.gates.cuda.graph_child", "--run", run,
            "--variants", json.dumps(variants), "--shapes", json.dumps([list(s) for s in shapes]),
            "--warmup", str(plan["warmup"]), "--replays", str(plan["replays"]),
            "--repeat-eager", str(plan["repeat_eager"]), "--capture", str(d.option("capture", "stream")),
        )
        hazard = d.option("hazard", None)  # set by `mutate hazards` only, never by a gate file
        if hazard is not None:
            argv = (*argv, "--hazard", str(hazard))
        if d.option("dtype", None) is not None:
            argv = (*argv, "--dtype", str(d.option("dtype", None)))
        spec = declared_ranks(gate)
        if spec is not None:
            # the launcher ends every rank before the gate's own timeout, to say which one hung
            deadline = max(1.0, gate.driver.timeout - min(10.0, 0.2 * gate.driver.timeout))
            argv = (sys.executable, "-m", "redfirst.gates.cuda.ranks", *argv[3:],
                    "--world-size", str(spec["world_size"]), "--tp-size", str(spec["tp_size"]),
                    "--backend", spec["backend"], "--deadline", f"{deadline:g}", "--timeout", f"{deadline:g}",
                    "--rendezvous-timeout", f"{min(30.0, deadline / 2):g}")
        return Invocation(argv=argv, env=((ENV, str(evidence_dir)), *gate.driver.env),
                          cwd=(root / gate.driver.cwd))

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        """The child exits 0 whenever it observed (the observations carry the verdict); any other
        status is the harness failing (a usage error, a traceback): ERROR, never a RED or a kill."""
        if code is None or code == 0:
            return None
        tail = " ".join(stderr.strip().splitlines()[-3:])[-400:]
        return error(Cause.CONFIG, f"cuda-graph: the harness (redfirst.gates.cuda.graph_child) exited {code} before its "
                                   f"observations were complete: {tail or 'no stderr'}")

    def grade_placement(self, context: Mapping[str, Any], observations: Sequence[dict[str, Any]]) -> Outcome | None:
        """NO_DECISION when the arms ran on a device the record's lease did not grant, or name a
        framework version other than the one the record's context saw."""
        return lease_mismatch(context, observations) or framework_mismatch(context, observations)

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return grade(gate, observations)


def _compared_text(c: Compared) -> str:
    raw = c.raw
    if raw.get("mismatch"):
        return str(raw["mismatch"])
    text = f"{raw.get('values')} values, {raw.get('differing')} differing"
    if c.differing and raw.get("first_index") is not None:
        text += (f"; first at index {raw['first_index']}: reference {_bits(raw, 'reference')} "
                 f"candidate {_bits(raw, 'candidate')}")
    return text


def _bits(raw: dict[str, Any], side: str) -> str:
    value = raw.get(f"{side}_bits")
    if value is None:
        return "?"
    width = 2 * int(raw.get("itemsize") or _itemsize(str(raw.get("dtype"))))
    return f"0x{int(value):0{width}x}"


def _itemsize(dtype: str) -> int:
    from redfirst.gates import dtypes

    try:
        return dtypes.lookup(dtype).itemsize
    except Exception:
        return 4


def _grade_arm(obs: Observation, replays: int, repeat_eager: int, max_ulp: int | None = None) -> Outcome:
    """One (variant, shape): RED for a failure, NO_DECISION for missing evidence, else GREEN."""
    where = obs.label
    if obs.failure_class == "eager":
        return red(Cause.ASSERTION, f"{where}: failed eagerly: {obs.failure}")
    if obs.graph_required and not obs.applicable:
        return red(Cause.ASSERTION, f"{where}: applicability disagreement: the graph is required but the step "
                                    "reports this variant and shape not applicable")
    if obs.applicable_at_capture is not None and obs.applicable_at_capture != obs.applicable:
        return red(Cause.ASSERTION, f"{where}: applicability disagreement: applicable={obs.applicable} eagerly, "
                                    f"{obs.applicable_at_capture} at capture")
    if not obs.applicable:
        return no_decision(Cause.EVIDENCE, f"{where}: not applicable, nothing captured")
    eager = [c for c in obs.comparisons if c.phase == "eager"]
    if any(c.values > 0 and (c.differing or c.raw.get("mismatch")) for c in eager):
        bad = next(c for c in eager if c.differing or c.raw.get("mismatch"))
        return no_decision(Cause.EVIDENCE, f"{where}: eager not deterministic: eager run {bad.index} output "
                                           f"{bad.output}: {_compared_text(bad)}")
    if obs.failure_class == "capture":
        return red(Cause.ASSERTION, f"{where}: capture failed: {obs.failure}")
    replay = [c for c in obs.comparisons if c.phase == "replay"]
    again = {(c.index, c.output): c for c in obs.comparisons if c.phase == "recapture"}
    failed = [c for c in replay if c.differing or c.raw.get("mismatch")]
    within = [c for c in failed if _within_ulp(c, max_ulp, again)]
    failed = [c for c in failed if c not in within]
    if failed:
        c = failed[0]
        kind = "fresh inputs" if c.fresh else "the captured inputs"
        needed = [int(d.raw["max_ulp"]) for d in replay if _within_ulp(d, 1 << 62, again)]
        return red(Cause.ASSERTION, f"{where}: replay {c.index} ({kind}) output {c.output}: {_compared_text(c)}"
                                    + _replay0_reason(c, max(needed, default=None)) + _fresh_reason(c, again))
    explained = any(obs.failure == f"replay {c.index} output {c.output}: {c.raw.get('differing')} differing of "
                                   f"{c.raw.get('values')}" for c in within)
    if obs.failure_class == "replay" and not explained:
        return red(Cause.ASSERTION, f"{where}: replay failed: {obs.failure}")
    if obs.failure and not explained:
        # the child said something went wrong and named no class: never GREEN over its word
        return no_decision(Cause.EVIDENCE, f"{where}: the child reported {obs.failure!r}")
    empty = [c for c in (*eager, *replay) if c.values <= 0]
    if empty:
        return no_decision(Cause.EVIDENCE, f"{where}: output {empty[0].output} compared 0 values")
    # every output either phase compared must be compared in every eager run and every replay
    outputs = {c.output for c in (*eager, *replay)}
    runs = {r: {c.output for c in eager if c.index == r} for r in range(1, repeat_eager)}
    unseen = [r for r, seen in runs.items() if seen != outputs]
    if unseen:
        return no_decision(Cause.EVIDENCE, f"{where}: eager determinism not observed: eager run {unseen[0]} did "
                                           f"not compare {', '.join(sorted(outputs - runs[unseen[0]])) or 'anything'}"
                                           f" ({repeat_eager} eager runs declared)")
    if not replay:
        return no_decision(Cause.EVIDENCE, f"{where}: no replay was compared")
    captured = {c.output: c.raw["reference_hash64"] for c in eager if c.index == 1}
    done: list[int] = []
    outputs_of: dict[tuple[tuple[str, str], ...], int] = {}
    for k in sorted({c.index for c in replay if c.index >= 1}):
        at_k = [c for c in replay if c.index == k]
        if not all(c.fresh for c in at_k) or {c.output for c in at_k} != outputs:
            continue
        # fresh inputs that leave every output as captured cannot show a stale capture
        if all(c.raw["reference_hash64"] == captured[c.output] for c in at_k):
            return no_decision(Cause.EVIDENCE, f"{where}: replay {k}'s fresh inputs gave the same outputs as the "
                                               "captured inputs: the replays cannot tell a stale capture")
        # replays on the same fresh inputs are one replay: each counted one must see inputs of its own
        seen_as = tuple(sorted((c.output, str(c.raw["reference_hash64"])) for c in at_k))
        if seen_as in outputs_of:
            return no_decision(Cause.EVIDENCE, f"{where}: replay {k}'s fresh inputs gave the same outputs as replay "
                                               f"{outputs_of[seen_as]}'s: not {replays} distinct fresh replays")
        outputs_of[seen_as] = k
        done.append(k)
    if len(done) < replays:
        return red(Cause.ASSERTION, f"{where}: {len(done)} of {replays} replays with fresh inputs completed")
    values = sum(c.values for c in replay if c.fresh)
    fresh_within = sum(c.differing for c in within if c.fresh)
    which = "replays" if fresh_within else "replay 0"
    reproduced = "; each fresh replay equal bit for bit to a capture of its own inputs" if fresh_within else ""
    ulps = f"{which} within {max_ulp} ULP of eager (largest {max(int(c.raw['max_ulp']) for c in within)} ULP; " \
        f"not bit-exact{reproduced}), " if within else ""
    differing = f"{fresh_within} within {max_ulp} ULP" if fresh_within else "0 differing"
    return green(f"{where}: {ulps}{values} values, {differing}, {len(done)} replays")


def _within_ulp(c: Compared, max_ulp: int | None, again: Mapping[tuple[int, str], Compared]) -> bool:
    """The opt-in allowance, where the child measured the largest distance over the whole output:
    replay 0 on the captured inputs (a capture cannot be stale there), and a fresh replay only
    where a capture made on its own inputs gives its output bit for bit (`_reproduced`): then
    it is not stale either. A stale capture is never covered, whatever `max_ulp` says."""
    distance, first = c.raw.get("max_ulp"), _first_ulp(c)
    # the first difference, read from its raw bits, can be no farther than the largest: else the record lies
    return (max_ulp is not None and not c.raw.get("mismatch") and (
                (c.index == 0 and not c.fresh) or (c.index > 0 and c.fresh and _reproduced(c, again)))
            and isinstance(distance, int) and not isinstance(distance, bool) and 0 < distance <= max_ulp
            and first is not None and first <= distance)


def _reproduced(c: Compared, again: Mapping[tuple[int, str], Compared]) -> bool:
    """Fresh replay `c`'s output, bound by its hash, equal bit for bit to that of a capture made
    on the same inputs and replayed once (the child's "recapture" comparison)."""
    r = again.get((c.index, c.output))
    return (r is not None and r.fresh and not r.raw.get("mismatch") and r.values == c.values > 0
            and r.differing == 0 and r.raw.get("reference_hash64") == c.raw.get("candidate_hash64")
            and r.raw.get("candidate_hash64") == c.raw.get("candidate_hash64"))


def _replay0_reason(c: Compared, needed: int | None = None) -> str:
    """Why replay 0 differs: on the captured inputs a capture cannot be stale, so the captured
    kernels compute differently from eager (kernel selection under capture), by this many ULP;
    and `needed`, the largest distance over every replay explained so: the `max_ulp` that covers them."""
    if c.fresh or c.index != 0 or c.raw.get("mismatch"):
        return ""
    distance = c.raw.get("max_ulp")
    if not isinstance(distance, int) or isinstance(distance, bool):
        first = _first_ulp(c)
        said = f"; the first difference is {first} ULP" if first is not None else ""
    else:
        said = f"; largest distance {distance} ULP"
        if needed is not None and needed > distance:
            said += f" ({needed} ULP over every replay a capture of its own inputs reproduces)"
    return (said + ": the captured kernels compute differently from eager on the same inputs (kernel selection "
            "under capture), not a stale capture")


def _fresh_reason(c: Compared, again: Mapping[tuple[int, str], Compared]) -> str:
    """What a capture made on fresh replay `c`'s own inputs says about its difference from eager."""
    r = again.get((c.index, c.output))
    if not c.fresh or r is None or c.raw.get("mismatch"):
        return ""
    if _reproduced(c, again):
        distance = c.raw.get("max_ulp")
        far = f" ({distance} ULP)" if isinstance(distance, int) and not isinstance(distance, bool) else ""
        return (f"; equal bit for bit to a capture made on these inputs{far}: the captured kernels compute "
                "differently from eager (kernel selection under capture), not a stale capture")
    if r.raw.get("reference_hash64") == c.raw.get("candidate_hash64") and r.differing:
        return (f"; it differs from a capture made on these inputs ({r.differing} of {r.values} values): "
                "a stale capture")
    return ""


def _first_ulp(c: Compared) -> int | None:
    from redfirst.gates.cuda.ulp import WIDTHS, ulp_distance

    dtype, a, b = str(c.raw.get("dtype")), c.raw.get("reference_bits"), c.raw.get("candidate_bits")
    if dtype not in WIDTHS or not isinstance(a, int) or not isinstance(b, int):
        return None
    return ulp_distance(a, b, dtype)


def grade(gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome:
    """DESIGN section 6's rules over the raw cuda-graph observations of one run: the one grading
    function. A gate with `ranks:` is graded rank by rank (redfirst.gates.cuda.rank_grade says what
    GREEN, RED and NO_DECISION then mean), each rank's arms by the single-device rules below."""
    if declared_ranks(gate) is not None:
        return grade_ranks(gate, observations, _grade_one)
    return _grade_one(gate, observations)


def _grade_one(gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome:
    records = [o for o in observations if o.get("observation") == KIND]
    for o in records:
        if "error" in o:
            return error(Cause.CONFIG, f"cuda-graph: {o['error']}")
    for o in records:
        if "unavailable" in o:
            return no_decision(Cause.ENVIRONMENT, f"{NO_EVIDENCE}: {o['unavailable']}")
    for o in records:
        if "unscoped" in o:
            return no_decision(Cause.EVIDENCE, f"{UNSCOPED}: {o['unscoped']}")
    variants, shapes, plan = declared(gate)
    seen: dict[tuple[str, tuple[int, ...]], Observation] = {}
    for o in records:
        try:
            obs = Observation.from_record(o)
        except (KeyError, TypeError, ValueError) as exc:
            return no_decision(Cause.EVIDENCE, f"malformed cuda-graph observation: {type(exc).__name__}: {exc}")
        key = (obs.variant, obs.shape)
        if key in seen:
            return no_decision(Cause.EVIDENCE, f"{obs.label} observed twice in one run")
        seen[key] = obs
    injected = {o.hazard for o in seen.values()}
    wanted = gate.driver.option("hazard", None)
    if injected != {wanted}:
        # a hazard run's evidence is of altered code: never the gate's own verdict
        return no_decision(Cause.EVIDENCE, f"observed with hazard {sorted(map(str, injected))} injected, the gate "
                                           f"ran {'no hazard' if wanted is None else 'hazard ' + str(wanted)}: not "
                                           "this gate's evidence")
    declared_mode = str(gate.driver.option("capture", "stream"))
    other = sorted({o.capture for o in seen.values()} - {declared_mode})
    if other:
        return no_decision(Cause.EVIDENCE, f"observed with capture {', '.join(other)}, the gate declares capture "
                                           f"{declared_mode}: not this gate's evidence")
    if declared_mode == "torch" and any("torch" not in o.frameworks for o in seen.values()):
        return no_decision(Cause.EVIDENCE, "captured by torch.cuda.CUDAGraph but an observation names no torch "
                                           "version: not evidence of a torch capture")
    extra = sorted(set(seen) - {(v, s) for v in variants for s in shapes})
    if extra:
        return no_decision(Cause.EVIDENCE, f"{seen[extra[0]].label}: observed but not declared by the gate: the "
                                           "evidence is not from this gate's plan")
    wanted_dtype = gate.driver.option("dtype", None)
    for arm in seen.values():
        other_dtype = next((c for c in arm.comparisons if str(c.raw.get("dtype")) in FLOATING
                            and c.raw.get("dtype") != wanted_dtype), None) if wanted_dtype else None
        if other_dtype is not None:
            return no_decision(Cause.EVIDENCE, f"{arm.label}: output {other_dtype.output} compared in "
                                               f"{other_dtype.raw.get('dtype')}; the gate declares dtype "
                                               f"{wanted_dtype}: not evidence in that dtype")
    devices = {json.dumps(o.device, sort_keys=True) for o in seen.values()}
    if any(not o.device.get("name") for o in seen.values()) or len(devices) > 1:
        return no_decision(Cause.EVIDENCE, "cuda-graph observations must carry one device identity; found "
                                           f"{len(devices)}: " + "; ".join(sorted(devices)))
    outcomes: list[Outcome] = []
    for v in variants:
        for s in shapes:
            obs_or_none = seen.get((v, s))
            if obs_or_none is None:
                outcomes.append(no_decision(Cause.EVIDENCE, f"{v} {list(s)}: declared but not observed"))
            else:
                outcomes.append(_grade_arm(obs_or_none, plan["replays"], plan["repeat_eager"],
                                           gate.driver.option("max_ulp", None)))
    if not outcomes:
        return no_decision(Cause.EVIDENCE, "no variant and shape declared")
    said = f"hazard {wanted}: " if wanted is not None else ""
    for verdict_name in ("RED", "NO_DECISION"):
        hits = [o for o in outcomes if o.verdict.value == verdict_name]
        if hits:
            more = f" (and {len(hits) - 1} more)" if len(hits) > 1 else ""
            return Outcome(hits[0].verdict, hits[0].cause, said + hits[0].reason + more)
    device = next(iter(seen.values())).device
    name = f" on {device.get('name')} (sm {device.get('compute_capability')})" if device.get("name") else ""
    modes = sorted({o.capture for o in seen.values()})
    how = f", captured by {'torch.cuda.CUDAGraph' if modes == ['torch'] else 'stream capture'}"
    if device.get("name") == "redfirst-sim":
        name, how = " on the simulated backend", ", captured by recording each launch"
    versions = {k: v for o in seen.values() for k, v in o.frameworks.items()}
    with_fw = "".join(f", {k} {v}" for k, v in sorted(versions.items()))
    return green(said + "; ".join(o.reason for o in outcomes) + name + how + with_fw)


def lease_mismatch(context: Mapping[str, Any], observations: Sequence[dict[str, Any]]) -> Outcome | None:
    """NO_DECISION when the arms name a device the record's lease did not grant (by name, and by uuid
    where both sides have one); None when they agree or the record names no leased GPU.

    For grade.py to call with `record.context` beside `grade_observations` (the Driver Protocol
    passes no context)."""
    granted = [g for g in context.get("gpus") or () if isinstance(g, Mapping) and g.get("name")]
    if not granted:
        return None
    names = {str(g["name"]) for g in granted}
    uuids = {str(g["uuid"]) for g in granted if g.get("uuid")}
    for o in observations:
        device = o.get("device") if o.get("observation") == KIND else None
        if not isinstance(device, Mapping):
            continue
        name, uuid = str(device.get("name") or ""), device.get("uuid")
        if name not in names or (uuids and uuid and str(uuid) not in uuids):
            return no_decision(Cause.EVIDENCE, f"cuda-graph observations from {name or 'an unnamed device'}"
                                               f"{f' ({uuid})' if uuid else ''}, but the lease granted "
                                               f"{', '.join(sorted(names))}: not this record's evidence")
    return None


def framework_mismatch(context: Mapping[str, Any], observations: Sequence[dict[str, Any]]) -> Outcome | None:
    """NO_DECISION when an arm names a torch or triton version (its public part: torch.__version__
    carries a local tag the distribution metadata may not) other than the record's context saw."""
    known = context.get("frameworks")
    if not isinstance(known, Mapping):
        return None
    for o in observations:
        named = o.get("frameworks") if o.get("observation") == KIND else None
        if not isinstance(named, Mapping):
            continue
        for name in ("torch", "triton"):
            if name in named and name in known and \
                    str(named[name]).split("+")[0] != str(known[name]).split("+")[0]:
                return no_decision(Cause.EVIDENCE, f"cuda-graph observations name {name} {named[name]}, but the "
                                                   f"record's context saw {name} {known[name]}: not this record's "
                                                   "evidence")
    return None


DRIVER = CudaGraphDriver()
