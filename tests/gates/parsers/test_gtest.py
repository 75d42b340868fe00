"""The GoogleTest parser against the output of a real GoogleTest program (programs/gtest_suite.cpp)."""

from __future__ import annotations

import signal

from redfirst.gates.parsers import get

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


# --- counts come from what executed (issue #11), through the real `gates run` ---------------

def _gate(binary, *args, env=""):
    argv = ", ".join(f'"{a}"' for a in (binary, *args))
    return f"""
        gate: g
        driver: {{type: command, run: [{argv}], format: gtest{env}}}
        assert: {{cases: {{min: 1}}}}
    """


def test_environment_skip_printed_as_passed_is_no_decision_with_both_numbers(
        gtest_bin, run_program, gates_run, tmp_path):
    ran = run_program([gtest_bin, "--gtest_filter=Pass.*"], env={"SKIP_IN_ENVIRONMENT": "1"})
    assert ran.returncode == 0 and "[  PASSED  ] 2 tests." in ran.stdout and "[ RUN      ]" not in ran.stdout
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert counts.per_case == 0 and counts.doubt and "2" in counts.doubt
    item = gates_run(tmp_path, _gate(gtest_bin, "--gtest_filter=Pass.*", env=", env: {SKIP_IN_ENVIRONMENT: '1'}"))
    assert item["verdict"] == "NO_DECISION", item
    assert "2 passed" in item["reason"] and "per-test lines show 0 passed" in item["reason"], item["reason"]


def test_brief_output_has_no_per_test_pass_lines_and_is_no_decision(gtest_bin, gates_run, tmp_path):
    item = gates_run(tmp_path, _gate(gtest_bin, "--gtest_filter=Pass.*", "--gtest_brief=1"))
    assert item["verdict"] == "NO_DECISION" and "--gtest_brief" in item["reason"], item


def test_per_test_lines_that_agree_with_the_summary_are_green(gtest_bin, run_program, gates_run, tmp_path):
    ran = run_program([gtest_bin, "--gtest_filter=Pass.*:Skip.*"])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert (counts.per_case, counts.passed, counts.skipped, counts.doubt) == (2, 2, 2, None)
    assert gates_run(tmp_path, _gate(gtest_bin, "--gtest_filter=Pass.*:Skip.*"))["verdict"] == "GREEN"


def test_a_failed_test_is_named_with_its_first_failure_and_place(gtest_bin, run_program):
    ran = run_program([gtest_bin, "--gtest_filter=-Crash.*"])
    (failure,) = PARSER.parse(ran.stdout, ran.stderr).failures
    assert failure.id == "Fail.One"
    assert failure.message == "Expected equality of these values: 1 + 1 Which is: 2 3"
    assert (failure.file or "").endswith("/gtest_suite.cpp") and failure.line == 13


def test_gates_run_json_names_the_failed_gtest_case_at_its_source_line(gtest_bin, gates_run, tmp_path):
    item = gates_run(tmp_path, f"""
        gate: g
        driver: {{type: command, run: "{gtest_bin} --gtest_filter=-Crash.*", format: gtest}}
    """)
    assert item["verdict"] == "RED" and item["more_failures"] == 0, item
    (failure,) = item["failures"]
    assert failure["id"] == "Fail.One" and failure["message"].startswith("Expected equality")
    # the program's source lies outside this gate's project: no place outside the project is shown
    # (redfirst.gates.runner.failures_json); test_failures_truthful shows a place inside one
    assert (failure["file"], failure["line"]) == (None, None), failure
