"""TAP 12/13/14 (raw, or echoed by `prove -v`): plans `1..N`, `ok` / `not ok` lines with
`# SKIP` and `# TODO` directives, and `Bail out!`.

How lines count: `ok` passed, `not ok` failed; `ok # SKIP` is skipped; `not ok # TODO`
is skipped (a known failure proves nothing about the claim) and `ok # TODO` passed. A
directive is read as TAP's own harness reads it (`directive`): `not ok # SKIP` stays failed,
and `# TODOs` or `#skipped` in a description is no directive.
Only top-level lines count: indented lines are TAP 14 subtests and YAML diagnostics,
summarised by their parent line.

An incomplete stream must not look complete. The decision: a plan larger than the tests
seen (a crash mid-run, or `Bail out!`) counts every missing test as failed, and tests
beyond the plan are failed too (a bad plan); a `Bail out!` counts at least one failure.
A stream with tests but no plan at all (its trailing plan never came) leaves
`summary_seen` False. `1..0` is a stream that skipped everything: 0 executed.

A bare `ok` after a complete stream is prove's verdict for that file, not a test.
Several streams (prove -v over several files) are told apart by a new `TAP version`
line, a second plan, a test numbered 1 after other tests, or a test after a trailing
plan; they add up.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from redfirst.gates.parsers import Counts, ExitMeaning, Failure, Parser
from redfirst.gates.parsers._common import first, guarded, lines, one_line

_VERSION = re.compile(r"^TAP version \d+$", re.IGNORECASE)
_PLAN = re.compile(r"^1\.\.(\d+)(?:\s*#.*)?$")
_TEST = re.compile(r"^(not )?ok\b\s*(\d+)?\s*(?:-\s*)?(.*)$")
# TAP::Parser's grammar (prove): the first `#` no backslash escapes opens a directive, the word SKIP or TODO
_DIRECTIVE = re.compile(r"^(?:[^\\#]|\\.)*#\s*(SKIP|TODO)\b", re.IGNORECASE)
# on a passing line, anything that may say skip (`# skipped: no GPU`) is one: never a pass it may not be
_SKIP_LIKE = re.compile(r"(?<!\\)#\s*SKIP", re.IGNORECASE)
_BAIL = re.compile(r"^Bail out!")


@dataclass
class _Stream:
    plan: int | None = None
    plan_at_end: bool = False
    seen: int = 0
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    bailed: bool = False

    def closed(self) -> bool:
        return self.plan_at_end or self.bailed


def directive(ok: bool, description: str) -> str:
    """How a test line counts: "failed", "passed" or "skipped", as TAP's own harness (TAP::Parser,
    `prove`) reads its directive. A caller may rely on: a `not ok` line is "failed" unless the first
    `#` of its description that no backslash escapes opens the word TODO (`# TODOs`, `#skipped`
    and `not ok ... # SKIP` stay failed), and an `ok` line is never "failed" and is "skipped"
    wherever a `# skip` may be read in it (the safe side: a skip is no pass)."""
    if ok:
        return "skipped" if _SKIP_LIKE.search(description) else "passed"
    found = _DIRECTIVE.match(description)
    return "skipped" if found and found.group(1).upper() == "TODO" else "failed"


def _count(stream: _Stream, ok: bool, description: str) -> bool:
    """Count one test line; True when it failed."""
    stream.seen += 1
    kind = directive(ok, description)
    setattr(stream, kind, getattr(stream, kind) + 1)
    return kind == "failed"


def _parse(stdout: str, stderr: str) -> Counts:
    streams: list[_Stream] = []
    names: list[str] = []

    def fresh() -> _Stream:
        streams.append(_Stream())
        return streams[-1]

    stream: _Stream | None = None
    for line in lines(stdout, stderr):
        if _VERSION.match(line):
            if stream is None or stream.seen or stream.plan is not None or stream.bailed:
                stream = fresh()
        elif m := _PLAN.match(line):
            if stream is None or stream.plan is not None or stream.closed():
                stream = fresh()
            stream.plan = int(m.group(1))
            stream.plan_at_end = stream.seen > 0
        elif line == "ok" and stream is not None and stream.plan is not None and stream.seen >= stream.plan:
            continue  # prove's verdict for a file whose stream is complete, no test line
        elif m := _TEST.match(line):
            number = int(m.group(2)) if m.group(2) else None
            if stream is None or stream.closed() or (number == 1 and stream.seen > 0):
                stream = fresh()
            if _count(stream, ok=m.group(1) is None, description=m.group(3)):
                names.append(m.group(3) or f"test {number or stream.seen}")
        elif _BAIL.match(line):
            if stream is None:
                stream = fresh()
            stream.bailed = True

    passed = failed = skipped = 0
    notes: list[str] = []
    complete = bool(streams)
    for s in streams:
        bad = s.failed
        if s.plan is None and not s.bailed:
            complete = False
            notes.append(f"{s.seen} tests and no plan: the stream ended before its plan")
        if s.plan is not None and s.seen != s.plan:
            notes.append(f"plan 1..{s.plan} but {s.seen} tests: the {abs(s.plan - s.seen)} missing or extra counted as failed")
            bad += abs(s.plan - s.seen)
        if s.bailed:
            notes.append("Bail out!")
            bad = max(bad, s.failed + 1)
        passed, failed, skipped = passed + s.passed, failed + bad, skipped + s.skipped
    if names:
        notes.extend(first(names))
    return Counts(passed=passed, failed=failed, skipped=skipped, summary_seen=complete, notes=tuple(notes))


_BAIL_OUT = re.compile(r"^\s*Bail out!")


def skipped_but_failed(stdout: str, stderr: str) -> list[str]:
    """Top-level `not ok` lines that may say skip (`# SKIP`, `#skipped`): failed for TAP's harness
    (so never GREEN), but maybe a test that declared a skip, no check that failed (kselftest
    printed `not ok N # SKIP` for skipped tests): never evidence of a kill or a proof."""
    return [line for line in lines(stdout, stderr) if (m := _TEST.match(line)) and m.group(1)
            and _SKIP_LIKE.search(m.group(3))]


def failed_tests(stdout: str, stderr: str) -> list[str]:
    """The `not ok` lines the count takes for failed tests: top-level ones (an indented line is a
    subtest or YAML diagnostics its parent line summarises) without a TODO or SKIP directive
    (`directive`; a `not ok ... # SKIP` fails the count but is no failed check). A
    caller may rely on: each line returned is one `parse` counted failed."""
    skipped = set(skipped_but_failed(stdout, stderr))
    return [line for line in lines(stdout, stderr) if (m := _TEST.match(line))
            and directive(m.group(1) is None, m.group(3)) == "failed" and line not in skipped]


def _not_an_assertion(stdout: str, stderr: str) -> str | None:
    # A bail-out aborts the run: what failed before it (a set-up, a missing helper) is not a check.
    bailed = next((line.strip() for line in lines(stdout, stderr) if _BAIL_OUT.match(line)), None)
    if bailed:
        return f"no assertion failed: the run bailed out ({bailed})"
    return None if failed_tests(stdout, stderr) else "no assertion failed: no `not ok` line"


_AT = re.compile(r"\bat (?P<file>\S+) line (?P<line>\d+)\.?$")              # Test::More's `#   at t/a.t line 5.`
_YAML = re.compile(r"^\s+(?P<key>message|file|line):\s*(?P<value>.*?)\s*$")   # TAP 13 diagnostics


def _failures(text_lines: list[str]) -> list[Failure]:
    """Each top-level `not ok` line that is no TODO/SKIP (`not ok 2 - adds`, its id `2 - adds`), with
    the diagnostics under it: a TAP 13 YAML block's `message`/`file`/`line`, or `#` comment lines
    (Test::More's `#   Failed test ... at t/a.t line 5.` gives the place); a `Bail out!` too."""
    out = []
    for i, line in enumerate(text_lines):
        if _BAIL.match(line):
            out.append(Failure("Bail out!", one_line(line[len("Bail out!"):]) or "Bail out!"))
        m = _TEST.match(line)
        if not m or directive(m.group(1) is None, m.group(3)) != "failed":
            continue
        said: list[str] = []
        place: tuple[str | None, int | None] = (None, None)
        yaml: dict[str, str] = {}
        for body in text_lines[i + 1:i + 30]:
            if _TEST.match(body) or _PLAN.match(body) or _BAIL.match(body) or not body.strip():
                break
            if y := _YAML.match(body):
                yaml[y.group("key")] = y.group("value").strip("'\"")
            elif body.startswith("#") and (a := _AT.search(body)):
                place = (a.group("file").strip("'\""), int(a.group("line")))
            elif body.startswith("#") and not body.lstrip("# ").startswith("Failed test"):
                said.append(body.lstrip("# "))
        if yaml.get("line", "").isdigit():
            place = (yaml.get("file") or None, int(yaml["line"]))
        case_id = " - ".join(filter(None, (m.group(2), m.group(3).strip()))) or "not ok"
        out.append(Failure(case_id, one_line(yaml.get("message") or " ".join(said)) or "not ok", *place))
    return out


class TapParser(Parser):
    name = "tap"
    reports_assertions = False
    exit_meanings: Mapping[int, ExitMeaning] = {}

    def not_an_assertion(self, stdout: str, stderr: str, junit_xml: str | None = None) -> str | None:
        return _not_an_assertion(stdout, stderr)

    def parse(self, stdout: str, stderr: str, junit_xml: str | None = None) -> Counts:
        return guarded(_parse, stdout, stderr, _failures)


PARSER: Parser = TapParser()
