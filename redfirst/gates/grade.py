"""Grading: the raw record of a run -> its verdict, in the order of DESIGN section 1.

    (0) a requirement the run could not meet      NO_DECISION, cause environment
    (1) build failed                              RED, cause build (could not start: ERROR)
    (2) signal or timeout                         RED
    (3) exit status other than declared           RED (runner's "nothing ran": NO_DECISION,
                                                  its usage codes and "not found": ERROR)
    (4) count floors                              0 executed: NO_DECISION; under floor: RED
    (5) counters and comparisons                  missing: NO_DECISION; failing: RED

The first step that is not GREEN decides. `grade` is a pure function of the record
folder, so `gates run` and `gates regrade` cannot disagree.
"""

from __future__ import annotations

import math
import signal as _signal
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from redfirst.gates import drivers, expr, observations, parsers, values
from redfirst.gates.model import Bound, Gate, TensorCheck
from redfirst.gates.parsers import Counts, Failure, Parser
from redfirst.gates.parsers._common import tail as _tail
from redfirst.gates.record import BUILD_OUT, ENUM_OUT, EVIDENCE, INPUTS, JUNIT, STDERR, STDOUT, Record
from redfirst.process import Exited, signal_name
from redfirst.verdict import Cause, Outcome, Verdict, error, green, no_decision, red

if TYPE_CHECKING:
    from redfirst.gates import compare



@dataclass(frozen=True)
class Graded:
    outcome: Outcome
    counts: dict[str, Any] = field(default_factory=dict)
    comparisons: tuple[compare.Comparison, ...] = ()
    # a verdict other than GREEN: the failed cases the output shows (the first MAX_FAILURES),
    # how many more failed, and the output's last lines
    failures: tuple[Failure, ...] = ()
    more_failures: int = 0
    tail: str = ""


# How much of the end of a run's output a verdict other than GREEN keeps (`Graded.tail`).
TAIL_CHARS = 2000


def _read(folder: Path, name: str) -> str:
    path = folder / name
    return path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""


def _shell_signal(gate: Gate, exited: Exited) -> int | None:
    # `sh -c` reports a child killed by signal N as exit 128+N.
    code = exited.returncode
    if isinstance(gate.driver.run, str) and code is not None and 128 < code <= 128 + 64:
        try:
            _signal.Signals(code - 128)
            return code - 128
        except ValueError:
            return None
    return None


@dataclass(frozen=True)
class _Reading:
    """How a gate's run is read: the parser of its counts and the one of its exit statuses (the
    runner's, where the driver starts one itself), from the driver's and the format's declarations."""

    counts: Parser | None         # None: `format: none`, no counts
    exits: Parser | None
    name: str                     # the runner, as reasons name it

    @staticmethod
    def of(gate: Gate, driver: drivers.Driver) -> _Reading:
        def parser(name: str) -> Parser | None:
            return parsers.get(name) if name in parsers.REGISTRY else None

        runner = driver.runner or gate.driver.format
        return _Reading(parser(driver.counts_format or gate.driver.format), parser(runner), runner)


def grade(record: Record, folder: Path, gate: Gate) -> Graded:
    """The verdict of the run kept in `folder` (a record folder of redfirst.gates.store).

    A caller may rely on: a verdict other than GREEN carries what the framework's output says
    failed (`failures`: each failed case's id, first failure line and place, the first
    MAX_FAILURES, `more_failures` how many more) and the end of that output (`tail`); both are read
    from the record folder here, the one place grading happens, so `gates run`, `gates regrade` and
    every report built from them show the same. They explain a verdict and never make one: a
    GREEN carries none."""
    parsed: list[Counts] = []
    graded = _grade(record, folder, gate, parsed)
    if graded.outcome.verdict is Verdict.GREEN:
        return graded
    shown = parsed[0].failures if parsed else ()
    more = max(0, parsed[0].failed - len(shown)) if parsed and shown else 0
    output = (_read(folder, STDOUT) + "\n" + _read(folder, STDERR)).strip()
    return replace(graded, failures=shown, more_failures=more, tail=output[-TAIL_CHARS:])


