"""The rank rules of a `cuda-graph` gate with `ranks:` (DESIGN section 6), over raw per-rank records.

Called only by redfirst.gates.drivers.cuda_graph.grade, the one grading function, which
passes its single-device grader for each rank's arms. What a caller may rely on:

- GREEN only when every rank 0..world_size-1 left a status bound to the gate's world size,
  tp size and backend, arrived, exited 0, issued the same collectives (op, size, dtype, the
  step output written where recorded, in order) as rank 0 in every arm, agreed on applicability, ran on a device of its own, and
  its own arms grade GREEN;
- RED names the rank: a rank that failed (non-zero exit, killed, or status 0 before its end), hung (ended by the gate's
  timeout while not waiting on a peer), issued a different collective sequence (the first
  difference), disagreed on applicability, or whose arms are RED (a process group made
  inside the captured callable is a capture failure with that reason);
- NO_DECISION for missing evidence: a missing rank, a rank that never arrived, a missing
  variant or shape, records bound to another group, a rank whose NCCL log is missing or holds
  less than its wrapped names saw (`nccl_incomplete`), a rank arm carrying a recapture.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from redfirst.gates.model import Gate
from redfirst.verdict import Cause, Outcome, Verdict, error, green, no_decision, red

RANK_KIND = "cuda-graph-rank"
KIND = "cuda-graph"
BACKENDS = ("sim", "nccl")
UNSCOPED = "the hazard does not apply to this step"   # mutate hazards reads it as UNSCOPED


def declared_ranks(gate: Gate) -> dict[str, Any] | None:
    """The gate's `ranks:` as {world_size, tp_size, backend}, or None for a single-device gate."""
    raw = gate.driver.option("ranks", None)
    if raw is None:
        return None
    spec = dict(raw) if not isinstance(raw, dict) else raw
    world = int(spec.get("world_size", 1))
    return {"world_size": world, "tp_size": int(spec.get("tp_size", world)), "backend": str(spec.get("backend", "nccl"))}


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


STATUS_TYPES: dict[str, Callable[[Any], bool]] = {
    "rank": _is_int, "world_size": _is_int, "tp_size": _is_int, "backend": lambda v: isinstance(v, str),
    "exit": lambda v: v is None or _is_int(v), "arrived": lambda v: isinstance(v, bool),
    "ended": lambda v: v is None or isinstance(v, str), "phase": lambda v: v is None or isinstance(v, str),
    "device": lambda v: v is None or isinstance(v, dict), "hazard": lambda v: v is None or isinstance(v, str),
}


def malformed(records: Sequence[dict[str, Any]]) -> str | None:
    """What is wrong with the first rank status or arm whose fields are not of their types (None: all are).
    A status must carry each of STATUS_TYPES' keys; an arm must read as an Observation bound to a rank,
    with no "recapture" comparison (a rank is captured once).
    The rank rules read these fields only after this check, so a value of another type (an exit of
    false or "0", a device that is a string) can never pass for a finished rank or crash the grader."""
    from redfirst.gates.cuda.observation import Observation

    for o in records:
        if o.get("observation") == RANK_KIND:
            bad = [k for k, ok in STATUS_TYPES.items() if k not in o or not ok(o[k])]
            if bad:
                return f"rank status {o.get('rank')!r}: {', '.join(f'{k}={o.get(k)!r}' for k in bad)}"
        elif o.get("observation") == KIND and not any(k in o for k in ("error", "unavailable", "unscoped")):
            try:
                obs = Observation.from_record(o)
            except (KeyError, TypeError, ValueError) as exc:
                return f"cuda-graph arm of rank {o.get('rank')!r}: {type(exc).__name__}: {exc}"
            if obs.rank is None or obs.collectives is None:
                return f"cuda-graph arm {obs.label}: bound to no rank or without its collectives"
            if any(c.phase == "recapture" for c in obs.comparisons):
                # the rank child never captures a rank twice (its peers would not join the recapture's
                # collectives): a rank's fresh replay is never explained by one, nor covered by max_ulp
                return f"cuda-graph arm {obs.label} of rank {obs.rank}: a recapture, which a rank never makes"
    return None


def _entry(e: dict[str, Any] | None) -> str:
    from redfirst.gates.cuda.nccl_log import MORE

    if e is None:
        return "nothing"
    if e.get("op") == MORE:
        return f"{e.get('size')} more collectives ({e.get('dtype')})"
    into = f" into output {e['output']}" if e.get("output") is not None else ""
    return f"{e.get('op')} of {e.get('size')} {e.get('dtype')}{into}"


