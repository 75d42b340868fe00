"""The pytest parser against the terminal output of real pytest runs on generated test files."""

from __future__ import annotations

import signal
import textwrap

import pytest

from redfirst.gates.parsers import get

PARSER = get("pytest")

MIXED = textwrap.dedent(
    """
    import pytest

    def test_pass_one(): assert True
    def test_pass_two(): assert True
    def test_fails(): assert 1 + 1 == 3

    @pytest.mark.skip(reason="not on this box")
    def test_skipped(): pass

    @pytest.mark.xfail(reason="known bug")
    def test_xfail(): assert False

    @pytest.mark.xfail(reason="fixed since")
    def test_xpass(): assert True

    @pytest.mark.xfail(strict=True)
    def test_xpass_strict(): assert True

    @pytest.fixture
    def broken(): raise RuntimeError("setup breaks")

    def test_setup_error(broken): pass
    """
)


def write(folder, **files):
    for name, text in files.items():
        (folder / name).write_text(textwrap.dedent(text))
    return folder


def test_full_pass(tmp_path, real_pytest):
    write(tmp_path, test_ok="def test_a(): pass\ndef test_b(): pass\ndef test_c(): pass\n")
    (tmp_path / "test_ok").rename(tmp_path / "test_ok.py")
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0
    assert (counts.passed, counts.failed, counts.skipped) == (3, 0, 0) and counts.summary_seen
    assert not counts.nothing_ran and counts.assertions is None


def test_failures_errors_skips_and_xfail_count_as_documented(tmp_path, real_pytest):
    (tmp_path / "test_mixed.py").write_text(MIXED)
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 1
    assert "2 failed, 2 passed, 1 skipped, 1 xfailed, 1 xpassed, 1 error" in ran.stdout
    # passed: 2 + xpass; failed: fail + strict xpass + setup error; skipped: skip + xfail
    assert (counts.passed, counts.failed, counts.skipped) == (3, 3, 2) and counts.summary_seen


def test_quiet_and_coloured_output_parse_the_same(tmp_path, real_pytest):
    (tmp_path / "test_mixed.py").write_text(MIXED)
    expected = PARSER.parse(real_pytest(tmp_path).stdout, "")
    quiet = real_pytest(tmp_path, "-q")
    coloured = real_pytest(tmp_path, "-q", "--color=yes")
    assert "\x1b[" in coloured.stdout and not quiet.stdout.rstrip().endswith("=")
    assert PARSER.parse(quiet.stdout, quiet.stderr) == expected
    assert PARSER.parse(coloured.stdout, coloured.stderr) == expected
    assert PARSER.parse(coloured.stdout.replace("\n", "\r\n"), "") == expected


def test_every_test_skipped_executes_nothing(tmp_path, real_pytest):
    (tmp_path / "test_skip.py").write_text(
        "import pytest\n\n@pytest.mark.skip\ndef test_a(): pass\n\ndef test_b(): pytest.skip('no box')\n"
    )
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0
    assert counts.executed == 0 and counts.skipped == 2 and counts.summary_seen and not counts.nothing_ran


def test_deselected_are_never_executed(tmp_path, real_pytest):
    (tmp_path / "test_sel.py").write_text("def test_keep(): pass\ndef test_drop(): pass\ndef test_drop_too(): pass\n")
    some = real_pytest(tmp_path, "-k", "keep")
    counts = PARSER.parse(some.stdout, some.stderr)
    assert "1 passed, 2 deselected" in some.stdout
    assert (counts.passed, counts.skipped) == (1, 0)
    none = real_pytest(tmp_path, "-k", "nomatch")
    counts = PARSER.parse(none.stdout, none.stderr)
    assert none.returncode == 5 and counts.executed == 0 and counts.nothing_ran


def test_no_tests_collected_says_nothing_ran(tmp_path, real_pytest):
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 5 and "no tests ran" in ran.stdout
    assert counts.nothing_ran and counts.summary_seen and counts.executed == 0


def test_collection_error_is_failed(tmp_path, real_pytest):
    (tmp_path / "test_broken.py").write_text("import no_such_module_here\n")
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == 2 and counts.failed == 1 and counts.summary_seen


def test_pass_printed_before_sigsegv_still_parses_as_pass(tmp_path, real_pytest):
    write(
        tmp_path,
        **{
            "conftest.py": """
                import os, signal
                def pytest_unconfigure(config):
                    os.kill(os.getpid(), signal.SIGSEGV)
            """,
            "test_ok.py": "def test_a(): pass\ndef test_b(): pass\n",
        },
    )
    ran = real_pytest(tmp_path)
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert ran.returncode == -signal.SIGSEGV
    assert (counts.passed, counts.failed) == (2, 0) and counts.summary_seen


def test_the_last_summary_line_is_pytests_own(tmp_path, real_pytest):
    # a test that prints a pytest-like line (with -s) must not decide the counts
    (tmp_path / "test_noisy.py").write_text("def test_a():\n    print('\\n99 passed in 0.01s')\n    assert False\n")
    ran = real_pytest(tmp_path, "-s")
    counts = PARSER.parse(ran.stdout, ran.stderr)
    assert "\n99 passed in 0.01s\n" in ran.stdout
    assert (counts.passed, counts.failed) == (0, 1)


