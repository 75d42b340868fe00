"""From build status and gate verdicts to a mutation outcome (DESIGN section 3).

`decide` is the whole rule: only RED with cause assertion, exit, signal or timeout on
every expected-red gate, with every control GREEN, is a kill; a build failure when
`ok` was expected, a module that no longer imports or collects (the baseline was GREEN,
so it collected there) and any NO_DECISION are DISCARDED, never a kill.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redfirst.gates.reads import ReadSet
from redfirst.gates.record import JUNIT, STDERR, STDOUT
from redfirst.mutations.model import Mutation
from redfirst.verdict import Cause, MutationOutcome, Verdict

KILL_CAUSES = frozenset({Cause.ASSERTION, Cause.EXIT, Cause.SIGNAL, Cause.TIMEOUT})
# pytest's JUnit `<error message=...>` for a test module that did not import.
PYTEST_COLLECTION_FAILURE = "collection failure"
# pytest's "interrupted" (collection errors) and its usage error for a node id it cannot collect.
_PYTEST_INTERRUPTED = 2
_PYTEST_USAGE = 4
# pytest-xdist ends a run that reached --maxfail (-x) as interrupted (exit 2): a test failed as it
# ran, nothing failed to collect (a collection error says "ERROR collecting").
_XDIST_MAXFAIL = re.compile(r"^!+ xdist\.dsession\.Interrupted: stopping after \d+ failures? !+$", re.M)
# unittest's loader: a test module that did not import (discovery's stand-in test, or the
# traceback of loading a named module)
_UNITTEST_IMPORT = re.compile(r'unittest\.loader\._FailedTest|unittest[/\\]loader\.py", line \d+, in loadTestsFromName')


@dataclass(frozen=True)
class GateSeen:
    """One gate's result as mutate keeps it (from redfirst.gates.api's GateResult)."""

    gate_id: str
    verdict: Verdict
    cause: Cause | None
    reason: str
    counts: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    evidence_id: str | None = None

    @classmethod
    def of(cls, result: Any) -> GateSeen:
        return cls(result.gate_id, Verdict(result.verdict), Cause(result.cause) if result.cause else None,
                   result.reason or "", dict(result.counts or {}), result.evidence_id)

    def brief(self) -> str:
        """`id VERDICT (cause; counts)`, without the reason: one table cell."""
        counts = ", ".join(f"{k} {v}" for k, v in self.counts.items()
                           if k != "exit" and v is not None and not isinstance(v, dict | list))
        inside = "; ".join(x for x in (self.cause.value if self.cause else "", counts) if x)
        return f"{self.gate_id} {self.verdict.value}" + (f" ({inside})" if inside else "")

    def describe(self) -> str:
        reason = " ".join(self.reason.split())
        if len(reason) > 240:
            reason = reason[:237] + "..."
        return self.brief() + (f": {reason}" if reason else "")


@dataclass(frozen=True)
class BuildStatus:
    """`ok`, `failed` (a compile error), `crashed` (signal or timeout), `error` (could not
    start), or `none` (no build of the mutation's own; the gates' builds decide)."""

    state: str
    reason: str = ""


@dataclass(frozen=True)
class Decision:
    outcome: MutationOutcome
    cause: Cause | None
    reason: str


def _listing(results: list[GateSeen]) -> str:
    return "; ".join(r.describe() for r in results)


def collection_broken(seen: GateSeen, pytest_runner: bool, record: Path | None,
                      unittest_runner: bool = False) -> str | None:
    """Why the gate's tests could not be collected under the mutation, or None: pytest's
    JUnit report holds a collection failure, pytest was interrupted (exit 2; not pytest-xdist
    stopping at --maxfail with no collection error), or it found
    no collectors for a node id (exit 4) because the mutated module no longer imports;
    unittest's loader could not import a test module."""
    if unittest_runner and record is not None and seen.verdict is not Verdict.GREEN:
        said = " ".join((record / name).read_text(errors="replace") for name in (STDOUT, STDERR)
                        if (record / name).is_file())
        if _UNITTEST_IMPORT.search(said):
            return f"{seen.gate_id}: unittest could not import a test module"
    junit = record / JUNIT if record is not None else None
    if junit is not None and junit.is_file():
        try:
            cases = list(ET.parse(junit).getroot().iter("testcase"))
        except (ET.ParseError, OSError):
            cases = []
        broken = [c for c in cases for e in c if e.tag == "error" and e.get("message") == PYTEST_COLLECTION_FAILURE]
        if broken:
            return f"{seen.gate_id}: pytest could not collect {broken[0].get('name') or '?'}"
    if not pytest_runner or seen.verdict is Verdict.GREEN:
        return None
    code = seen.counts.get("exit")
    if code == _PYTEST_INTERRUPTED:
        said = (record / STDOUT).read_text(errors="replace") if record is not None and (record / STDOUT).is_file() else ""
        if _XDIST_MAXFAIL.search(said) and "ERROR collecting" not in said:
            return None     # a failure stopped it: whether that is a kill is not_a_kill's to say
        return f"{seen.gate_id}: pytest exit 2 (interrupted by collection errors)"
    if code == _PYTEST_USAGE and record is not None:
        said = " ".join((record / name).read_text(errors="replace") for name in (STDOUT, STDERR)
                        if (record / name).is_file())
        if "found no collectors" in said:
            return f"{seen.gate_id}: pytest exit 4 (found no collectors)"
    return None


