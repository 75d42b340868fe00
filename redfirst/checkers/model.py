"""Records that cross module boundaries: findings, undecided rules and check results."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from redfirst.verdict import Cause, Verdict


@dataclass(frozen=True)
class Finding:
    """One broken rule at one place; `message` says how to repair the record."""

    file: str
    line: int
    rule: str
    message: str


@dataclass(frozen=True)
class Undecided:
    """A rule that could not be judged because an input is missing; `missing` names it."""

    rule: str
    missing: str


@dataclass(frozen=True)
class CheckResult:
    id: str
    verdict: Verdict
    cause: Cause | None
    reason: str
    counts: Mapping[str, int] = field(default_factory=dict)
    findings: tuple[Finding, ...] = ()
    undecided: tuple[Undecided, ...] = ()


def decide(
    check_id: str,
    findings: Sequence[Finding],
    undecided: Sequence[Undecided] = (),
    counts: Mapping[str, int] | None = None,
    checked: int = 0,
    what: str = "items",
) -> CheckResult:
    """The one place a checker's evidence becomes a verdict.

    Findings make it RED; otherwise a missing input makes it NO_DECISION; otherwise it is
    GREEN only if something was actually checked (`checked` > 0).
    """
    counts = dict(counts or {})
    counts.setdefault("findings", len(findings))
    missing = "; ".join(f"{u.rule}: {u.missing}" for u in undecided)
    if findings:
        reason = f"{len(findings)} finding(s)" + (f"; undecided: {missing}" if missing else "")
        return CheckResult(check_id, Verdict.RED, Cause.ASSERTION, reason, counts, tuple(findings), tuple(undecided))
    if undecided:
        done = f"{checked} {what} checked; " if checked > 0 else ""
        return CheckResult(check_id, Verdict.NO_DECISION, Cause.EVIDENCE, f"{done}missing input: {missing}", counts,
                           (), tuple(undecided))
    if checked <= 0:
        return CheckResult(check_id, Verdict.NO_DECISION, Cause.EVIDENCE, f"nothing to check: 0 {what} found", counts)
    return CheckResult(check_id, Verdict.GREEN, None, f"{checked} {what} checked", counts)


def no_decision(check_id: str, reason: str, cause: Cause = Cause.EVIDENCE) -> CheckResult:
    return CheckResult(check_id, Verdict.NO_DECISION, cause, reason)


def config_error(check_id: str, reason: str) -> CheckResult:
    return CheckResult(check_id, Verdict.ERROR, Cause.CONFIG, reason)