def test_output_cut_before_the_summary_is_not_seen(tmp_path, real_pytest):
    (tmp_path / "test_ok.py").write_text("def test_a(): pass\n")
    out = real_pytest(tmp_path).stdout
    counts = PARSER.parse(out[: out.rindex("1 passed")], "")
    assert not counts.summary_seen and counts.executed == 0


def test_recorded_long_run_and_old_seconds_forms():
    # Recorded shapes: pytest >= 6 adds `(h:mm:ss)` past a minute; pytest < 6 wrote `seconds`
    long = PARSER.parse("===== 120 passed, 3 skipped in 75.31s (0:01:15) =====\n", "")
    old = PARSER.parse("==== 4 passed, 1 failed in 0.12 seconds ====\n", "")
    assert (long.passed, long.skipped, long.summary_seen) == (120, 3, True)
    assert (old.passed, old.failed, old.summary_seen) == (4, 1, True)


def test_unknown_failure_word_counts_as_failed_and_unknown_pass_word_does_not_pass():
    counts = PARSER.parse("= 1 passed, 2 subtests failed, 5 subtests passed in 0.10s =\n", "")
    assert (counts.passed, counts.failed) == (1, 2)


# --- every session in the output counts (issue #11), through the real `gates run` -----------

def _sessions_gate(tmp_path, *flags):
    import sys

    for name, body in (("first", "def test_a(): assert False\ndef test_b(): pass\n"),
                       ("second", "def test_c(): pass\ndef test_d(): pass\n")):
        (tmp_path / "proj" / name).mkdir(parents=True)
        (tmp_path / "proj" / name / f"test_{name}.py").write_text(body)
        (tmp_path / "proj" / name / "pytest.ini").write_text("[pytest]\n")
    pytest = f"{sys.executable} -m pytest -p no:cacheprovider {' '.join(flags)}"
    return f"""
        gate: two-sessions
        driver:
          type: command
          run: "cd first && {pytest}; cd ../second && {pytest}"
          format: pytest
          env: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}
        assert: {{cases: {{min: 2}}}}
    """


def test_two_sessions_where_the_first_failed_are_red(tmp_path, gates_run, run_program):
    item = gates_run(tmp_path, _sessions_gate(tmp_path))
    assert item["verdict"] == "RED", item
    assert (item["counts"]["passed"], item["counts"]["failed"]) == (3, 1), item["counts"]


def test_two_quiet_sessions_where_the_first_failed_are_red(tmp_path, gates_run):
    # -q prints no session header: the first session's failure still counts
    item = gates_run(tmp_path, _sessions_gate(tmp_path, "-q"))
    assert item["verdict"] == "RED" and item["counts"]["failed"] == 1, item


def test_sessions_add_up_and_a_session_without_summary_is_not_complete(tmp_path, real_pytest):
    (tmp_path / "test_ok.py").write_text("def test_a(): pass\ndef test_b(): pass\n")
    one = real_pytest(tmp_path).stdout
    both = PARSER.parse(one + one, "")
    assert (both.passed, both.summary_seen, both.doubt) == (4, True, None)
    cut = PARSER.parse(one + one[: one.rindex("2 passed")], "")
    assert cut.passed == 2 and not cut.summary_seen


def test_quiet_summary_lines_that_cannot_be_told_apart_are_no_decision(tmp_path, real_pytest):
    # two -q sessions that both passed, or a test printing a summary-like line: counted once, doubted
    (tmp_path / "test_ok.py").write_text("def test_a(): pass\n")
    one = real_pytest(tmp_path, "-q").stdout
    counts = PARSER.parse(one + one, "")
    assert counts.passed == 1 and counts.doubt and "-q" in counts.doubt


@pytest.mark.parametrize("quiet", ["-qq", "-qq -rN --tb=no"])
def test_a_very_quiet_failed_session_before_a_passing_one_is_red(tmp_path, gates_run, quiet):
    # rev11: `-qq` prints no summary line and no header, only the short test summary: it was GREEN
    import sys

    for name, body in (("first", "def test_a(): assert False\n"), ("second", "def test_c(): pass\n")):
        (tmp_path / "proj" / name).mkdir(parents=True)
        (tmp_path / "proj" / name / f"test_{name}.py").write_text(body)
        (tmp_path / "proj" / name / "pytest.ini").write_text("[pytest]\n")
    pytest = f"{sys.executable} -m pytest -p no:cacheprovider"
    item = gates_run(tmp_path, f"""
        gate: two-sessions
        driver:
          type: command
          run: "cd first && {pytest} {quiet}; cd ../second && {pytest}"
          format: pytest
          env: {{PYTEST_DISABLE_PLUGIN_AUTOLOAD: "1"}}
    """)
    assert item["verdict"] == "RED" and item["counts"]["failed"] == 1, item
