"""Timeouts derived from the baseline: a gate that declares no `timeout` runs under a
mutation with (its tests' baseline seconds + 1) x 15, as mutmut does, plus twice the rest of
its baseline run, instead of the 600 s default, so an infinite-loop mutant costs seconds, and
the outcome says the limit was derived. The tests' seconds are the JUnit cases' where the run
wrote JUnit (mutmut's estimate is the tests' durations too), else the program's. The rest
(start-up, imports, collection) is added, not multiplied: a loop repeats the tests, not the
imports; but the limit holds the whole run, so leaving it out killed every mutation of a gate
whose imports outlast (tests + 1) x 15 (a false KILLED); twice, because load slows it too."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from redfirst.gates.model import Gate
from redfirst.gates.parsers.junit import case_seconds
from redfirst.gates.record import JUNIT, RECORD_FILE
from redfirst.yamlsrc import load_json_object

PAD_S = 1.0
FACTOR = 15.0
REST_FACTOR = 2.0


def derived_timeout(baseline_s: float) -> float:
    return round((max(0.0, baseline_s) + PAD_S) * FACTOR, 1)


def declares_timeout(gate: Gate) -> bool:
    """Whether the gate's own document sets `driver.timeout` (the model holds 600 either way)."""
    try:
        data: Any = yaml.load(gate.document, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))  # noqa: S506  (safe)
    except yaml.YAMLError:
        return True            # unreadable here: keep what the gate loaded with
    if isinstance(data, list):
        data = next((d for d in data if isinstance(d, dict) and d.get("gate") == gate.id), None)
    driver = data.get("driver") if isinstance(data, dict) else None
    return not isinstance(driver, dict) or "timeout" in driver


@dataclass(frozen=True)
class Derived:
    """A gate's baseline run as the derived timeout reads it."""

    tests_s: float      # its tests' seconds (the JUnit cases'), else its program's
    rest_s: float       # the rest of its program's seconds: start-up, imports, collection
    cold_s: float = 0.0     # what a run may pay that the baseline did not: a warm driver's cold start

    @property
    def limit(self) -> float:
        return round(derived_timeout(self.tests_s) + REST_FACTOR * (self.rest_s + self.cold_s), 1)

    def describe(self) -> str:
        rest = f" + {REST_FACTOR:g} x {self.rest_s:.2f} s outside the tests" if self.rest_s >= 0.005 else ""
        if self.cold_s >= 0.005:
            rest = (f" + {REST_FACTOR:g} x ({self.rest_s:.2f} s outside the tests + {self.cold_s:.2f} s of a cold "
                    "start)")
        return f"({self.tests_s:.2f} s + {PAD_S:g}) x {FACTOR:g}{rest} = {self.limit:g} s"


def derived(store_dir: Path, evidence_id: str | None) -> Derived | None:
    """The seconds of the gate's baseline run in its raw record: its program's (and its
    enumeration's; the build is left out, it has its own timeout), and of those its tests'
    (the JUnit cases' times, never more than the program's own). None: no record to read."""
    if not evidence_id:
        return None
    folder = store_dir / "evidence" / evidence_id
    try:
        tests = case_seconds((folder / JUNIT).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        tests = None
    try:
        data = load_json_object(folder / RECORD_FILE)
        if data is None:
            raise ValueError("no record to read")
        steps = [data.get(k) for k in ("main", "enumerate")]
        program: float | None = sum(float(s["exited"]["duration_s"]) for s in steps if s)
    except (OSError, ValueError, KeyError, TypeError):
        program = None
    if program is None:
        return None if tests is None else Derived(max(0.0, tests), 0.0)
    program = max(0.0, program)
    if tests is None:
        return Derived(program, 0.0)
    tests = min(max(0.0, tests), program)
    return Derived(tests, program - tests)