def _grade(record: Record, folder: Path, gate: Gate, seen: list[Counts]) -> Graded:
    """`grade`'s verdict; the counts it parsed, if any, are appended to `seen`."""
    counts: dict[str, Any] = {}

    # (0) requirements: the run never started because the environment could not serve it.
    facts = record.context
    if facts.unmet:
        lacks = drivers.get(gate.driver.type).unserved
        said = f"{gate.driver.type} cannot produce {lacks} here: {facts.unmet}" if lacks else str(facts.unmet)
        return Graded(no_decision(Cause.ENVIRONMENT, said))

    if facts.lease_refused:     # the lease's wrapper did not start a step: its exit status is not the program's
        return Graded(no_decision(Cause.ENVIRONMENT, facts.lease_refused))

    # (1) build (a caller that ran its own build instead says so in the record)
    if gate.build is not None and not facts.build_replaced:
        step = record.build
        if step is None:
            return Graded(error(Cause.BUILD, "the gate declares a build but the record holds none"))
        e = step.exited
        counts["build"] = e.describe()
        if not e.started or e.returncode in drivers.NOT_FOUND:
            why = e.start_error or drivers.NOT_FOUND.get(e.returncode or 0, "")
            return Graded(error(Cause.BUILD, f"build could not start ({why}): {_tail(_read(folder, BUILD_OUT))}"),
                          counts)
        if e.timed_out:
            return Graded(red(Cause.BUILD, f"build timed out after {e.duration_s:.0f}s{e.escape_note()}"), counts)
        if e.signal is not None or e.returncode != 0:
            return Graded(red(Cause.BUILD, f"build failed ({e.describe()}): {_tail(_read(folder, BUILD_OUT))}"),
                          counts)

    # DESIGN 4: a record made under a superseded token decides nothing.
    if facts.lease_lost:
        return Graded(no_decision(Cause.ENVIRONMENT, f"the lease was lost while the gate ran ({facts.lease_lost}): "
                                                     "its record was made under a superseded token"), counts)

    # Evidence the run tried to point elsewhere is no evidence (the links were removed before sealing).
    if facts.evidence_links:
        links = facts.evidence_links
        return Graded(no_decision(Cause.EVIDENCE, f"the program left links in its record ({', '.join(links[:3])}); "
                                                  "evidence must be files written in $GATES_EVIDENCE"), counts)

    main = record.main
    if main is None:
        return Graded(error(Cause.CONFIG, "the record holds no run of the driver"), counts)
    e = main.exited
    counts["exit"] = e.returncode
    stdout, stderr = _read(folder, STDOUT), _read(folder, STDERR)
    driver = drivers.get(gate.driver.type)
    reading = _Reading.of(gate, driver)
    parsed: Counts | None = None
    if reading.counts is not None:
        parsed = reading.counts.parse(stdout, stderr, _read(folder, JUNIT) or None)
        seen.append(parsed)
        counts.update(cases=parsed.executed, passed=parsed.passed, failed=parsed.failed, skipped=parsed.skipped)
        if parsed.assertions is not None:
            counts["assertions"] = parsed.assertions
    printed = f" after printing {parsed.passed} passed" if parsed and parsed.passed else ""

    # (2) signal or timeout: outranks anything printed (rule 2).
    if not e.started:
        return Graded(error(Cause.CONFIG, f"driver could not start: {e.start_error}"), counts)
    if e.timed_out:
        killed = e.escape_note() or "; the whole process tree was killed"
        return Graded(red(Cause.TIMEOUT, f"timed out after {gate.driver.timeout:g}s{killed}"), counts)
    sig = e.signal if e.signal is not None else _shell_signal(gate, e)
    if sig is not None:
        counts["signal"] = signal_name(sig)
        return Graded(red(Cause.SIGNAL, f"killed by {signal_name(sig)}{printed}"), counts)

    # (3) exit status
    code = e.returncode
    problem = driver.exit_problem(gate, code, stderr)
    if problem is not None:
        return Graded(problem, counts)
    if code != gate.asserts.exit:
        meaning = reading.exits.exit_meanings.get(code) if reading.exits is not None and code is not None else None
        if meaning is not None and meaning.verdict is Verdict.NO_DECISION:
            return Graded(no_decision(Cause.EVIDENCE, meaning.text), counts)
        if meaning is not None and meaning.verdict is Verdict.ERROR:
            return Graded(error(Cause.CONFIG, f"{meaning.text} (exit {code}): {_tail(stderr or stdout)}"), counts)
        if parsed is not None and parsed.nothing_ran:
            return Graded(no_decision(Cause.EVIDENCE, f"{reading.name}: no tests were found (exit {code})"), counts)
        detail = f" ({parsed.failed} failed)" if parsed and parsed.failed else f": {_tail(stderr or stdout)}"
        if meaning is not None and parsed is not None and parsed.failures:
            # the runner stopped on a case that failed before the tests ran (an import error): name it
            stopped = parsed.failures[0]
            at = f" in {stopped.file}:{stopped.line}" if stopped.file and stopped.line else ""
            detail = f" ({meaning.text}: {stopped.message}{at})"
        elif meaning is not None:
            detail = f" ({meaning.text}){detail}"
        if meaning is not None and meaning.cause is not None and not (parsed and parsed.summary_seen):
            # the runner's own step before the tests failed (a compile error): a build red, never a test's
            return Graded(red(meaning.cause, f"exit {code}{detail}"), counts)
        return Graded(red(Cause.EXIT, f"exit {code}, expected {gate.asserts.exit}{detail}"), counts)

    ev = observations.read(folder / EVIDENCE)
    known, value_problems = values.resolve(gate.value_specs, folder / INPUTS, ev)

    # (4) count floors
    if facts.junit_missing:
        return Graded(no_decision(Cause.EVIDENCE, f"no JUnit report: {facts.junit_missing}"), counts)
    if parsed is not None:
        outcome = _grade_counts(gate, parsed, record, folder, known, value_problems)
        if outcome.verdict is not Verdict.GREEN:
            return Graded(outcome, counts)

    # (5) counters, comparisons, driver observations
    return _grade_evidence(gate, driver, folder, counts, ev, known, value_problems,
                           facts.placement)


