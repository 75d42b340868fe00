"""The plain `N passed, N failed` line, printed by real processes."""

from __future__ import annotations

import signal
import sys

from redfirst.gates.parsers import get

PARSER = get("plain")


def printed(run_program, text: str, *, stderr: str = "", then_segv: bool = False):
    code = f"import os, signal, sys\nsys.stdout.write({text!r})\nsys.stdout.flush()\nsys.stderr.write({stderr!r})\n"
    if then_segv:
        code += "os.kill(os.getpid(), signal.SIGSEGV)\n"
    ran = run_program([sys.executable, "-c", code])
    return ran, PARSER.parse(ran.stdout, ran.stderr)


def test_full_pass(run_program):
    _, counts = printed(run_program, "running\n3 passed, 0 failed\n")
    assert (counts.passed, counts.failed, counts.skipped) == (3, 0, 0) and counts.summary_seen
    assert counts.assertions is None and not PARSER.reports_assertions


def test_failures_skips_and_a_word_with_a_colon(run_program):
    _, counts = printed(run_program, "tests: 3 passed, 1 failed, 2 skipped\n")
    assert (counts.passed, counts.failed, counts.skipped) == (3, 1, 2) and counts.summary_seen


def test_every_case_skipped_executes_nothing(run_program):
    _, counts = printed(run_program, "0 passed, 0 failed, 4 skipped\n")
    assert counts.executed == 0 and counts.skipped == 4 and counts.summary_seen


def test_every_summary_line_adds_up(run_program):
    # Two programs in one script: the first one's failures must not hide behind the second's pass.
    _, counts = printed(run_program, "first: 3 passed, 2 failed\nsecond: 5 passed, 0 failed\n")
    assert (counts.passed, counts.failed) == (8, 2)


def test_summaries_on_stdout_and_stderr_both_count(run_program):
    _, counts = printed(run_program, "2 passed, 0 failed\n", stderr="2 passed, 1 failed\n")
    assert (counts.passed, counts.failed) == (4, 1)


def test_lines_with_anything_else_are_not_the_summary(run_program):
    noise = "we had 3 passed, 0 failed\n3 passed, 0 failed!\nunit tests: 3 passed, 0 failed\n3 passed 0 failed\n"
    _, counts = printed(run_program, noise)
    assert not counts.summary_seen and counts.executed == 0


def test_colour_crlf_and_indentation(run_program):
    _, counts = printed(run_program, "\x1b[32mresult: 7 passed\x1b[0m, \x1b[31m1 failed\x1b[0m\r\n  \r\n")
    assert (counts.passed, counts.failed) == (7, 1) and counts.summary_seen


def test_pass_printed_before_sigsegv_still_parses_as_pass(run_program):
    ran, counts = printed(run_program, "2 passed, 0 failed\n", then_segv=True)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen
