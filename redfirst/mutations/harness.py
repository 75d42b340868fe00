"""A kill is a test failing as it ran (`not_a_kill`, the one rule): a red that only the harness
made (a fixture or `setUp` that raised, a TAP program that bailed out or died before any test
failed) is never a kill, as a module that no longer imports is not (outcome.collection_broken).
A test whose call raised (an assertion, or any exception of the code under test, as mutmut
counts it), a crash by signal or a timeout of the run are kills."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from pathlib import Path

from redfirst.gates.parsers.pytest import failed_and_errors, report
from redfirst.gates.parsers.tap import failed_tests, skipped_but_failed
from redfirst.gates.record import JUNIT, STDERR, STDOUT
from redfirst.mutations.outcome import GateSeen
from redfirst.verdict import Cause, Verdict

# The functions of the harness around a test: what raises there is no test failing as it ran.
SET_UP = frozenset({"setUp", "tearDown", "setUpClass", "tearDownClass", "setUpModule", "tearDownModule",
                    "asyncSetUp", "asyncTearDown", "setup_method", "teardown_method", "setup_function",
                    "teardown_function", "setup_class", "teardown_class", "setup_module", "teardown_module",
                    "setup", "teardown"})
_TAP_BAIL_OUT = re.compile(r"^\s*Bail out!.*$", re.MULTILINE)
# pytest's short test summary: FAILED for a test's call, ERROR for its set-up, teardown or collection.
_SUMMARY_FAILED = re.compile(r"^FAILED \S+", re.MULTILINE)
_SUMMARY_ERRORED = re.compile(r"^ERROR (\S+)", re.MULTILINE)
_SHORT_SUMMARY = re.compile(r"^=+ short test summary info =+$", re.MULTILINE)
# The first frame of a traceback: pytest's `--tb=short`/`long` (`path:12: in setUp`) or Python's own.
_PYTEST_FRAME = re.compile(r"^\S+:\d+: in (\w+)$", re.MULTILINE)
_PYTHON_FRAME = re.compile(r'^\s*File "[^"]+", line \d+, in (\w+)$', re.MULTILINE)
_PYTHON_FRAME_AT = re.compile(r'^\s*File "([^"]+)", line \d+, in (\w+)$', re.MULTILINE)
_LONG_DEF = re.compile(r"^ {4}(?:async )?def (\w+)\(", re.MULTILINE)
_RUNNERS = re.compile(r"[/\\](?:unittest|_pytest|pluggy)[/\\]")
# pytest's FAILURES part, each failure's section in it, the captured output that ends one
_FAILURES = re.compile(r"^=+ FAILURES =+$", re.MULTILINE)
_NEXT_PART = re.compile(r"^=+ .* =+$", re.MULTILINE)
_SECTION = re.compile(r"^_{2,} .+ _{2,}$", re.MULTILINE)
_CAPTURED = re.compile(r"^-+ Captured .* -+$", re.MULTILINE)
_UNITTEST_RAN = re.compile(r"^Ran \d+ tests? in [\d.]+s$", re.MULTILINE)
_UNITTEST_BLOCK = re.compile(r"^(ERROR|FAIL): (\S+)", re.MULTILINE)
_UNITTEST_RESULT = re.compile(r"^FAILED \((.*)\)$", re.MULTILINE)


def not_a_kill(seen: GateSeen, fmt: str, pytest_runner: bool, record: Path | None) -> str | None:
    """Why a RED gate's run shows no test failing as it ran, or None (a kill as far as this rule
    goes). A caller may rely on: None is never returned for a red whose only failures are set-up
    or teardown errors (pytest's JUnit or short summary, unittest's report, a unittest TestCase
    under pytest), a TAP bail-out, or a TAP program that exited with no top-level `not ok` line (`tap.failed_tests`)."""
    if seen.verdict is not Verdict.RED or record is None:
        return None
    said = "\n".join((record / name).read_text(errors="replace") for name in (STDOUT, STDERR)
                     if (record / name).is_file())
    if fmt == "tap":
        return _tap(seen, said)
    if fmt == "unittest":
        # unittest reports on stderr: where stderr holds a whole run, stdout is what tests printed
        err = (record / STDERR).read_text(errors="replace") if (record / STDERR).is_file() else ""
        return _unittest(seen, err if _UNITTEST_RAN.search(err) else said)
    junit = record / JUNIT
    if pytest_runner and junit.is_file():
        return _junit(seen, junit)
    if fmt == "pytest":
        return _pytest_terminal(seen, record)
    return None


def _pytest_terminal(seen: GateSeen, record: Path) -> str | None:
    """pytest's terminal output: its own summary line (`1 error in 0.1s`: no test failed in its
    call), whatever short summary (`-rN`: none) or captured output (a test printing `FAILED x`)
    came before it; without one, the FAILED/ERROR lines of its last short test summary."""
    out, err = ((record / name).read_text(errors="replace") if (record / name).is_file() else ""
                for name in (STDOUT, STDERR))
    counted = failed_and_errors(out, err)
    if counted is not None:
        failed, errors = counted
        if errors and not failed:
            return f"{seen.gate_id}: pytest counted {errors} set-up, teardown or collection error(s) and no failed test"
        frames = _failure_frames(report(out, err))
        if failed and len(frames) == failed and all(frame in SET_UP for frame in frames):
            # a unittest TestCase's setUp/tearDown runs in pytest's call phase: counted failed
            return f"{seen.gate_id}: pytest's {failed} failed test(s) all raised in set-up or teardown ({frames[0]})"
        return None
    summary = _SHORT_SUMMARY.split(report(out, err))[-1]
    errored = _SUMMARY_ERRORED.findall(summary)
    if errored and not _SUMMARY_FAILED.search(summary):
        return (f"{seen.gate_id}: pytest reported set-up, teardown or collection errors only "
                f"({len(errored)}; first {errored[0]})")
    return None


def _failure_frames(said: str) -> list[str]:
    """The function each failure of pytest's last FAILURES section raised in first (its first
    traceback entry as `--tb=short`, `long`/`auto` or `native` print it; a section that shows none,
    `--tb=line` or `no`, is left out, so the caller's count no longer matches)."""
    failures = _FAILURES.split(said)
    if len(failures) < 2:
        return []
    part = _NEXT_PART.split(failures[-1])[0]
    frames = []
    for section in _SECTION.split(part)[1:]:
        section = _CAPTURED.split(section)[0]
        found = [(m.start(), m.group(1)) for pattern in (_PYTEST_FRAME, _LONG_DEF) for m in pattern.finditer(section)]
        found += [(m.start(), m.group(2)) for m in _PYTHON_FRAME_AT.finditer(section)
                  if not _RUNNERS.search(m.group(1))]
        if found:
            frames.append(min(found)[1])
    return frames


