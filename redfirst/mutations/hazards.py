"""`mutate hazards GATE...`: inject each graph hazard into a cuda-graph gate's step at run time.

No source is edited: the gate runs with the driver option `hazard` (redfirst.gates.cuda.hazards), which
no gate file can set. The gate as shipped must be GREEN first (else every hazard is DISCARDED:
nothing can be learnt from a gate that does not pass). Then per hazard: RED is KILLED (the gate
catches that fault), GREEN is SURVIVED (it would not), "does not apply" is UNSCOPED, anything
else (NO_DECISION, ERROR) is DISCARDED or ERROR: never a kill.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from redfirst.gates.api import GateResult
from redfirst.gates.cuda.hazards import HAZARDS
from redfirst.gates.cuda.rank_hazards import COLLECTIVE_HAZARDS
from redfirst.gates.drivers.cuda_graph import UNSCOPED, with_hazard
from redfirst.gates.model import Gate
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, MutationOutcome, Verdict, exit_code


@dataclass(frozen=True)
class HazardResult:
    gate: str
    hazard: str
    outcome: MutationOutcome
    reason: str
    evidence: str | None = None


def outcome_of(result: GateResult) -> MutationOutcome:
    if result.verdict is Verdict.RED:
        return MutationOutcome.KILLED
    if result.verdict is Verdict.GREEN:
        return MutationOutcome.SURVIVED
    if result.verdict is Verdict.NO_DECISION and UNSCOPED in result.reason:
        return MutationOutcome.UNSCOPED
    return MutationOutcome.ERROR if result.verdict is Verdict.ERROR else MutationOutcome.DISCARDED


def hazards_for(gate: Gate, asked: Sequence[str] | None = None) -> list[str]:
    """The hazards `mutate hazards` injects into `gate`: the collective hazards into a gate with a rank
    group (`ranks:`), the graph hazards into one device's gate; `asked` (--hazard) narrows them."""
    known = COLLECTIVE_HAZARDS if gate.driver.option("ranks", None) is not None else HAZARDS
    return [h for h in known if asked is None or h in asked]


def run(gates: Sequence[Gate], run_gate: Callable[[Gate], GateResult],
        asked: Sequence[str] | None = None) -> tuple[list[GateResult], list[HazardResult]]:
    """The baseline of each gate, then each of its hazards (hazards_for) injected into it."""
    baselines: list[GateResult] = []
    results: list[HazardResult] = []
    for gate in gates:
        hazards = hazards_for(gate, asked)
        base = run_gate(gate)
        baselines.append(base)
        if base.verdict is not Verdict.GREEN:
            results.extend(HazardResult(gate.id, h, MutationOutcome.DISCARDED,
                                        f"the gate as shipped is {base.verdict.value}, not GREEN: {base.reason}",
                                        base.evidence_id) for h in hazards)
            continue
        for hazard in hazards:
            seen = run_gate(with_hazard(gate, hazard))
            results.append(HazardResult(gate.id, hazard, outcome_of(seen), seen.reason, seen.evidence_id))
    return baselines, results


def exit_of(results: Sequence[HazardResult]) -> int:
    """2 for an ERROR, else as `mutate`: 1 when one SURVIVED, 3 when one was DISCARDED, 0 when all were
    KILLED; an UNSCOPED hazard (it cannot be put into this step) counts only when nothing else was decided."""
    if any(r.outcome is MutationOutcome.ERROR for r in results):
        return EXIT_ERROR
    decided = [r.outcome for r in results if r.outcome is not MutationOutcome.UNSCOPED]
    return exit_code(decided) if decided else EXIT_NO_DECISION


def table(results: Sequence[HazardResult]) -> str:
    """Per gate, which hazards it catches: one line each."""
    lines = []
    for gate in dict.fromkeys(r.gate for r in results):
        mine = [r for r in results if r.gate == gate]
        caught = sum(r.outcome is MutationOutcome.KILLED for r in mine)
        lines.append(f"{gate}: catches {caught} of {len(mine)} hazards")
        for r in mine:
            lines.append(f"  {r.outcome.value:<9} {r.hazard}: {r.reason[:300]}")
    return "\n".join(lines)