def decide(mutation: Mutation, build: BuildStatus, results: Mapping[str, GateSeen],
           uncollectable: Mapping[str, str] | None = None, no_case: Mapping[str, str] | None = None) -> Decision:
    """`uncollectable`: gate id -> why its tests could not be collected under the mutation
    (`collection_broken`): a compile error of the gates' own kind, never a kill unless
    the mutation expects `build: fails`. `no_case`: gate id -> why its red shows no test failing
    as it ran (redfirst.mutations.harness.not_a_kill): never a kill."""
    expect = mutation.expect
    uncollected = [why for g, why in (uncollectable or {}).items() if g in expect.gates]
    if build.state == "error":
        return Decision(MutationOutcome.ERROR, Cause.BUILD, f"build could not start: {build.reason}")
    seen = list(results.values())
    gate_build_errors = [r for r in seen if r.verdict is Verdict.ERROR and r.cause is Cause.BUILD]
    if gate_build_errors:
        return Decision(MutationOutcome.ERROR, Cause.BUILD, f"build could not start: {_listing(gate_build_errors)}")
    gate_build_failures = [r for r in seen if r.verdict is Verdict.RED and r.cause is Cause.BUILD]
    failed = build.state == "failed" or (build.state == "none" and bool(gate_build_failures))
    why_failed = build.reason if build.state == "failed" else _listing(gate_build_failures)
    if not failed and uncollected:
        if expect.build == "fails":
            return Decision(MutationOutcome.KILLED, Cause.BUILD,
                            f"import or collection broke as expected: {'; '.join(uncollected)}")
        return Decision(MutationOutcome.DISCARDED, Cause.BUILD,
                        f"the mutation breaks import or collection where the baseline collected fine "
                        f"({'; '.join(uncollected)}): never a kill")

    if expect.build == "fails":
        if failed:
            return Decision(MutationOutcome.KILLED, Cause.BUILD, f"build failed as expected: {why_failed}")
        if build.state == "crashed":
            return Decision(MutationOutcome.DISCARDED, Cause.BUILD,
                            f"build did not finish ({build.reason}): not a compile error, never a kill")
        return Decision(MutationOutcome.SURVIVED, Cause.BUILD, "the build succeeded; expected it to fail")
    if failed or build.state == "crashed":
        return Decision(MutationOutcome.DISCARDED, Cause.BUILD,
                        f"build failed ({why_failed or build.reason}) where ok was expected: never a kill")

    missing = [g for g in expect.gates if g not in results]
    if missing:
        return Decision(MutationOutcome.ERROR, Cause.CONFIG, f"no result for gate(s) {', '.join(missing)}")
    errors = [results[g] for g in expect.gates if results[g].verdict is Verdict.ERROR]
    if errors:
        return Decision(MutationOutcome.ERROR, errors[0].cause or Cause.CONFIG, f"gate ERROR: {_listing(errors)}")
    undecided = [results[g] for g in expect.gates if results[g].verdict is Verdict.NO_DECISION]
    if undecided:
        return Decision(MutationOutcome.DISCARDED, undecided[0].cause or Cause.EVIDENCE,
                        f"gate NO_DECISION, never a kill: {_listing(undecided)}")
    survivors = [results[g] for g in expect.red if results[g].verdict is Verdict.GREEN]
    if survivors:
        return Decision(MutationOutcome.SURVIVED, None,
                        f"stayed GREEN under the mutation: {', '.join(r.gate_id for r in survivors)}")
    harness = [g for g in expect.red if g in (no_case or {})]
    if harness and no_case:
        return Decision(MutationOutcome.DISCARDED, results[harness[0]].cause,
                        f"RED with no test failing as it ran ({'; '.join(no_case[g] for g in harness)}): never a kill")
    not_kills = [results[g] for g in expect.red if results[g].cause not in KILL_CAUSES]
    if not_kills:
        return Decision(MutationOutcome.DISCARDED, not_kills[0].cause,
                        f"RED for a cause that is not a kill: {_listing(not_kills)}")
    broken = [results[g] for g in expect.green if results[g].verdict is not Verdict.GREEN]
    if broken:
        return Decision(MutationOutcome.UNSCOPED, broken[0].cause,
                        f"a control went RED too: {_listing(broken)}")
    reds = ", ".join(f"{g} ({getattr(results[g].cause, 'value', '?')})" for g in expect.red)
    return Decision(MutationOutcome.KILLED, None, f"RED: {reds}" + (
        f"; controls GREEN: {', '.join(expect.green)}" if expect.green else ""))


def unread(decision: Decision, file: str, reads: ReadSet) -> Decision:
    """A mutation counts only where a run it was graded on read its file (the Python side of
    `redfirst.mutations.compiled.judge`): where the mutated runs' read set is known and holds a
    copy of `file` outside the root (a file whose last two path components are the file's: an
    absolute `PYTHONPATH` or data path into the user's tree, an editable install of it), whether
    or not it holds `file` too (opened as text beside the copy imported), their KILLED, SURVIVED
    or UNSCOPED says nothing of the mutation and is DISCARDED, naming the copies read. A file no run read and no copy of it read is
    untested code, left as decided (a SURVIVED is a finding). A caller may
    rely on every outcome it returns being the one given or that DISCARDED; an unknown read set
    (a build, a process started) decides nothing here."""
    name = "/" + "/".join(file.split("/")[-2:])
    copies = sorted(p for p in reads.outside if p.endswith(name))
    if reads.unknown is not None or not copies or decision.outcome not in (
            MutationOutcome.KILLED, MutationOutcome.SURVIVED, MutationOutcome.UNSCOPED):
        return decision
    what = f"read {file} only as a file ({', '.join(copies)} too)" if file in reads.paths else \
        f"never read {file}; they read {', '.join(copies)} instead"
    return Decision(MutationOutcome.DISCARDED, Cause.ENVIRONMENT, f"the gates' runs under the mutation {what}: "
                    f"{decision.outcome.value} there says nothing of the mutation")
