"""A gate that sets no timeout gets one derived from its baseline run under a mutation,
(baseline seconds + 1) x 15 as mutmut does, and says so: an infinite-loop mutant ends there,
KILLED by timeout (DESIGN section 3: a timeout is a kill cause), not after the 600 s default."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

from redfirst.mutations.timeouts import Derived, derived, derived_timeout

# The mutant `n -= 0` loops for ever; each turn sleeps, so the run waits out its timeout without
# taking a core from the tests beside it (a busy loop burnt 15-26 CPU seconds a test).
SPIN = "import time\n\n\ndef spin(n):\n    while n > 0:\n        n -= 1\n        time.sleep(0.001)\n    return n\n"
TEST_SPIN = "from spin import spin\n\n\ndef test_spin():\n    assert spin(3) == 0\n"


def _project(repo: Path, timeout: str) -> None:
    write(repo, "spin.py", SPIN)
    write(repo, "tests/test_spin.py", TEST_SPIN)
    # A command gate: a baseline of a fraction of a second keeps the derived timeout short.
    write(repo, "gates/spin.yaml", 'gate: spin\nexit_only: "a plain assert: exit 1 is the red"\ndriver:\n'
          f'  type: command\n  run: [python3, -c, "from spin import spin; assert spin(3) == 0"]\n{timeout}')
    write(repo, "mutations/spin.yaml", 'mutation: spin-forever\nfile: spin.py\nanchor: "n -= 1"\n'
          'replace: "n -= 0"\nexpect: {red: [spin]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spin")


def test_the_derived_timeout_is_mutmuts():
    assert derived_timeout(0.0) == 15.0
    assert derived_timeout(2.0) == 45.0


def test_an_infinite_loop_mutant_ends_at_the_derived_timeout_killed_by_timeout(repo: Path):
    _project(repo, "")
    proc = mutate(repo, "spin-forever", "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert item["verdict"] == "KILLED" and item["cause"] == "timeout"
    gate = item["gates"][0]
    assert gate["verdict"] == "RED" and gate["cause"] == "timeout"
    derived = re.search(r"timeout derived from the baseline: \(([\d.]+) s \+ 1\) x 15 = ([\d.]+) s", item["reason"])
    assert derived, item["reason"]
    baseline, limit = float(derived.group(1)), float(derived.group(2))
    # the reason prints the baseline to 0.01 s (x 15: up to 0.075 s) and the limit rounded: 0.2 s apart at most
    assert limit == pytest.approx(derived_timeout(baseline), abs=0.2) and limit < 600
    killed_at = float(re.search(r"timed out after ([\d.]+)s", gate["reason"]).group(1))
    # the limit the gate ran under, not 600 (both figures are printed rounded to 0.1 s)
    assert killed_at == pytest.approx(limit, abs=0.5)


def test_a_gate_that_sets_its_timeout_keeps_it(repo: Path):
    _project(repo, "  timeout: 2\n")
    proc = mutate(repo, "spin-forever", "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    assert "derived" not in item["reason"]
    assert "timed out after 2s" in item["gates"][0]["reason"]


def test_the_derived_timeout_multiplies_the_tests_seconds_as_mutmut_does_not_the_programs(tmp_path: Path):
    # mutmut derives from the tests' own durations; a warm pytest run's 0.3 s of start-up, or an
    # import that takes a second, is not what an infinite loop would repeat (3 s more per hung mutant).
    from redfirst.gates.record import JUNIT, RECORD_FILE

    record = tmp_path / "evidence" / "abc"
    record.mkdir(parents=True)
    (record / RECORD_FILE).write_text(json.dumps({"main": {"exited": {"duration_s": 1.5}}, "enumerate": None}))
    assert derived(tmp_path, "abc") == Derived(1.5, 0.0)            # no JUnit: the program's seconds
    (record / JUNIT).write_text('<testsuites><testsuite><testcase name="a" time="0.125"/>'
                                '<testcase name="b" time="0.25"/></testsuite></testsuites>')
    assert derived(tmp_path, "abc") == Derived(0.375, 1.125)
    (record / JUNIT).write_text("<testsuites><testsuite/></testsuites>")       # no case timed: the program's
    assert derived(tmp_path, "abc") == Derived(1.5, 0.0)
    assert derived(tmp_path, None) is None and derived(tmp_path, "missing") is None

def _record(tmp_path: Path, program_s: float, cases: str | None) -> None:
    from redfirst.gates.record import JUNIT, RECORD_FILE

    record = tmp_path / "evidence" / "abc"
    record.mkdir(parents=True, exist_ok=True)
    (record / RECORD_FILE).write_text(json.dumps({"main": {"exited": {"duration_s": program_s}}, "enumerate": None}))
    if cases is not None:
        (record / JUNIT).write_text(f"<testsuites><testsuite>{cases}</testsuite></testsuites>")


def test_the_derived_timeout_leaves_room_for_the_run_outside_its_tests(tmp_path: Path):
    # A test module that takes 17 s to import (torch on a loaded box) and a test of 0.01 s: the
    # limit applies to the whole run, so a limit of (0.01 + 1) x 15 = 15 s killed every mutation
    # of it by timeout (false KILLED). The start-up is added (twice: load slows it too), not
    # multiplied: a loop repeats the tests, not the import.
    _record(tmp_path, 17.0, '<testcase name="a" time="0.01"/>')
    found = derived(tmp_path, "abc")
    assert found is not None
    assert found.limit > 2 * 17.0
    assert found.limit == pytest.approx(derived_timeout(0.01) + 2 * (17.0 - 0.01), abs=0.1)
    assert "(0.01 s + 1) x 15 + 2 x 16.99 s outside the tests" in found.describe()


def test_a_run_that_wrote_no_junit_derives_from_its_program_alone(tmp_path: Path):
    _record(tmp_path, 1.5, None)
    found = derived(tmp_path, "abc")
    assert found is not None and found.limit == derived_timeout(1.5)
    assert found.describe() == "(1.50 s + 1) x 15 = 37.5 s"


def test_tests_timed_longer_than_the_program_count_as_the_program(tmp_path: Path):
    # JUnit times that exceed the program's own measure (clock skew, a hand-edited file) never
    # shrink the limit below (program + 1) x 15.
    _record(tmp_path, 1.0, '<testcase name="a" time="5.0"/>')
    found = derived(tmp_path, "abc")
    assert found is not None and found.limit >= derived_timeout(1.0)


def test_a_warm_gates_derived_timeout_holds_a_cold_start(repo: Path):
    # helper-14 finding 4: a pytest-warm gate's baseline runs in a fork that paid no import; a
    # mutation the warm process cannot patch in runs a fresh pytest that pays them all again (25 s
    # of `import torch`), which a limit of (0 + 1) x 15 killed: a false KILLED (timeout). The limit
    # adds the warm process's warm-up, what a cold start pays at most. Here the warm-up sleeps 1 s.
    write(repo, "spin.py", SPIN)
    write(repo, "tests/conftest.py", "import time\n\ntime.sleep(1.0)\n")
    write(repo, "tests/test_spin.py", TEST_SPIN)
    write(repo, "gates/spin.yaml", "gate: spin\ndriver:\n  type: pytest-warm\n  run: [tests/test_spin.py]\n")
    write(repo, "mutations/spin.yaml", 'mutation: spin-forever\nfile: spin.py\nanchor: "n -= 1"\n'
          'replace: "n -= 0"\nexpect: {red: [spin]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spin, warm")
    proc = mutate(repo, "spin-forever", "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED" and item["cause"] == "timeout", proc.stderr
    found = re.search(r"\(([\d.]+) s \+ 1\) x 15 \+ 2 x \(([\d.]+) s outside the tests \+ ([\d.]+) s of a cold "
                      r"start\) = ([\d.]+) s", item["reason"])
    assert found, item["reason"]
    tests, rest, cold, limit = map(float, found.groups())
    assert cold >= 1.0
    assert limit == pytest.approx(derived_timeout(tests) + 2 * (rest + cold), abs=0.2)
