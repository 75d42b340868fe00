"""The GoogleTest parser against the output of a real GoogleTest program (programs/gtest_suite.cpp)."""

from __future__ import annotations

import signal

from gates.parsers import get

PARSER = get("gtest")


def test_full_pass_counts_passed_tests(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=Pass.*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0
    assert (counts.passed, counts.failed, counts.skipped) == (2, 0, 0) and counts.summary_seen
    assert counts.assertions is None and not PARSER.reports_assertions


def test_failures_and_gtest_skip_are_counted_apart(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=-Crash.*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 1
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 2) and counts.summary_seen
    assert "Fail.One" in counts.notes


def test_every_case_skipped_executes_nothing(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=Skip.*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and "[  PASSED  ] 0 tests." in ran.stdout
    assert counts.executed == 0 and counts.skipped == 2 and counts.summary_seen


def test_filter_matching_nothing_executes_nothing(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=nomatch"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0
    assert counts.executed == 0 and counts.skipped == 0 and counts.summary_seen


def test_pass_printed_before_sigsegv_still_parses_as_pass(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=Pass.*"], env={"SEGV_AFTER_SUMMARY": "1"})
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen


def test_crash_mid_run_has_no_summary_and_keeps_what_was_seen(gtest_bin, run_program):
    ran = run_program([gtest_bin])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == -signal.SIGSEGV and "[ RUN      ] Crash.Segv" in ran.stdout
    assert not counts.summary_seen
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 2)


def test_brief_output_without_failed_total_still_counts_the_failure(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=-Crash.*", "--gtest_brief=1"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "[==========] Running" not in ran.stdout
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 2) and counts.summary_seen


def test_repeated_runs_add_up(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=-Crash.*", "--gtest_repeat=3"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.failed, counts.skipped) == (6, 3, 6) and counts.summary_seen


def test_coloured_and_crlf_output_parse_the_same(gtest_bin, run_program):
    plain = run_program([gtest_bin, "--gtest_filter=-Crash.*"])
    coloured = run_program([gtest_bin, "--gtest_filter=-Crash.*", "--gtest_color=yes"])
    assert "\x1b[" in coloured.stdout
    expected = PARSER.parse(plain.stdout, plain.stderr)
    assert PARSER.parse(coloured.stdout, coloured.stderr) == expected
    assert PARSER.parse(coloured.stdout.replace("\n", "\r\n"), "") == expected


def test_closing_block_missing_failed_tests_counts_them_failed(gtest_bin, run_program):
    out = run_program([gtest_bin, "--gtest_filter=-Crash.*"]).stdout
    # the block says 5 ran; without the per-test lines and the FAILED total, one is unaccounted
    tail = out[out.index("[==========] 5 tests") :]
    tail = tail[: tail.index("[  FAILED  ] 1 test, listed below:")]
    counts = PARSER.parse(tail, "")
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 2)