def first_difference(a: Sequence[dict[str, Any]], b: Sequence[dict[str, Any]], whole: bool) -> str | None:
    """Where two collective sequences first differ (index, both entries: op, size, dtype and the step
    output written); None when they agree.
    `whole`: both sequences are complete, so a longer one differs too; else only the common prefix counts."""
    key = ("op", "size", "dtype", "output")   # output: which step output it writes, where the backend records it
    for i in range(max(len(a), len(b)) if whole else min(len(a), len(b))):
        ea, eb = (a[i] if i < len(a) else None), (b[i] if i < len(b) else None)
        if ea is None or eb is None or any(ea.get(k) != eb.get(k) for k in key):
            return f"collective {i}: {_entry(eb)} where rank 0 issued {_entry(ea)}"
    return None


def nccl_incomplete(o: dict[str, Any]) -> str | None:
    """Why one rank's arm's record of NCCL's own log (redfirst.gates.cuda.nccl_log) cannot stand for
    what NCCL was asked, or None. A caller may rely on a log that passes holding at least every call
    the wrapped torch.distributed names saw (each reaches NCCL at least once): the code under test
    that sets NCCL_DEBUG or NCCL_DEBUG_SUBSYS itself, before NCCL starts, leaves no log or one too
    short, never an empty list read as "nothing asked". A record without the log (a child before
    it, or the simulated backend) is None here."""
    from redfirst.gates.cuda.nccl_log import MORE, UNREAD

    seq = (o.get("collectives") or {}).get("nccl")
    if seq is None:
        return None
    if any(e.get("op") == UNREAD for e in seq):
        return "NCCL wrote no log of the collectives it was asked for"
    logged = sum(int(e.get("size") or 0) if e.get("op") == MORE else 1 for e in seq)
    asked = sum(len((o.get("collectives") or {}).get(p) or []) for p in ("eager", "capture"))
    if logged < asked:
        return f"NCCL logged {logged} collectives where torch.distributed was asked for {asked}"
    return None


def _ran_to_end(o: dict[str, Any], replays: int) -> bool:
    """The arm ran every phase, so all it issued is in its logs: no failure, or replays that differ
    from eager (the child still runs them all, and `max_ulp` may cover replay 0) with every replay
    0..`replays` compared. An arm that stopped early (an exception in eager, capture or a replay)
    issued only a prefix of its collectives."""
    if o.get("failure_class") is None:
        return True
    done = {c.get("index") for c in o.get("comparisons") or [] if c.get("phase") == "replay"}
    return o.get("failure_class") == "replay" and done == set(range(replays + 1))


def _hung(statuses: list[dict[str, Any]]) -> Outcome | None:
    timed = [s for s in statuses if s.get("ended") == "timeout"]
    if not timed:
        return None
    waiting = [s for s in timed if str(s.get("phase") or "").endswith(" wait")]
    hung = [s for s in timed if s not in waiting] or timed
    names = ", ".join(f"rank {s['rank']} (in {s.get('phase') or 'start'})" for s in hung)
    others = f"; waiting on it: {', '.join('rank ' + str(s['rank']) for s in waiting)}" if waiting and hung != timed \
        else ""
    return red(Cause.ASSERTION, f"{names} hung: the gate's timeout ended every rank{others}")


def grade_ranks(gate: Gate, observations: Sequence[dict[str, Any]],
                grade_one: Callable[[Gate, Sequence[dict[str, Any]]], Outcome]) -> Outcome:
    wanted = gate.driver.option("hazard", None)
    outcome = _grade_ranks(gate, observations, grade_one, wanted)
    said = f"hazard {wanted}: " if wanted is not None else ""
    if said and said not in outcome.reason:
        return Outcome(outcome.verdict, outcome.cause, said + outcome.reason)
    return outcome