def _grade_counts(gate: Gate, parsed: Counts, record: Record, folder: Path, known: dict[str, Any],
                  missing: Sequence[str]) -> Outcome:
    reading = _Reading.of(gate, drivers.get(gate.driver.type))
    parser, name = reading.counts, reading.name
    if parser is None:
        return error(Cause.CONFIG, f"format {gate.driver.format!r} reports no counts")
    if parsed.nothing_ran:
        return no_decision(Cause.EVIDENCE, f"{name}: no tests were found")
    if not parsed.summary_seen:
        return no_decision(Cause.EVIDENCE, f"no {name} summary in the output: cannot tell what ran")
    if parsed.executed == 0:
        skipped = f" ({parsed.skipped} skipped)" if parsed.skipped else ""
        return no_decision(Cause.EVIDENCE, f"0 cases executed{skipped}: a skip is not a pass")
    if parsed.failed > gate.asserts.failed:
        names = f": {', '.join(parsed.notes[:3])}" if parsed.notes else ""
        return red(Cause.ASSERTION, f"{parsed.failed} failed (allowed {gate.asserts.failed}){names}")
    # Counts come from what executed: an aggregate the per-case lines contradict decides nothing.
    if parsed.doubt:
        return no_decision(Cause.EVIDENCE, parsed.doubt)
    unchecked = parser.run_doubt(gate.driver.run, parsed)
    if unchecked:
        return no_decision(Cause.EVIDENCE, unchecked)
    if record.enumerate is not None:
        enumerated = parser.enumerated(_read(folder, ENUM_OUT))
        if enumerated is None:
            shown = record.enumerate.argv if isinstance(record.enumerate.argv, str) else " ".join(record.enumerate.argv)
            return no_decision(Cause.EVIDENCE, f"the enumeration `{shown}` printed no total of tests")
        # An enumeration lists disabled tests too; every enumerated test must show up as run or skipped.
        accounted = parsed.executed + parsed.skipped
        if enumerated != accounted:
            return red(Cause.ASSERTION, f"{name} enumerated {enumerated} tests with this selection but reported "
                                        f"{accounted} ({parsed.executed} executed, {parsed.skipped} skipped)")
    if parsed.passed == 0:
        return no_decision(Cause.EVIDENCE, f"0 cases passed ({parsed.failed} failed, allowed): no positive evidence")
    found = _bound_problem("cases", parsed.executed, gate.asserts.cases, known, missing)
    if found:
        return found
    if parser.reports_assertions or gate.asserts.assertions is not None:
        if parsed.assertions is None:
            return no_decision(Cause.EVIDENCE, f"no assertion count in the {name} output")
        if parsed.assertions == 0:
            return no_decision(Cause.EVIDENCE, f"0 assertions executed over {parsed.executed} cases: "
                                               "a case that checks nothing is not a pass")
        found = _bound_problem("assertions", parsed.assertions, gate.asserts.assertions or Bound(min="1"), known,
                               missing)
        if found:
            return found
        if parsed.assertions_failed:
            return red(Cause.ASSERTION, f"{parsed.assertions_failed} assertions failed")
    return green()