def _tap(seen: GateSeen, said: str) -> str | None:
    bailed = _TAP_BAIL_OUT.search(said)
    if bailed:
        return f"{seen.gate_id}: the TAP run bailed out ({bailed.group(0).strip()[:160]})"
    if seen.cause is Cause.EXIT and not failed_tests(said, ""):
        return f"{seen.gate_id}: the TAP program exited {seen.counts.get('exit')} with no `not ok` line (it died, no test failed)"
    skipped = skipped_but_failed(said, "")
    if skipped and not failed_tests(said, ""):
        return f"{seen.gate_id}: its only failed TAP lines are skips ({skipped[0].strip()[:160]}): no test failed as it ran"
    return None


def _unittest(seen: GateSeen, said: str) -> str | None:
    """unittest's own report is its last FAIL/ERROR blocks, as many as its last result line counts
    (`FAILED (failures=1, errors=2)`: 3): what a test wrote there before them is not its report."""
    blocks = _UNITTEST_BLOCK.split(said)[1:]
    reports = [(blocks[i], blocks[i + 1], blocks[i + 2]) for i in range(0, len(blocks) - 2, 3)]
    results = _UNITTEST_RESULT.findall(said)
    if results:
        counted = sum(int(n) for n in re.findall(r"\b(?:failures|errors)=(\d+)", results[-1]))
        reports = reports[len(reports) - counted:] if 0 < counted <= len(reports) else reports
    if not reports:
        return None
    for _, name, body in reports:
        frame = _PYTHON_FRAME.search(body)
        if name not in SET_UP and (frame is None or frame.group(1) not in SET_UP):
            return None
    return f"{seen.gate_id}: unittest reported errors in set-up or teardown only (first {reports[0][1]})"


def _junit(seen: GateSeen, junit: Path) -> str | None:
    try:
        cases = list(ET.parse(junit).getroot().iter("testcase"))
    except (ET.ParseError, OSError):
        return None
    failed = [(c.get("name") or "?", e) for c in cases for e in c if e.tag in ("failure", "error")]
    if not failed:
        return None
    for _, element in failed:
        if element.tag == "failure":
            text = element.text or ""
            frame = _PYTEST_FRAME.search(text) or _PYTHON_FRAME.search(text)
            if frame is None or frame.group(1) not in SET_UP:
                return None     # a test's call failed: a kill
    name, element = failed[0]
    message = " ".join((element.get("message") or "?").split())[:160]
    return (f"{seen.gate_id}: only set-up or teardown errors, no test failed as it ran "
            f"({len(failed)}; first {name}: {message})")