def _grade_ranks(gate: Gate, observations: Sequence[dict[str, Any]],
                 grade_one: Callable[[Gate, Sequence[dict[str, Any]]], Outcome], wanted: str | None) -> Outcome:
    spec = declared_ranks(gate)
    assert spec is not None
    world, tp, backend = spec["world_size"], spec["tp_size"], spec["backend"]
    where = f"world size {world}, tp size {tp}, backend {backend}"
    problem = malformed(observations)
    if problem:
        return no_decision(Cause.EVIDENCE, f"malformed rank record: {problem}")
    statuses: dict[int, dict[str, Any]] = {}
    for s in (o for o in observations if o.get("observation") == RANK_KIND):
        bound = (s.get("world_size"), s.get("tp_size"), s.get("backend"))
        if bound != (world, tp, backend):
            return no_decision(Cause.EVIDENCE, f"a rank status is bound to world size {bound[0]}, tp size {bound[1]}, "
                                               f"backend {bound[2]}; the gate declares {where}: not this gate's evidence")
        rank = s.get("rank")
        if not isinstance(rank, int) or isinstance(rank, bool) or not 0 <= rank < world or rank in statuses:
            return no_decision(Cause.EVIDENCE, f"rank status {rank!r} is outside 0..{world - 1} or seen twice")
        statuses[rank] = s
    arms: dict[int, list[dict[str, Any]]] = {r: [] for r in range(world)}
    for o in (o for o in observations if o.get("observation") == KIND):
        if (o.get("world_size"), o.get("tp_size")) != (world, tp) or o.get("rank") not in arms:
            return no_decision(Cause.EVIDENCE, f"an arm is bound to rank {o.get('rank')!r} of world size "
                                               f"{o.get('world_size')!r}, tp size {o.get('tp_size')!r}; the gate "
                                               f"declares {where}: not this gate's evidence")
        arms[int(o["rank"])].append(o)
    injected = sorted({str(s.get("hazard")) for s in statuses.values() if s.get("hazard") != wanted})
    if injected:
        # a hazard run's evidence is of altered code: never the gate's own verdict
        return no_decision(Cause.EVIDENCE, f"observed with hazard {injected} injected, the gate ran "
                                           f"{'no hazard' if wanted is None else 'hazard ' + str(wanted)}: not "
                                           "this gate's evidence")
    for s in statuses.values():
        if s.get("error"):
            return error(Cause.CONFIG, f"cuda-graph: {s['error']}")
    for s in statuses.values():
        if s.get("unavailable"):
            return no_decision(Cause.ENVIRONMENT, f"cannot produce capture evidence: rank {s['rank']}: "
                                                  f"{s['unavailable']}")
    for s in statuses.values():
        if s.get("unscoped"):
            return no_decision(Cause.EVIDENCE, f"{UNSCOPED}: {s['unscoped']}")
    missing = [r for r in range(world) if r not in statuses]
    if missing:
        return no_decision(Cause.EVIDENCE, f"rank {missing[0]} left no record ({where}): a missing rank decides "
                                           "nothing")
    ordered = [statuses[r] for r in range(world)]
    failed = [s for s in ordered if s.get("exit") not in (0, None)]
    if failed:
        s = failed[0]
        code = int(s["exit"])
        how = f"was killed by signal {-code}" if code < 0 else f"exited {code}"
        return red(Cause.ASSERTION, f"rank {s['rank']} failed: it {how} during {s.get('phase') or 'start'} ({where})")
    hung = _hung(ordered)
    if hung:
        return hung
    absent = [s for s in ordered if not s.get("arrived")]
    if absent:
        s = absent[0]
        return no_decision(Cause.EVIDENCE, f"rank {s['rank']} never arrived at the rendezvous"
                                           f"{': ' + str(s['rendezvous']) if s.get('rendezvous') else ''} ({where})")
    left = [s for s in ordered if s.get("exit") == 0 and not s.get("ended") and s.get("phase") != "done"
            and not s.get("rendezvous")]
    if left:
        # status 0 is no proof of a finished rank: one that left before its end failed, whatever it said
        s = left[0]
        return red(Cause.ASSERTION, f"rank {s['rank']} failed: it exited 0 during {s.get('phase') or 'start'}, "
                                    f"before its arms were done ({where})")
    rendezvous = [s for s in ordered if s.get("rendezvous")]
    if rendezvous:
        s = rendezvous[0]
        return no_decision(Cause.EVIDENCE, f"rank {s['rank']} did not complete the rendezvous: {s['rendezvous']} "
                                           f"({where})")
    unfinished = [s for s in ordered if s.get("exit") != 0 or s.get("ended")]
    if unfinished:
        s = unfinished[0]
        return no_decision(Cause.EVIDENCE, f"rank {s['rank']} did not run to its end "
                                           f"({s.get('ended') or 'no exit status'}, in {s.get('phase') or 'start'})")
    devices = [str((s.get("device") or {}).get("uuid") or "") for s in ordered]
    if any(not d for d in devices) or len(set(devices)) != world:
        return no_decision(Cause.EVIDENCE, f"the ranks must each name a device of their own; they named {devices}")
    for r, records in arms.items():
        for o in records:
            seq = o.get("collectives")
            if o.get("device") != ordered[r].get("device"):
                # the whole identity (uuid and the observing process), not the uuid alone: an arm relabelled
                # from another rank keeps the process that observed it
                return no_decision(Cause.EVIDENCE, f"rank {r}: an arm names device {o.get('device')!r}, its rank's "
                                                   f"status {ordered[r].get('device')!r}: not one rank's evidence")
            if not isinstance(seq, dict) or not isinstance(seq.get("eager"), list) or (
                    o.get("failure_class") not in ("eager", "capture") and o.get("applicable")
                    and not isinstance(seq.get("capture"), list)):
                return no_decision(Cause.EVIDENCE, f"rank {r}: {o.get('variant')} {o.get('shape')}: no collective "
                                                   "sequence recorded: the ranks' collectives cannot be compared")
    # the same arm on every rank: the same collectives in the same order, the same applicability
    by_arm: dict[tuple[str, tuple[int, ...]], dict[int, dict[str, Any]]] = {}
    for r, records in arms.items():
        for o in records:
            by_arm.setdefault((str(o.get("variant")), tuple(o.get("shape") or ())), {})[r] = o
    from redfirst.gates.cuda.observation import DEFAULTS

    replays = int(gate.driver.option("replays", DEFAULTS["replays"]))
    for (variant, shape), per_rank in by_arm.items():
        label = f"{variant} {list(shape)}"
        base = per_rank.get(0)
        for r, o in sorted(per_rank.items()):
            short = nccl_incomplete(o)
            if short:
                return no_decision(Cause.EVIDENCE, f"{label}: rank {r}: {short} (NCCL_DEBUG, NCCL_DEBUG_SUBSYS or "
                                                   "NCCL_DEBUG_FILE changed by the code under test?): the ranks' "
                                                   "collectives cannot be compared")
            if base is None or r == 0:
                continue
            # "nccl": what NCCL itself was asked, by any path (redfirst.gates.cuda.nccl_log), in order
            for phase in ("capture", "eager", "nccl"):
                mine, theirs = (o.get("collectives") or {}).get(phase), (base.get("collectives") or {}).get(phase)
                if phase == "nccl" and (mine is None) != (theirs is None):
                    lacking = r if mine is None else 0
                    return no_decision(Cause.EVIDENCE, f"{label}: rank {lacking} has no log of what NCCL was asked "
                                                       "where another rank has one: the ranks cannot be compared")
                if mine is None or theirs is None:
                    continue
                # compared whole where both arms got past the phase (a phase cut short issued a prefix)
                whole = (phase in ("capture", "eager") and o.get("failure_class") != phase
                         and base.get("failure_class") != phase) or (
                    phase == "nccl" and _ran_to_end(o, replays) and _ran_to_end(base, replays))
                diff = first_difference(theirs, mine, whole)
                if diff:
                    during = "the arm (NCCL's own log)" if phase == "nccl" else phase
                    return red(Cause.ASSERTION, f"{label}: rank {r} issued other collectives than rank 0 during "
                                                f"{during}: {diff}")
            if o.get("applicable") != base.get("applicable"):
                return red(Cause.ASSERTION, f"{label}: rank {r} applicability disagreement: applicable="
                                            f"{o.get('applicable')} where rank 0 says {base.get('applicable')}")
    outcomes = [(r, grade_one(gate, arms[r])) for r in range(world)]
    for worst in (Verdict.ERROR, Verdict.RED, Verdict.NO_DECISION):
        hits = [(r, o) for r, o in outcomes if o.verdict is worst]
        if hits:
            rank, first = hits[0]
            return Outcome(first.verdict, first.cause, f"rank {rank}: {first.reason}")
    # a rank whose replays max_ulp covers is said by name: the group's GREEN never reads as bit-exact for it
    within = "".join(f"; rank {r}: {o.reason}" for r, o in outcomes[1:] if "not bit-exact" in o.reason)
    return green(f"{world} rank{'s' if world != 1 else ''} ({where}), each GREEN; rank 0: {outcomes[0][1].reason}"
                 + within)
