"""Timeouts derived from the baseline: a gate that declares no `timeout` runs under a
mutation with (its baseline seconds + 1) x 15, as mutmut does, instead of the 600 s default,
so an infinite-loop mutant costs seconds, and the outcome says the limit was derived. The
seconds are its tests' own where the run wrote JUnit (mutmut's estimate is the tests'
durations too), else its program's."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from gates.model import Gate
from gates.parsers.junit import case_seconds
from gates.record import JUNIT, RECORD_FILE

PAD_S = 1.0
FACTOR = 15.0


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


def baseline_seconds(store_dir: Path, evidence_id: str | None) -> float | None:
    """The seconds the gate's tests ran on the untouched tree (the JUnit cases' times in its raw
    record), else the seconds its program (and its enumeration) ran; the build is left out (it
    has its own timeout)."""
    if not evidence_id:
        return None
    folder = store_dir / "evidence" / evidence_id
    try:
        tests = case_seconds((folder / JUNIT).read_text(encoding="utf-8", errors="replace"))
    except OSError:
        tests = None
    if tests is not None:
        return tests
    try:
        data = json.loads((folder / RECORD_FILE).read_text(encoding="utf-8"))
        steps = [data.get(k) for k in ("main", "enumerate")]
        return sum(float(s["exited"]["duration_s"]) for s in steps if s)
    except (OSError, ValueError, KeyError, TypeError):
        return None
