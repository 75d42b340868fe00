"""The TAP parser against TAP streams from real producer scripts, run directly and through `prove -v`."""

from __future__ import annotations

import signal
import textwrap

import pytest

from redfirst.gates.parsers import get
from redfirst.gates.parsers.tap import failed_tests

PARSER = get("tap")


def producer(folder, name: str, body: str):
    script = folder / name
    script.write_text("#!/bin/sh\n" + textwrap.dedent(body))
    return script


def tap(run_program, script, env=None):
    ran = run_program(["sh", script], env=env)
    return ran, PARSER.parse(ran.stdout, ran.stderr)


def test_full_pass(tmp_path, run_program):
    script = producer(tmp_path, "pass.t", 'echo "1..3"; for i in 1 2 3; do echo "ok $i - case $i"; done\n')
    ran, counts = tap(run_program, script)
    assert ran.returncode == 0
    assert (counts.passed, counts.failed, counts.skipped) == (3, 0, 0) and counts.summary_seen


def test_tap13_failure_skip_todo_and_yaml(tmp_path, run_program):
    script = producer(
        tmp_path,
        "mixed.t",
        """\
        echo "TAP version 13"
        echo "1..5"
        echo "ok 1 - first"
        echo "not ok 2 - second"
        echo "  ---"
        echo "  message: 'not ok 9 inside YAML is no test'"
        echo "  ..."
        echo "ok 3 - third # SKIP no box"
        echo "not ok 4 - fourth # TODO known bug"
        echo "ok 5 - fifth # todo fixed since"
        """,
    )
    _, counts = tap(run_program, script)
    # todo-not-ok is skipped (a known failure proves nothing); todo-ok passed
    assert (counts.passed, counts.failed, counts.skipped) == (2, 1, 2) and counts.summary_seen
    assert "second" in counts.notes


def test_every_test_skipped_executes_nothing(tmp_path, run_program):
    skip_all = producer(tmp_path, "skipall.t", 'echo "1..0 # SKIP no GPU here"\n')
    skip_each = producer(tmp_path, "skipeach.t", 'echo "1..2"; echo "ok 1 # skip no GPU"; echo "ok 2 # SKIP"\n')
    for script in (skip_all, skip_each):
        _, counts = tap(run_program, script)
        assert counts.executed == 0 and counts.summary_seen


def test_crash_mid_run_counts_the_missing_planned_tests_as_failed(tmp_path, run_program):
    script = producer(tmp_path, "crash.t", 'echo "1..5"; echo "ok 1"; echo "ok 2"; kill -SEGV $$\n')
    ran, counts = tap(run_program, script)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 3)
    assert any("missing" in note for note in counts.notes)


def test_trailing_plan_never_printed_is_no_summary(tmp_path, run_program):
    script = producer(tmp_path, "noplan.t", 'echo "ok 1"; echo "ok 2"\n')
    _, counts = tap(run_program, script)
    assert counts.passed == 2 and not counts.summary_seen


def test_trailing_plan_completes_the_stream(tmp_path, run_program):
    script = producer(tmp_path, "endplan.t", 'echo "ok 1"; echo "ok 2"; echo "1..2"\n')
    _, counts = tap(run_program, script)
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen


def test_bail_out_is_a_failure_and_missing_tests_fail(tmp_path, run_program):
    script = producer(tmp_path, "bail.t", 'echo "1..4"; echo "ok 1"; echo "Bail out! database gone"\n')
    _, counts = tap(run_program, script)
    assert (counts.passed, counts.failed) == (1, 3)
    no_plan = producer(tmp_path, "bail2.t", 'echo "ok 1"; echo "Bail out!"\n')
    _, counts = tap(run_program, no_plan)
    assert (counts.passed, counts.failed) == (1, 1)


def test_more_tests_than_planned_is_a_failure(tmp_path, run_program):
    script = producer(tmp_path, "over.t", 'echo "1..1"; echo "ok 1"; echo "ok 2"\n')
    _, counts = tap(run_program, script)
    assert counts.failed == 1


def test_tap14_subtests_count_through_their_parent(tmp_path, run_program):
    script = producer(
        tmp_path,
        "sub.t",
        """\
        echo "TAP version 14"
        echo "1..2"
        echo "# Subtest: group"
        echo "    1..2"
        echo "    ok 1 - inner"
        echo "    not ok 2 - inner failing"
        echo "not ok 2 - group"
        echo "ok 2 - alone"
        """,
    )
    _, counts = tap(run_program, script)
    assert (counts.passed, counts.failed) == (1, 1) and counts.summary_seen


def test_pass_printed_before_sigsegv_still_parses_as_pass(tmp_path, run_program):
    script = producer(tmp_path, "late.t", 'echo "1..2"; echo "ok 1"; echo "ok 2"; kill -SEGV $$\n')
    ran, counts = tap(run_program, script)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen


