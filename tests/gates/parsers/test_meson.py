"""The meson parser against real `meson test` runs (Debian's meson) of a tiny project built in
tmp, and end to end through `gates run` with a command driver."""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from redfirst.gates.parsers import REGISTRY, get

PROJECT = """
    project('tiny')
    py = find_program('{python}')
    test('passes', py, args: ['-c', 'pass'], suite: 'good')
    test('passes_too', py, args: ['-c', 'pass'], suite: 'good')
    test('fails', py, args: ['-c', 'raise SystemExit(1)'], suite: 'bad')
    test('skips', py, args: ['-c', 'raise SystemExit(77)'], suite: 'bad')
    test('expected_fail', py, args: ['-c', 'raise SystemExit(1)'], should_fail: true, suite: 'bad')
    test('unexpected_pass', py, args: ['-c', 'pass'], should_fail: true, suite: 'bad')
    test('times_out', py, args: ['-c', 'import time; time.sleep(30)'], timeout: 1, suite: 'slow')
    test('skips_alone', py, args: ['-c', 'raise SystemExit(77)'], suite: 'skipped')
"""


@pytest.fixture(scope="module")
def meson_build(tmp_path_factory: pytest.TempPathFactory) -> Path:
    meson = shutil.which("meson")
    if meson is None:
        from tests.gates.parsers.conftest import missing

        missing("`meson` on PATH (apt-get install meson)")
    src = tmp_path_factory.mktemp("meson")
    (src / "meson.build").write_text(textwrap.dedent(PROJECT.format(python=sys.executable)))
    import subprocess

    subprocess.run([str(meson), "setup", str(src / "build")], cwd=src, check=True, capture_output=True)
    return src / "build"


def _meson_test(run_program, build: Path, *args: str):
    return run_program(["meson", "test", "--no-rebuild", *args], cwd=build)


def test_meson_is_one_registry_line() -> None:
    assert REGISTRY["meson"] == "meson"
    assert get("meson").name == "meson" and not get("meson").reports_assertions


def test_every_result_of_a_real_run_counts(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "good", "--suite", "bad", "--suite", "slow")
    assert "EXPECTEDFAIL" in ran.stdout and "UNEXPECTEDPASS" in ran.stdout and "TIMEOUT" in ran.stdout
    assert "Ok:                 2" in ran.stdout and ran.returncode == 3
    counts = get("meson").parse(ran.stdout, ran.stderr)
    # OK passed; FAIL, UNEXPECTEDPASS and TIMEOUT failed; SKIP and EXPECTEDFAIL skipped
    assert (counts.passed, counts.failed, counts.skipped) == (2, 3, 2), counts
    assert counts.summary_seen and counts.doubt is None and counts.per_case == 5
    assert {"fails", "unexpected_pass", "times_out"} <= {n.split(" / ")[-1] for n in counts.notes}


def test_a_passing_selection_is_counted(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "good")
    counts = get("meson").parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and (counts.passed, counts.failed, counts.skipped) == (2, 0, 0)
    assert counts.summary_seen


def test_all_skipped_executes_nothing(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "skipped")
    counts = get("meson").parse(ran.stdout, ran.stderr)
    assert ran.returncode == 0 and counts.executed == 0 and counts.skipped == 1 and counts.summary_seen


def test_a_selection_matching_nothing_says_nothing_ran(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "no_such_test")
    counts = get("meson").parse(ran.stdout, ran.stderr)
    assert "No suitable tests defined." in ran.stdout
    assert counts.nothing_ran and counts.executed == 0


def test_a_run_cut_before_its_summary_has_none(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "good")
    cut = ran.stdout[:ran.stdout.index("Ok:")]
    counts = get("meson").parse(cut, ran.stderr)
    assert counts.passed == 2 and not counts.summary_seen


def test_a_summary_without_result_lines_is_an_aggregate_alone(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "good")
    summary = ran.stdout[ran.stdout.index("Ok:"):]
    counts = get("meson").parse(summary, "")
    assert counts.doubt is not None