def _bound_problem(name: str, actual: float, bound: Bound, known: dict[str, Any],
                   missing: Sequence[str] = ()) -> Outcome | None:
    """RED when `actual` breaks `bound`; NO_DECISION when a value it needs was not available;
    ERROR when the bound itself cannot be evaluated (division by zero, not finite)."""
    for key, text in (("equals", bound.equals), ("min", bound.min), ("max", bound.max)):
        if text is None:
            continue
        parsed = expr.parse(text)
        absent = [n for n in parsed.names if n not in known]
        if absent:
            why = next((m for m in missing if any(n in m for n in absent)), f"{', '.join(absent)} not available")
            return no_decision(Cause.EVIDENCE, f"{name}: {key} {text!r} needs {why}")
        try:
            limit = parsed.evaluate(known)
        except expr.ExprError as exc:
            return error(Cause.CONFIG, f"{name}: cannot evaluate {key} {text!r}: {exc}")
        if not math.isfinite(limit):
            return error(Cause.CONFIG, f"{name}: {key} {text!r} is {limit}, not a finite number")
        failed = {"equals": actual != limit, "min": actual < limit, "max": actual > limit}[key]
        if failed:
            word = {"equals": "expected", "min": "floor", "max": "ceiling"}[key]
            return red(Cause.ASSERTION, f"{name} = {actual:g}, {word} {text} = {limit:g}")
    return None


def _grade_evidence(gate: Gate, driver: drivers.Driver, folder: Path, counts: dict[str, Any],
                    ev: observations.Evidence, known: dict[str, Any], problems: Sequence[str],
                    placement: Mapping[str, Any]) -> Graded:
    a = gate.asserts
    evidence_dir = folder / EVIDENCE
    reds: list[Outcome] = []
    missing: list[Outcome] = []
    errors: list[Outcome] = []
    comparisons: list[compare.Comparison] = []
    needs_evidence = bool(a.counters or a.bit_exact or a.close or gate.values)
    if ev.problems and (needs_evidence or ev.observations):
        missing.append(no_decision(Cause.EVIDENCE, f"unreadable evidence: {ev.problems[0]}"
                                   + (f" (+{len(ev.problems) - 1} more)" if len(ev.problems) > 1 else "")))
    for name, bound in a.counters:
        recorded = ev.counters.get(name, ())
        if not recorded:
            missing.append(no_decision(Cause.EVIDENCE, f"counter {name!r} was not recorded in evidence.jsonl"))
            continue
        judged, why = counter_values(name, recorded, bound.combine)
        if why is not None:
            missing.append(no_decision(Cause.EVIDENCE, why))
            continue
        counts[name] = judged[-1]
        for value in judged:
            found = _bound_problem(f"counter {name}", value, bound, known, problems)
            if found is not None:
                {Verdict.RED: reds, Verdict.ERROR: errors}.get(found.verdict, missing).append(found)
                break

    for kind, checks in (("bit_exact", a.bit_exact), ("close", a.close)):
        for check in checks:
            result, comps = _compare(kind, check, ev, evidence_dir)
            comparisons.extend(comps)
            if comps:
                counts.setdefault("values", 0)
                counts.setdefault("differing", 0)
                counts["values"] += sum(c.values for c in comps)
                counts["differing"] += sum(c.differing for c in comps)
            if result.verdict is Verdict.RED:
                reds.append(result)
            elif result.verdict is Verdict.NO_DECISION:
                missing.append(result)

    raw = [dict(o.data, observation=o.kind) for o in ev.observations]
    observed = driver.grade_observations(gate, raw)
    # Observations must come from the device the record's lease granted (DESIGN section 4).
    misplaced = driver.grade_placement(placement, raw)
    if misplaced is not None:
        missing.append(misplaced)
    if observed is not None:
        {Verdict.RED: reds, Verdict.NO_DECISION: missing, Verdict.ERROR: errors}.get(observed.verdict, []).append(
            observed)
        if observed.verdict is Verdict.GREEN and observed.reason:
            counts["observed"] = observed.reason

    # A failure seen outranks evidence missing elsewhere; a broken gate outranks both.
    for bucket in (errors, reds, missing):
        if bucket:
            extra = f" (+{len(bucket) - 1} more)" if len(bucket) > 1 else ""
            first = bucket[0]
            return Graded(Outcome(first.verdict, first.cause, first.reason + extra), counts, tuple(comparisons))
    return Graded(green(), counts, tuple(comparisons))


