"""redfirst.verdict: the exit-code map and the rule that every non-GREEN verdict carries a reason."""

from __future__ import annotations

import pytest

from redfirst.verdict import Cause, MutationOutcome, Outcome, Verdict, all_passing, exit_code


def test_error_outranks_red_outranks_no_decision_outranks_green() -> None:
    G, R, N, E = Verdict.GREEN, Verdict.RED, Verdict.NO_DECISION, Verdict.ERROR
    assert exit_code([G, G]) == 0
    assert exit_code([G, N]) == 3
    assert exit_code([N, R, G]) == 1
    assert exit_code([R, E, N]) == 2


def test_selecting_nothing_is_3_even_with_allow_no_decision() -> None:
    assert exit_code([]) == 3
    assert exit_code([], allow_no_decision=True) == 3


def test_allow_no_decision_turns_only_3_into_0() -> None:
    assert exit_code([Verdict.NO_DECISION], allow_no_decision=True) == 0
    assert exit_code([Verdict.RED, Verdict.NO_DECISION], allow_no_decision=True) == 1


def test_mutation_outcomes_map_like_verdicts() -> None:
    assert exit_code([MutationOutcome.KILLED]) == 0
    assert exit_code([MutationOutcome.SURVIVED]) == 1
    assert exit_code([MutationOutcome.UNSCOPED]) == 1
    assert exit_code([MutationOutcome.DISCARDED]) == 3
    assert exit_code([MutationOutcome.ERROR, MutationOutcome.SURVIVED]) == 2


def test_all_passing_needs_something_selected() -> None:
    assert not all_passing([])
    assert all_passing([Verdict.GREEN, MutationOutcome.KILLED])
    assert not all_passing([Verdict.GREEN, Verdict.NO_DECISION])


@pytest.mark.parametrize("verdict", [Verdict.RED, Verdict.NO_DECISION, Verdict.ERROR])
def test_every_verdict_but_green_names_a_reason_and_a_cause(verdict: Verdict) -> None:
    with pytest.raises(ValueError):
        Outcome(verdict, Cause.EVIDENCE, "  ")
    with pytest.raises(ValueError):
        Outcome(verdict, None, "something is missing")
    assert Outcome(verdict, Cause.EVIDENCE, "0 cases executed").reason
