"""The doctest parser against the output of a real doctest program (programs/doctest_suite.cpp)."""

from __future__ import annotations

import signal

from gates.parsers import get

PARSER = get("doctest")


def test_full_pass_counts_cases_and_assertions(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tc=pass*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0
    assert (counts.passed, counts.failed, counts.assertions, counts.assertions_failed) == (2, 0, 8, 0)
    assert counts.summary_seen and PARSER.reports_assertions


def test_failed_case_is_counted_and_named(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tce=crash*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 1
    assert (counts.passed, counts.failed, counts.assertions, counts.assertions_failed) == (3, 1, 10, 1)
    assert "fail_one" in counts.notes and counts.summary_seen


def test_every_case_filtered_out_executes_nothing(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tc=nomatch"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and "Status: SUCCESS!" in ran.stdout
    assert counts.executed == 0 and counts.skipped == 6 and counts.summary_seen


def test_success_over_zero_assertions_reports_zero_assertions(doctest_bin, run_program):
    # the famous lie: a passed case with no assertions under Status: SUCCESS!
    ran = run_program([doctest_bin, "-tc=empty*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "Status: SUCCESS!" in ran.stdout and "assertions: 0" in ran.stdout
    assert counts.passed == 1 and counts.assertions == 0 and counts.summary_seen


def test_decorator_skip_is_skipped_not_passed(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tc=skipped*", "--no-skip"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.failed) == (0, 1)  # --no-skip runs it, and it fails
    ran = run_program([doctest_bin, "-tc=skipped*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert counts.executed == 0 and counts.skipped == 6


def test_pass_printed_before_sigsegv_still_parses_as_pass(doctest_bin, run_program):
    # the parser reports what was printed; the grader turns the signal into RED
    ran = run_program([doctest_bin, "-tc=pass*"], env={"SEGV_AFTER_SUMMARY": "1"})
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed, counts.assertions) == (2, 0, 8) and counts.summary_seen


def test_crash_inside_a_case_is_a_failed_case(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tc=pass*,crash*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 1) and "crash_in_case" in counts.notes


def test_forced_colours_and_crlf_parse_the_same(doctest_bin, run_program):
    plain = run_program([doctest_bin, "-tce=crash*"])
    coloured = run_program([doctest_bin, "-tce=crash*", "--force-colors"])
    assert "\x1b[" in coloured.stdout
    expected = PARSER.parse(plain.stdout, plain.stderr)
    assert PARSER.parse(coloured.stdout, coloured.stderr) == expected
    assert PARSER.parse(coloured.stdout.replace("\n", "\r\n"), "") == expected


def test_summary_on_stderr_is_read(doctest_bin, run_program):
    ran = run_program([doctest_bin, "-tc=pass*"])
    assert PARSER.parse("", ran.stdout) == PARSER.parse(ran.stdout, "")


def test_two_runs_add_up_and_a_run_without_summary_is_not_complete(doctest_bin, run_program):
    first = run_program([doctest_bin, "-tc=pass*"]).stdout
    second = run_program([doctest_bin, "-tce=crash*"]).stdout
    both = PARSER.parse(first + second, "")
    assert (both.passed, both.failed, both.assertions) == (5, 1, 18) and both.summary_seen
    banner_only = second.split("===")[0]  # the second run died before its summary
    cut = PARSER.parse(first + banner_only, "")
    assert cut.passed == 2 and not cut.summary_seen


def test_truncated_summary_is_not_seen(doctest_bin, run_program):
    out = run_program([doctest_bin, "-tc=pass*"]).stdout
    cut = out[: out.index("[doctest] Status:")]
    assert not PARSER.parse(cut, "").summary_seen


def test_a_total_the_parts_do_not_add_up_to_counts_the_rest_as_failed() -> None:
    # Recorded, not produced: no real doctest prints a total its parts do not add up to;
    # the line is what a truncated or doctored log could hold.
    from gates.parsers import get

    out = ("[doctest] test cases: 10 | 1 passed | 0 failed | 0 skipped\n"
           "[doctest] assertions: 3 | 3 passed | 0 failed |\n[doctest] Status: SUCCESS!\n")
    counts = get("doctest").parse(out, "")
    assert counts.passed == 1 and counts.failed == 9