def counter_values(name: str, recorded: Sequence[float], combine: str | None) -> tuple[list[float], str | None]:
    """The values a counter's bound judges (each must meet it), or why the records cannot decide.

    A counter recorded more than once with different values decides nothing unless the gate says
    how they combine (`combine:`): its verdict must not depend on which record came last."""
    if not all(math.isfinite(v) for v in recorded):
        bad = next(v for v in recorded if not math.isfinite(v))
        return [], f"counter {name!r} recorded {bad}, not a finite number"
    if combine is None:
        differing = next((v for v in recorded if v != recorded[0]), None)
        if differing is not None:
            return [], (f"counter {name!r} was recorded {len(recorded)} times with different values "
                        f"({recorded[0]} then {differing}): declare how they combine "
                        "(`combine: last | first | sum | min | max | all`)")
        return [recorded[-1]], None
    if combine == "all":
        return list(recorded), None
    one = {"last": recorded[-1], "first": recorded[0], "sum": sum(recorded), "min": min(recorded), "max": max(recorded)}
    return [one[combine]], None


def _recorded_twice(records: Sequence[observations.TensorRecord]
                    ) -> tuple[observations.TensorRecord, observations.TensorRecord] | None:
    """The first two records of one tensor at one step, if it was recorded more than once."""
    seen: dict[int | None, observations.TensorRecord] = {}
    for record in records:
        if record.step in seen:
            return seen[record.step], record
        seen[record.step] = record
    return None


def _by_step(records: Sequence[observations.TensorRecord]) -> dict[int | None, observations.TensorRecord]:
    return {r.step: r for r in records}


def _compare(kind: str, check: TensorCheck, ev: observations.Evidence,
             folder: Path) -> tuple[Outcome, list[compare.Comparison]]:
    from redfirst.gates import compare  # numpy: only gates that compare tensors pay for it

    label = f"{kind} {check.reference} vs {check.candidate}"
    for name in (check.reference, check.candidate):
        twice = _recorded_twice(ev.tensor_records(name))
        if twice is not None:
            first, again = twice
            at = "" if first.step is None else f" at step {first.step}"
            return no_decision(Cause.EVIDENCE, f"{label}: tensor {name}{at} was recorded twice (evidence.jsonl:"
                                               f"{first.line} and :{again.line}): which one is compared is undecided"), []
    refs = _by_step(ev.tensor_records(check.reference))
    cands = _by_step(ev.tensor_records(check.candidate))
    if not refs or not cands:
        absent = [n for n, r in ((check.reference, refs), (check.candidate, cands)) if not r]
        return no_decision(Cause.EVIDENCE, f"{label}: tensor {', '.join(absent)} not recorded"), []
    if set(refs) != set(cands):
        only = sorted(map(str, set(refs) ^ set(cands)))
        return no_decision(Cause.EVIDENCE, f"{label}: steps {', '.join(only)} recorded on one side only"), []
    comps: list[compare.Comparison] = []
    for step in sorted(refs, key=lambda s: -1 if s is None else s):
        r, c = refs[step], cands[step]
        try:
            ra, ca = observations.load_tensor(folder, r), observations.load_tensor(folder, c)
        except observations.EvidenceError as exc:
            return no_decision(Cause.EVIDENCE, f"{label}: {exc}"), comps
        if kind == "bit_exact":
            comp = compare.bit_exact(ra, ca, r.dtype, c.dtype, r.shape, c.shape)
        else:
            comp = compare.close(ra, ca, r.dtype, c.dtype, r.shape, c.shape, rtol=check.rtol, atol=check.atol,
                                 max_ulp=check.max_ulp)
        comps.append(comp)
        where = "" if step is None else f" at step {step}"
        if comp.mismatch:
            return red(Cause.ASSERTION, f"{label}{where}: {comp.mismatch}"), comps
        if comp.differing:
            return red(Cause.ASSERTION, f"{label}{where}: {comp.describe()}"), comps
    total = sum(c.values for c in comps)
    if total == 0:
        return no_decision(Cause.EVIDENCE, f"{label}: 0 values compared"), comps
    if total < check.min_values:
        return red(Cause.ASSERTION, f"{label}: {total} values compared, floor {check.min_values}"), comps
    return green(f"{total} values, 0 differing"), comps
