"""The unittest parser against real `python -m unittest -v` runs of generated modules, and end
to end through `gates run` with a command driver."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from redfirst.gates.parsers import REGISTRY, get

MIXED = """
    import unittest

    class A(unittest.TestCase):
        def test_ok(self):
            self.assertTrue(True)
        def test_fail(self):
            self.assertEqual(1, 2)
        def test_error(self):
            raise RuntimeError("boom")
        @unittest.skip("not today")
        def test_skip(self):
            pass
        @unittest.expectedFailure
        def test_xfail(self):
            self.assertEqual(1, 2)
        @unittest.expectedFailure
        def test_xpass(self):
            pass

    class Skipped(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise unittest.SkipTest("no gpu")
        def test_a(self):
            pass

    class BrokenSetup(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise RuntimeError("setup broke")
        def test_b(self):
            pass
"""

PASSING = """
    import sys, unittest

    class P(unittest.TestCase):
        def test_one(self):
            self.assertEqual(2 + 2, 4)
        def test_noisy(self):
            '''Prints to stderr while it runs.'''
            print("noise from the test", file=sys.stderr)
            self.assertTrue(True)
        @unittest.skip("later")
        def test_later(self):
            pass
"""

CLASS_SKIPPED = """
    import unittest

    class NeedsGpu(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            raise unittest.SkipTest("needs a GPU")
        def test_a(self):
            pass
        def test_b(self):
            pass
"""

SUBTESTS = """
    import unittest

    class S(unittest.TestCase):
        def test_sub(self):
            for i in range(3):
                with self.subTest(i=i):
                    self.assertLess(i, 1)
        def test_fine(self):
            pass
"""


@pytest.fixture
def unittest_run(tmp_path: Path, run_program):
    """`unittest_run(source, *args)` -> the real `python -m unittest -v` run of a module with that source."""
    def ran(source: str, *args: str):
        (tmp_path / "test_mod.py").write_text(textwrap.dedent(source))
        return run_program([sys.executable, "-m", "unittest", "-v", *args, "test_mod"], cwd=tmp_path)

    return ran


def test_unittest_is_one_registry_line() -> None:
    assert REGISTRY["unittest"] == "unittest"
    assert get("unittest").name == "unittest" and not get("unittest").reports_assertions


def test_every_status_of_a_verbose_run_counts(unittest_run) -> None:
    ran = unittest_run(MIXED)
    assert "test_ok (test_mod.A.test_ok) ... ok" in ran.stderr
    assert "setUpClass (test_mod.Skipped) ... skipped 'no gpu'" in ran.stderr
    assert "Ran 6 tests in" in ran.stderr and "FAILED (failures=1, errors=2" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    # ok passed; FAIL, ERROR, unexpected success and the broken setUpClass failed;
    # the skip, the expected failure and the class skipped in setUpClass skipped
    assert (counts.passed, counts.failed, counts.skipped) == (1, 4, 3), counts
    assert counts.summary_seen and counts.doubt is None
    assert "test_fail (test_mod.A.test_fail)" in counts.notes


def test_a_passing_run_with_a_noisy_test_is_counted(unittest_run) -> None:
    ran = unittest_run(PASSING)
    assert ran.returncode == 0 and "OK (skipped=1)" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.failed, counts.skipped) == (2, 0, 1) and counts.summary_seen
    assert counts.per_case == 2 and counts.doubt is None


def test_a_class_skipped_in_setupclass_is_skipped_and_nothing_executed(unittest_run) -> None:
    ran = unittest_run(CLASS_SKIPPED)
    assert ran.returncode == 0 and "Ran 0 tests" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert counts.executed == 0 and counts.skipped == 1 and counts.summary_seen


def test_failing_subtests_fail_their_test(unittest_run) -> None:
    ran = unittest_run(SUBTESTS)
    assert "(i=1) ... FAIL" in ran.stderr and "Ran 2 tests" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.failed) == (1, 1) and counts.summary_seen and counts.doubt is None


def test_a_run_cut_before_its_ran_line_has_no_summary(unittest_run) -> None:
    ran = unittest_run(PASSING)
    cut = ran.stderr[:ran.stderr.index("Ran ")]
    counts = get("unittest").parse(ran.stdout, cut)
    assert counts.passed == 2 and not counts.summary_seen


def test_a_non_verbose_run_is_an_aggregate_alone(tmp_path: Path, run_program) -> None:
    (tmp_path / "test_mod.py").write_text(textwrap.dedent(MIXED))
    ran = run_program([sys.executable, "-m", "unittest", "test_mod"], cwd=tmp_path)
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert counts.failed >= 1 and counts.doubt is not None and "-v" in counts.doubt


def test_garbage_is_no_summary() -> None:
    counts = get("unittest").parse("OK\n", "Ran lots of tests\n")
    assert not counts.summary_seen and counts.executed == 0


GATE = """
    gate: ut
    driver: {{type: command, run: [{python}, -m, unittest, -v, test_mod], format: unittest, cwd: suite}}
"""


def _project_run(tmp_path: Path, gates_run, source: str) -> dict[str, object]:
    suite = tmp_path / "proj" / "suite"
    suite.mkdir(parents=True)
    (suite / "test_mod.py").write_text(textwrap.dedent(source))
    return gates_run(tmp_path, GATE.format(python=sys.executable))


@pytest.mark.parametrize(("source", "verdict"), [(PASSING, "GREEN"), (MIXED, "RED"), (CLASS_SKIPPED, "NO_DECISION")])
def test_gates_run_grades_unittest_output(tmp_path: Path, gates_run, source: str, verdict: str) -> None:
    item = _project_run(tmp_path, gates_run, source)
    assert item["verdict"] == verdict, item
    if verdict == "GREEN":
        assert item["counts"]["passed"] == 2 and item["counts"]["skipped"] == 1  # type: ignore[index]
    if verdict == "NO_DECISION":
        assert "0 cases executed" in str(item["reason"])


RELAYS_A_CHILD_REPORT = """
    import unittest

    class Suite(unittest.TestCase):
        @classmethod
        def setUpClass(cls):
            # a wrapper that relays a child suite's report on stdout, as SGLang's run_suite does
            print("test_child (child.T.test_child) ... ok\\n\\nRan 1 test in 0.001s\\n\\nOK")
            raise unittest.SkipTest("needs a GPU")
        def test_a(self):
            pass
"""


def test_a_report_the_program_prints_on_stdout_is_not_unittests_own(unittest_run, tmp_path: Path, gates_run) -> None:
    # unittest reports on stderr: a whole passing run on stdout is the program's print, and the
    # real run here executed nothing
    ran = unittest_run(RELAYS_A_CHILD_REPORT)
    assert ran.returncode == 0 and "Ran 1 test" in ran.stdout and "Ran 0 tests" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.executed, counts.skipped) == (0, 0, 1), counts
    item = _project_run(tmp_path / "g", gates_run, RELAYS_A_CHILD_REPORT)
    assert item["verdict"] == "NO_DECISION", item


def test_each_fail_and_error_is_named_with_its_exception_line_at_its_innermost_frame(unittest_run) -> None:
    ran = unittest_run("""
        import unittest

        def add(a, b):
            return a - b

        class Toy(unittest.TestCase):
            def test_add(self):
                self.assertEqual(add(2, 3), 5, "add(2, 3) should be 5")
            def test_boom(self):
                raise RuntimeError("boom")
        """)
    failures = get("unittest").parse(ran.stdout, ran.stderr).failures
    assert {(f.id, f.message, Path(f.file or "").name, f.line) for f in failures} == {
        ("test_mod.Toy.test_add", "AssertionError: -1 != 5 : add(2, 3) should be 5", "test_mod.py", 9),
        ("test_mod.Toy.test_boom", "RuntimeError: boom", "test_mod.py", 11)}


LOGGED = """
    gate: ut
    driver:
      type: command
      run: "{python} -m unittest -v test_a 2>&1 | tee a.log; {python} -m unittest -v test_b"
      format: unittest
      cwd: suite
"""


def test_a_failing_run_reported_on_stdout_beside_a_passing_one_on_stderr_is_never_green(
        tmp_path: Path, gates_run, run_program) -> None:
    # one suite's report logged through `2>&1 | tee` (on stdout), the next one's on stderr: the
    # shell's status is the last suite's, and the first one's failure must not vanish with stdout
    suite = tmp_path / "proj" / "suite"
    suite.mkdir(parents=True)
    (suite / "test_a.py").write_text("import unittest\n\nclass A(unittest.TestCase):\n"
                                     "    def test_a(self):\n        self.assertEqual(1, 2)\n")
    (suite / "test_b.py").write_text("import unittest\n\nclass B(unittest.TestCase):\n"
                                     "    def test_b(self):\n        self.assertEqual(1, 1)\n")
    ran = run_program(["sh", "-c", f"{sys.executable} -m unittest -v test_a 2>&1 | cat; "
                                   f"{sys.executable} -m unittest -v test_b"], cwd=suite)
    assert ran.returncode == 0 and "FAILED (failures=1)" in ran.stdout and "\nOK" in ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    assert counts.failed >= 1 or counts.doubt is not None, counts
    item = gates_run(tmp_path, LOGGED.format(python=sys.executable))
    assert item["verdict"] != "GREEN", item


PRINTS_A_REPORT = """
    import sys
    import unittest

    class T(unittest.TestCase):
        def test_a(self):
            # a test runner under test writes a child's report where unittest writes its own
            sys.stderr.write("\\nRan 1 test in 0.000s\\n\\nOK\\n")
            self.assertTrue(True)
        def test_b(self):
            pass
"""


def test_a_report_a_test_printed_mid_run_on_stderr_fails_no_test_of_a_run_unittest_says_ok(unittest_run) -> None:
    ran = unittest_run(PRINTS_A_REPORT)
    assert ran.returncode == 0 and ran.stderr.rstrip().endswith("OK"), ran.stderr
    counts = get("unittest").parse(ran.stdout, ran.stderr)
    # unittest ended OK (exit 0): no test failed, whatever a test wrote where the report goes
    assert counts.failed == 0 and counts.doubt is not None, counts
