"""What `mutate merge` decides a shard's outcomes from: the evidence records shipped
with the reports, each bound to the mutation it is cited for (redfirst.gates.record.Binding),
graded again from its raw files, the outcome decided again as the engine decides it. A shard's
own verdicts, gate verdicts and aggregates are claims; its records are the evidence (rule 4)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from redfirst.gates import drivers
from redfirst.gates.api import LoadError, StoreError, regrade_folder
from redfirst.gates.reads import ReadSet, of_record
from redfirst.gates.record import Binding, gate_digest
from redfirst.mutations.engine import MutationResult, decided
from redfirst.mutations.harness import not_a_kill
from redfirst.mutations.outcome import GateSeen, collection_broken, decide, unread
from redfirst.verdict import MutationOutcome, Verdict

REDERIVED = (MutationOutcome.KILLED, MutationOutcome.SURVIVED)     # re-derived even with no gate result listed
NO_GATE = (MutationOutcome.EQUIVALENT,)    # decided from the build's outputs, before any gate runs


@dataclass(frozen=True)
class Rederived:
    problem: str | None                         # why the reported outcome does not stand; None: it does
    proving: tuple[tuple[str, Path], ...] = ()  # (gate id, record folder): the bound RED records of a KILLED


def find_record(evidence_id: str, folders: Sequence[Path]) -> Path | None:
    """The record folder `evidence_id` in the first of `folders` that holds it."""
    if not evidence_id or "/" in evidence_id or evidence_id in (".", ".."):
        return None
    return next((d / evidence_id for d in folders if (d / evidence_id / "record.json").is_file()), None)


def rederive(r: MutationResult, tree: str, version: str, folders: Sequence[Path]) -> Rederived:
    """The outcome of `r` decided again from the records of its gate results found in `folders`.
    A caller may rely on: a KILLED or SURVIVED, and any other outcome whose result lists gate
    results, stands (problem None) only where every gate the engine had to run for it has a
    record here, intact (sealed), bound to this mutation (its id and patch digest), to `tree` and
    `version` and to the gate document it ran, that grades to the reported gate verdict, and the
    outcome decided from those regraded results is the reported one; `proving` is then the RED
    records of a KILLED. An outcome the engine decides with no gate run (EQUIVALENT, a build
    that failed, crashed or could not start) stands only where no gate result is listed: listed,
    they contradict it. Such an outcome with no gate result listed is not re-derived (there is
    no record of it; it is not a pass and proves nothing)."""
    m = r.mutation
    said = f"mutation {m.id} reported {r.outcome.value}"
    listed = (*r.gates, *r.controls)
    if not listed and r.outcome not in REDERIVED:
        return Rederived(None)
    if listed and (r.outcome in NO_GATE or r.build.state not in ("none", "ok")):
        cited = ", ".join(f"{g.gate_id} {g.verdict.value} (record {(g.evidence_id or 'none')[:12]})" for g in listed)
        return Rederived(f"{said} (build {r.build.state}), an outcome no gate runs for, yet lists gate results: "
                         f"{cited}: a contradiction")
    reported = {g.gate_id: g for g in (*r.gates, *r.controls)}
    seen: dict[str, GateSeen] = {}
    uncollected: dict[str, str] = {}
    no_case: dict[str, str] = {}
    folder_of: dict[str, Path] = {}
    contradicted: list[str] = []
    gates = list(m.expect.gates) if r.build.state in ("none", "ok") else []     # a failed build: no gate ran
    for n, gate_id in enumerate(gates):
        if n and decided(m, seen, uncollected):
            break       # the engine stops here: the gates after are not expected of it
        g = reported.get(gate_id)
        if g is None:
            return Rederived(f"{said} with no result of its gate {gate_id}: no record to decide it from")
        folder = find_record(g.evidence_id or "", folders)
        cited = f"record {(g.evidence_id or 'none')[:12]} of gate {gate_id}"
        if folder is None:
            return Rederived(f"{said}, but no {cited} was shipped with the reports (give the shards' "
                             "evidence folders)")
        try:
            record, gate, graded = regrade_folder(folder)
        except (StoreError, LoadError) as e:
            return Rederived(f"{said}, but its {cited} is not evidence: {e}")
        expected = Binding(m.id, m.patch_digest, tree, gate_digest(record.gate_document), version)
        if record.binding is None or record.gate_id != gate_id or record.context.hazard is not None:
            return Rederived(f"{said}, but its {cited} is bound to nothing of it (a record of gate "
                             f"{record.gate_id}{' from before bindings' if record.binding is None else ''})")
        wrong = record.binding.mismatches(expected)
        if wrong:
            return Rederived(f"{said}, but its {cited} is bound to mutation {record.binding.mutation or 'none'}, "
                             f"not to this one: {', '.join(wrong)}")
        o = graded.outcome
        seen[gate_id] = GateSeen(gate_id, o.verdict, o.cause, o.reason, g.counts, g.evidence_id)
        if o.verdict is not g.verdict:
            contradicted.append(f"its {cited} does not grade {g.verdict.value} from its raw files "
                                f"(it grades {o.verdict.value})")
        why = collection_broken(seen[gate_id], drivers.runs_pytest(gate), folder, gate.driver.format == "unittest")
        if why is not None:
            uncollected[gate_id] = why
        harness = not_a_kill(seen[gate_id], gate.driver.format, drivers.runs_pytest(gate), folder)
        if harness is not None:
            no_case[gate_id] = harness
        folder_of[gate_id] = folder
    judged = dataclasses.replace(m, expect=dataclasses.replace(
        m.expect, red=tuple(g for g in m.expect.red if g in seen), green=tuple(g for g in m.expect.green if g in seen)))
    read = functools.reduce(ReadSet.union, (of_record(f) for f in folder_of.values()), ReadSet())
    again = unread(decide(judged, r.build, seen, uncollected, no_case), m.file, read)
    if contradicted or again.outcome is not r.outcome:
        records = ", ".join(f"{g} {folder_of[g].name[:12]}" for g in folder_of)
        return Rederived(f"{said}, but {'; '.join([*contradicted, ''])}its records ({records}) decide "
                         f"{again.outcome.value}: {again.reason}")
    proving = tuple((g, folder_of[g]) for g in m.expect.red if g in seen and seen[g].verdict is Verdict.RED) \
        if r.outcome is MutationOutcome.KILLED else ()
    return Rederived(None, proving)
