"""Verdicts, causes and the exit-code map: the one vocabulary every part of redfirst speaks.

A leaf module: it imports nothing from redfirst, so gates, mutations, leases and
checkers can all depend on it (DESIGN section 1).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass


class Verdict(str, enum.Enum):
    GREEN = "GREEN"
    RED = "RED"
    NO_DECISION = "NO_DECISION"
    ERROR = "ERROR"


class Cause(str, enum.Enum):
    BUILD = "build"
    SIGNAL = "signal"
    TIMEOUT = "timeout"
    EXIT = "exit"
    ASSERTION = "assertion"
    EVIDENCE = "evidence"
    ENVIRONMENT = "environment"
    CONFIG = "config"


class MutationOutcome(str, enum.Enum):
    KILLED = "KILLED"
    SURVIVED = "SURVIVED"
    UNSCOPED = "UNSCOPED"
    DISCARDED = "DISCARDED"
    # the build it was graded on compiled the mutation to byte-identical outputs: nothing a test
    # could tell apart, so no decision about the tests (never SURVIVED, never KILLED)
    EQUIVALENT = "EQUIVALENT"
    # compiled to an object byte-identical to an earlier mutant's (`mutate sweep`'s compiler
    # equivalence): that mutant's outcome is this one's, so no gate runs for it (never SURVIVED, never KILLED)
    DUPLICATE = "DUPLICATE"
    ERROR = "ERROR"


# Exit codes of DESIGN section 1; leases' "not granted in time" is sysexits' EX_TEMPFAIL.
EXIT_OK = 0
EXIT_RED = 1
EXIT_ERROR = 2
EXIT_NO_DECISION = 3
EXIT_LEASE_NOT_GRANTED = 75

_EXIT_OF: dict[str, int] = {
    Verdict.GREEN.value: EXIT_OK,
    Verdict.RED.value: EXIT_RED,
    Verdict.NO_DECISION.value: EXIT_NO_DECISION,
    Verdict.ERROR.value: EXIT_ERROR,
    MutationOutcome.KILLED.value: EXIT_OK,
    MutationOutcome.SURVIVED.value: EXIT_RED,
    MutationOutcome.UNSCOPED.value: EXIT_RED,
    MutationOutcome.DISCARDED.value: EXIT_NO_DECISION,
    MutationOutcome.EQUIVALENT.value: EXIT_NO_DECISION,
    MutationOutcome.DUPLICATE.value: EXIT_NO_DECISION,
}

# 2 outranks 1 outranks 3 outranks 0.
_RANK = {EXIT_OK: 0, EXIT_NO_DECISION: 1, EXIT_RED: 2, EXIT_ERROR: 3}

PASSING = frozenset({Verdict.GREEN.value, MutationOutcome.KILLED.value})
# Not a pass and a fact against the code (shown as errors), and not a pass for want of evidence (warnings).
FAILING = frozenset({Verdict.RED.value, Verdict.ERROR.value, MutationOutcome.SURVIVED.value,
                     MutationOutcome.UNSCOPED.value})
UNDECIDED = frozenset({Verdict.NO_DECISION.value, MutationOutcome.DISCARDED.value,
                       MutationOutcome.EQUIVALENT.value, MutationOutcome.DUPLICATE.value})
# Every word an item's verdict may be: a gate's verdict or a mutation's outcome.
WORDS = tuple(dict.fromkeys(v.value for v in (*Verdict, *MutationOutcome)))

# What an exit status alone says; 75 is `leases run`'s "no lease in time": nothing was decided.
VERDICT_OF_EXIT: dict[int, Verdict] = {EXIT_OK: Verdict.GREEN, EXIT_RED: Verdict.RED, EXIT_ERROR: Verdict.ERROR,
                                       EXIT_NO_DECISION: Verdict.NO_DECISION,
                                       EXIT_LEASE_NOT_GRANTED: Verdict.NO_DECISION}


@dataclass(frozen=True)
class Outcome:
    """A verdict with the cause and the one-line reason a person can act on."""

    verdict: Verdict
    cause: Cause | None
    reason: str

    def __post_init__(self) -> None:
        # Rule 5: every NO_DECISION and ERROR names what is missing or wrong.
        if self.verdict is not Verdict.GREEN and not self.reason.strip():
            raise ValueError(f"{self.verdict.value} needs a reason")
        if self.verdict is not Verdict.GREEN and self.cause is None:
            raise ValueError(f"{self.verdict.value} needs a cause")


def green(reason: str = "") -> Outcome:
    return Outcome(Verdict.GREEN, None, reason)


def red(cause: Cause, reason: str) -> Outcome:
    return Outcome(Verdict.RED, cause, reason)


def no_decision(cause: Cause, reason: str) -> Outcome:
    return Outcome(Verdict.NO_DECISION, cause, reason)


def error(cause: Cause, reason: str) -> Outcome:
    return Outcome(Verdict.ERROR, cause, reason)


def exit_code(results: Iterable[Verdict | MutationOutcome | str], allow_no_decision: bool = False) -> int:
    """The exit code of a command that decided `results` (verdicts or mutation outcomes).

    Selecting nothing is 3, always; `allow_no_decision` turns 3 into 0 only when
    something was selected.
    """
    codes = [_EXIT_OF[r.value if isinstance(r, enum.Enum) else str(r)] for r in results]
    if not codes:
        return EXIT_NO_DECISION
    worst = max(codes, key=_RANK.__getitem__)
    if worst == EXIT_NO_DECISION and allow_no_decision:
        return EXIT_OK
    return worst


def all_passing(results: Iterable[Verdict | MutationOutcome | str]) -> bool:
    """True only when something was selected and every item is GREEN (or KILLED)."""
    values = [r.value if isinstance(r, enum.Enum) else str(r) for r in results]
    return bool(values) and all(v in PASSING for v in values)


def verdict_of_exit(status: int) -> Verdict:
    """The verdict an exit status stands for (DESIGN section 1); an unknown status is ERROR."""
    return VERDICT_OF_EXIT.get(status, Verdict.ERROR)


def rank(verdict: Verdict | str) -> int:
    """How bad a verdict is, as its exit code ranks (GREEN 0 < NO_DECISION < RED < ERROR);
    a word this version does not know ranks as ERROR, never as a pass."""
    value = verdict.value if isinstance(verdict, enum.Enum) else str(verdict)
    return _RANK[_EXIT_OF.get(value, EXIT_ERROR)]
