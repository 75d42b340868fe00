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

from redfirst.gates.parsers import Counts, ExitMeaning, Parser
from redfirst.gates.parsers._common import first

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
                  doubt=_listed_not_run(root, ran))


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
