"""JUnit XML (the `junit_xml` report): pytest's `--junitxml`, GoogleTest, Catch2, doctest, CTest
`--output-junit` and the generic testsuites/testsuite/testcase shape.

Counted from the `testcase` elements, never from the `tests=`/`failures=` attributes of a
suite (rule 4: an aggregate is not evidence). A case with a `failure` or `error` child is
failed; one with a `skipped` child (pytest's xfail among them), or whose `status` or
`result` says it did not run (`notrun`, `disabled`, `suppressed`, `skipped`: CTest and
GoogleTest write disabled cases that way, with no child), is skipped; any other case
passed, if it says it ran: a case with no `time`, `status` or `result` was only listed
(`listed_only`: GoogleTest's `--gtest_list_tests` report) and is skipped. A case stamped with
the epoch as its start (`timestamp="1970-01-01T00:00:00..."`) never started: GoogleTest writes the tests a `GTEST_SKIP()` in a global environment kept
from running as `status="run" result="completed"` with its zero start time, a skip that
reads as a pass; such a case is skipped. A suite whose own `tests=` is below the cases it lists
as run listed them without running them (pytest's --setup-plan): the counts carry a doubt. Output that is not well-formed XML with a testsuites or testsuite root leaves
`summary_seen` False. stdout and stderr are not read.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Mapping

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import bounded, first, one_line, place_in

_ROOTS = {"testsuites", "testsuite"}
_FAILED_CHILDREN = {"failure", "error"}
_NOT_RUN = {"notrun", "disabled", "suppressed", "skipped"}
_NEVER_STARTED = "1970-01-01T00:00:00"


def _local(tag: object) -> str:
    # `{namespace}name` -> `name`; comments and processing instructions have no str tag
    return tag.rsplit("}", 1)[-1] if isinstance(tag, str) else ""


def _parse(junit_xml: str | None) -> Counts:
    if not junit_xml or not junit_xml.strip():
        return Counts(summary_seen=False, notes=("no JUnit XML report",))
    try:
        root = ET.fromstring(junit_xml)
    except ET.ParseError as exc:
        return Counts(summary_seen=False, notes=(f"JUnit XML is not well-formed: {exc}",))
    if _local(root.tag) not in _ROOTS:
        return Counts(summary_seen=False, notes=(f"root element <{_local(root.tag)}> is not testsuites/testsuite",))
    passed = failed = skipped = never_started = listed = 0
    names: list[str] = []
    failures: list[Failure] = []
    ran: set[int] = set()       # the cases read as having run (passed or failed), by id
    for case in root.iter():
        if _local(case.tag) != "testcase":
            continue
        children = {_local(child.tag) for child in case}
        said = {str(case.get("status", "")).lower(), str(case.get("result", "")).lower()}
        if children & _FAILED_CHILDREN:
            failed += 1
            ran.add(id(case))
            names.append(".".join(filter(None, (case.get("classname"), case.get("name")))) or "?")
            failures.append(failure_of(case))
        elif "skipped" in children or said & _NOT_RUN:
            skipped += 1
        elif str(case.get("timestamp", "")).startswith(_NEVER_STARTED):
            skipped += 1
            never_started += 1
        elif listed_only(case):
            skipped += 1
            listed += 1
        else:
            passed += 1
            ran.add(id(case))
    notes = first(names)
    if never_started:
        notes = (f"{never_started} cases stamped {_NEVER_STARTED} never started: counted skipped", *notes)
    if listed:
        notes = (f"{listed} cases listed with no time, status or result never ran: counted skipped", *notes)
    return Counts(passed=passed, failed=failed, skipped=skipped, summary_seen=True, notes=notes,
                  doubt=_listed_not_run(root, ran), failures=bounded(failures))


_PYTEST_E = re.compile(r"^E +(\S.*)$", re.M)


def failure_of(case: ET.Element) -> Failure:
    """A failed `testcase`'s id, first failure line and place. pytest's (classname `tests.test_x`
    or `tests.test_x.TestC`, a traceback whose `E   ` lines hold the exception) gets its node id
    `tests/test_x.py::TestC::test_a` and the message of its first `E` line; any other producer
    gets `classname.name` and its `<failure>`/`<error>` message on one line (the text where the
    message is empty), with the last `file:line` either names."""
    child = next(c for c in case if _local(c.tag) in _FAILED_CHILDREN)
    said, text = str(child.get("message") or ""), child.text or ""
    classname, name = str(case.get("classname") or ""), str(case.get("name") or "")
    module_file = _module_file(classname, name, case.get("file"), text)
    file, line = place_in(f"{said}\n{text}", module_file)
    pytest_e = _PYTEST_E.search(text)
    if pytest_e:
        message = one_line(pytest_e.group(1))
    else:
        body = [ln for ln in said.splitlines() if place_in(ln)[0] is None or len(ln.split()) > 1] if said else []
        message = one_line(" ".join(body) or said or text) or _local(child.tag)
    if module_file:
        cls = classname.replace("/", ".")
        stem = module_file[:-3].replace("/", ".")
        inner = cls[len(stem):].strip(".") if cls.startswith(stem) else ""
        case_id = "::".join(filter(None, (module_file, *inner.split("."),
                                          name if name != stem else "")))
    else:
        case_id = ".".join(filter(None, (classname, name))) or "?"
    return Failure(case_id, message, file, line)


def _module_file(classname: str, name: str, file: str | None, text: str) -> str | None:
    """The test module's path as pytest prints it (`tests/test_x.py`), when `classname` (or, for a
    module that failed to import, `name`) names a `.py` file the case's text or `file=` shows."""
    if file and file.endswith(".py"):
        return file
    for dotted in (classname, name):
        parts = dotted.split(".")
        for end in range(len(parts), 0, -1):
            candidate = "/".join(parts[:end]) + ".py"
            if re.search(rf"(?:^|[\s/]){re.escape(candidate)}:\d+", text, re.M):
                return candidate
    return None


