"""Grading step 4's last line of defence: counts that report failed assertions are RED,
whatever the case counts say. A parser that misses a failed case (a framework printing a
case line wrong, a format we read only in part) must not turn failed assertions into GREEN.

doctest's `may_fail`, whose failed CHECK doctest itself calls a success, is graded as
doctest grades it (tests/gates/parsers/test_doctest.py); this file guards the grader."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from redfirst.gates import grade, loader
from redfirst.gates.config import Project
from redfirst.gates.parsers import Counts
from redfirst.verdict import Cause, Verdict

# Only `enumerate` (ctest -N) is read from the record by this step; none here.
_NO_ENUMERATION = SimpleNamespace(enumerate=None)


def _gate(tmp_path: Path, fmt: str):
    text = f"gate: g\ndriver: {{type: command, run: [./suite], format: {fmt}}}\n"
    return loader.gate_from_document(text, tmp_path / "g.yaml", Project(tmp_path, None))


@pytest.mark.parametrize("fmt", ["doctest", "catch2"])
def test_failed_assertions_are_red_though_no_case_is_counted_failed(tmp_path: Path, fmt: str) -> None:
    parsed = Counts(passed=2, failed=0, assertions=3, assertions_failed=1, summary_seen=True, per_case=2)
    outcome = grade._grade_counts(_gate(tmp_path, fmt), parsed, _NO_ENUMERATION, tmp_path, {}, ())  # type: ignore[arg-type]
    assert (outcome.verdict, outcome.cause) == (Verdict.RED, Cause.ASSERTION), outcome
    assert "1 assertions failed" in outcome.reason


def test_the_same_counts_without_failed_assertions_are_green(tmp_path: Path) -> None:
    # The control: the RED above comes from the failed assertion, nothing else.
    parsed = Counts(passed=2, failed=0, assertions=3, assertions_failed=0, summary_seen=True, per_case=2)
    outcome = grade._grade_counts(_gate(tmp_path, "doctest"), parsed, _NO_ENUMERATION, tmp_path, {}, ())  # type: ignore[arg-type]
    assert outcome.verdict is Verdict.GREEN, outcome