def test_prove_verbose_over_several_files_adds_streams_up(tmp_path, run_program, prove):
    one = producer(tmp_path, "one.t", 'echo "1..2"; echo "ok 1"; echo "not ok 2 - broken"\n')
    two = producer(tmp_path, "two.t", 'echo "ok 1"; echo "ok 2 # SKIP"; echo "1..2"\n')
    three = producer(tmp_path, "three.t", 'echo "1..3"; echo "ok 1"; kill -SEGV $$\n')
    ran = run_program([prove, "-v", "--exec", "sh", one, two, three])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "Result: FAIL" in ran.stdout
    assert (counts.passed, counts.failed, counts.skipped) == (3, 3, 1) and counts.summary_seen


def test_prove_verbose_full_pass(tmp_path, run_program, prove):
    one = producer(tmp_path, "one.t", 'echo "1..2"; echo "ok 1"; echo "ok 2"\n')
    ran = run_program([prove, "-v", "--exec", "sh", one])
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and "Result: PASS" in ran.stdout
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen


def test_crlf_parses_the_same(tmp_path, run_program):
    script = producer(tmp_path, "mixed.t", 'echo "1..3"; echo "ok 1"; echo "not ok 2"; echo "ok 3 # SKIP x"\n')
    ran, counts = tap(run_program, script)
    assert PARSER.parse(ran.stdout.replace("\n", "\r\n"), "") == counts


def test_each_not_ok_is_named_with_its_diagnostics_and_place(tmp_path, run_program):
    script = producer(
        tmp_path,
        "diag.t",
        """\
        echo "TAP version 13"
        echo "1..4"
        echo "ok 1 - first"
        echo "not ok 2 - adds"
        echo "  ---"
        echo "  message: 'add(2, 3) should be 5'"
        echo "  file: t/add.t"
        echo "  line: 7"
        echo "  ..."
        echo "not ok 3 - subtracts"
        echo "#   Failed test 'subtracts'"
        echo "#   at t/sub.t line 12."
        echo "#          got: '1'"
        echo "#     expected: '2'"
        echo "not ok 4 - later # TODO not yet"
        """,
    )
    _, counts = tap(run_program, script)
    assert counts.failed == 2
    assert [(f.id, f.message, f.file, f.line) for f in counts.failures] == [
        ("2 - adds", "add(2, 3) should be 5", "t/add.t", 7),
        ("3 - subtracts", "got: '1' expected: '2'", "t/sub.t", 12)]


# A test line's directive as TAP's own harness reads it (TAP::Parser's grammar, `prove`): `# TODO` is a
# word (`# TODOs` is no directive), and a `not ok` line stays failed under `# SKIP` (only a passing
# test is skipped). Each line below is a test that failed, whatever its description holds.
NOT_SKIPPED = ["not ok 2 - handles #todos", "not ok 2 - a # TODOs later", "not ok 2 - a # SKIP no box",
               "not ok 2 - a #skipped", "not ok 2 - a # skipping"]


@pytest.mark.parametrize("line", NOT_SKIPPED)
def test_a_failed_line_whose_description_only_looks_like_a_directive_fails_as_prove_says(
        tmp_path, run_program, prove, line):
    script = producer(tmp_path, "t.t", f'echo "1..2"; echo "ok 1 - first"; echo "{line}"\n')
    judged = run_program([prove, "--exec", "sh", script])
    assert "Result: FAIL" in judged.stdout, judged.stdout      # the oracle: TAP's own harness
    _, counts = tap(run_program, script)
    assert (counts.passed, counts.failed, counts.skipped) == (1, 1, 0), counts
    # a line that may say skip fails the count, but is no failed check (no kill, no proof)
    assert [t.strip() for t in failed_tests(f"1..2\nok 1\n{line}\n", "")] == ([] if "skip" in line.lower() else [line])


@pytest.mark.parametrize("line", ["not ok 2 - a # TODO later", "not ok 2 - a #todo", "ok 2 - a # SKIP no box",
                                  "ok 2 - a # skipped: no GPU"])
def test_a_todo_still_skips_a_failure_and_a_passing_line_that_may_say_skip_is_no_pass(tmp_path, run_program, prove, line):
    script = producer(tmp_path, "t.t", f'echo "1..2"; echo "ok 1 - first"; echo "{line}"\n')
    assert "Result: PASS" in run_program([prove, "--exec", "sh", script]).stdout
    _, counts = tap(run_program, script)
    assert (counts.passed, counts.failed, counts.skipped) == (1, 0, 1), counts


def test_a_skip_prove_fails_is_never_green_nor_an_assertion(tmp_path, run_program, prove):
    # kselftest's old `not ok 2 # SKIP no GPU`: TAP's harness fails it, so never GREEN, but the test
    # declared a skip: no check failed, so `gates red-first` proves nothing from it
    script = producer(tmp_path, "t.t", 'echo "1..2"; echo "ok 1 - first"; echo "not ok 2 - gpu # SKIP no GPU"\n')
    assert "Result: FAIL" in run_program([prove, "--exec", "sh", script]).stdout
    ran, counts = tap(run_program, script)
    assert counts.failed == 1, counts
    assert PARSER.not_an_assertion(ran.stdout, ran.stderr) is not None