def listed_only(case: ET.Element) -> bool:
    """Whether a passed-looking `testcase` element says nothing of a run: no `time`, `status` or
    `result` attribute. Every producer writes one of them for a case it ran (pytest, CTest, Catch2
    and GoogleTest `time`, doctest `status="run"`); GoogleTest's `--gtest_list_tests` report lists
    each case with none. A caller may rely on: a case this says True of is never counted as run."""
    return not any(case.get(key) is not None for key in ("time", "status", "result"))


def _listed_not_run(root: ET.Element, ran: set[int]) -> str | None:
    """A suite that says it ran fewer tests (`tests=`) than it lists as run: the cases were listed
    without running (pytest's --setup-plan and --setup-only write every case, run none, and say
    tests="0"). Its own count is no evidence of a pass, but it contradicts one."""
    for suite in root.iter():
        if _local(suite.tag) not in _ROOTS:
            continue
        try:
            said = int(str(suite.get("tests", "")))
        except ValueError:
            continue
        listed = sum(1 for case in suite.iter() if id(case) in ran)
        if listed > said:
            return (f"<{_local(suite.tag)} name=\"{suite.get('name', '')}\"> says tests=\"{said}\" but lists "
                    f"{listed} cases as run: cases listed without running (pytest --setup-plan, --setup-only), "
                    "or cases that checked nothing (Catch2 v2 counts assertions in tests=)")
    return None


def case_seconds(junit_xml: str | None) -> float | None:
    """The seconds the report's test cases took (their `time`), or None: no report, or no case
    with a time."""
    if not junit_xml or not junit_xml.strip():
        return None
    try:
        root = ET.fromstring(junit_xml)
    except ET.ParseError:
        return None
    times = []
    for case in root.iter():
        if _local(case.tag) == "testcase":
            try:
                times.append(max(0.0, float(case.get("time", ""))))
            except ValueError:
                continue
    return sum(times) if times else None


class JunitParser(Parser):
    name = "junit"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def not_an_assertion(self, stdout: str, stderr: str, junit_xml: str | None = None) -> str | None:
        # <failure> is a failed check; <error> an exception, <skipped> nothing
        if re.search(r"<failure\b", junit_xml or stdout):
            return None
        return "no assertion failed: its JUnit report holds errors but no <failure>"

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        try:
            return _parse(junit_xml)
        except Exception as exc:  # never raise: unreadable evidence is no summary, never a pass
            return Counts(summary_seen=False, notes=(f"JUnit XML could not be read: {type(exc).__name__}",))


PARSER: Parser = JunitParser()