GATE = """
    gate: m
    driver: {{type: command, run: [meson, test, --no-rebuild, -C, {build}, {selection}], format: meson}}
"""


@pytest.mark.parametrize(("selection", "verdict"), [("--suite=good", "GREEN"), ("--suite=bad", "RED"),
                                                    ("--suite=skipped", "NO_DECISION")])
def test_gates_run_grades_meson_output(tmp_path: Path, gates_run, meson_build: Path, selection: str,
                                       verdict: str) -> None:
    item = gates_run(tmp_path, GATE.format(build=meson_build, selection=selection))
    assert item["verdict"] == verdict, item
    if verdict == "GREEN":
        assert item["counts"]["passed"] == 2  # type: ignore[index]


REBUILT = """
    project('rebuilt', 'c')
    test('prog', executable('prog', 'prog.c'))
"""


def test_meson_exit_125_is_its_rebuild_failing_a_build_red_never_an_exit_red(tmp_path: Path, gates_run) -> None:
    # `meson test` rebuilds first and exits 125 when that build fails: a compile error, which under
    # a mutation is DISCARDED (or the kill of `build: fails`), never a test's red exit
    src = tmp_path / "src"
    src.mkdir()
    (src / "meson.build").write_text(textwrap.dedent(REBUILT))
    (src / "prog.c").write_text("int main(void) { return 0; }\n")
    import subprocess

    subprocess.run(["meson", "setup", str(src / "build")], cwd=src, check=True, capture_output=True)
    (src / "prog.c").write_text("int main(void) { return 0 }\n")   # a compile error now
    item = gates_run(tmp_path, f"""
        gate: m
        driver: {{type: command, run: [meson, test, -C, {src / 'build'}], format: meson}}
    """)
    assert item["counts"]["exit"] == 125, item  # type: ignore[index]
    assert (item["verdict"], item["cause"]) == ("RED", "build"), item


RELAY = """
    project('relay')
    py = find_program('{python}')
    test('relay', py, args: [meson.current_source_dir() / 'relay.py'])
"""
# a test that relays a child's meson report (a pass) and then skips: nothing of this run passed
RELAY_PY = (
    "print('1/1 child / t1        OK              0.01s\\n\\nOk:                 1\\nExpected Fail:      0\\n"
    "Fail:               0\\nUnexpected Pass:    0\\nSkipped:            0\\nTimeout:            0\\n')\n"
    "raise SystemExit(77)\n"
)


def test_a_tests_own_output_meson_v_shows_between_scissors_is_not_counted(tmp_path: Path, run_program,
                                                                           gates_run) -> None:
    src = tmp_path / "src"
    src.mkdir()
    (src / "meson.build").write_text(textwrap.dedent(RELAY.format(python=sys.executable)))
    (src / "relay.py").write_text(RELAY_PY)
    import subprocess

    subprocess.run(["meson", "setup", str(src / "build")], cwd=src, check=True, capture_output=True)
    ran = _meson_test(run_program, src / "build", "-v")
    assert ran.returncode == 0 and "✀" in ran.stdout and "Ok:                 1" in ran.stdout
    counts = get("meson").parse(ran.stdout, ran.stderr)
    assert (counts.passed, counts.executed, counts.skipped) == (0, 0, 1), counts
    item = gates_run(tmp_path, f"""
        gate: m
        driver: {{type: command, run: [meson, test, --no-rebuild, -v, -C, {src / 'build'}], format: meson}}
    """)
    assert item["verdict"] == "NO_DECISION", item


def test_each_failed_test_is_named_with_its_result(meson_build: Path, run_program) -> None:
    ran = _meson_test(run_program, meson_build, "--suite", "bad")
    failures = get("meson").parse(ran.stdout, ran.stderr).failures
    assert [(f.id.split(" / ")[-1], f.message) for f in failures] == [
        ("fails", "FAIL exit status 1"), ("unexpected_pass", "UNEXPECTEDPASS")]
