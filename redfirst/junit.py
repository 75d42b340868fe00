"""The JUnit XML every command writes (`gates run --junit`, `mutate --junit`, `mutate merge --junit`):
one root shape, whatever the command and however the run ended."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from pathlib import Path

# Terminal colour and cursor sequences (pytest --color=yes, GoogleTest's colours), and every
# character XML 1.0 forbids (control bytes, lone surrogates, U+FFFE/U+FFFF).
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)")
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(value: str) -> str:
    """`value` as XML 1.0 can hold it: colour sequences removed, any other forbidden character
    written as `\\xNN`."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", _ANSI.sub("", value))


def stopped_cases(suite: ET.Element, classname: str, problems: Iterable[str], verdict: str) -> int:
    """One `<error>` test case per problem that stopped or undid the run (a bad file, a missing
    shard), named `(run) N`: a CI reading only the file never sees such a run as passing. Returns
    how many were added."""
    added = 0
    for added, problem in enumerate(problems, 1):
        case = ET.SubElement(suite, "testcase", classname=classname, name=f"(run) {added}", time="0.000")
        ET.SubElement(case, "error", type=verdict, message=problem).text = problem
    return added


def write(path: Path, suite: ET.Element) -> None:
    """Write `suite` as the one `<testsuite>` under a `<testsuites>` root that carries its `tests`,
    `failures` and `errors` totals. A caller may rely on: every command's report has this root and
    these totals, a run that stopped before it decided anything included (its problems as error
    cases: `stopped_cases`), the file is replaced, never left from an earlier run, and it is
    well-formed XML whatever bytes a program printed (`xml_text` on every text and attribute)."""
    for element in suite.iter():
        element.text = xml_text(element.text) if element.text else element.text
        element.tail = xml_text(element.tail) if element.tail else element.tail
        for key, value in list(element.attrib.items()):
            element.set(key, xml_text(value))
    for key in ("tests", "failures", "errors"):
        suite.set(key, str(sum(1 for case in suite.iter("testcase") if key == "tests" or
                               case.find({"failures": "failure", "errors": "error"}[key]) is not None)))
    top = ET.Element("testsuites", name=suite.get("name", "redfirst"))
    for key in ("tests", "failures", "errors"):
        top.set(key, suite.get(key, "0"))
    top.append(suite)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(top).write(path, encoding="utf-8", xml_declaration=True)
