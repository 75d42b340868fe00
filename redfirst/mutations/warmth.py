"""pytest-warm is a cold pytest run, or it is not used.

A warm process shares with every fork what a cold run makes for itself (modules imported once,
the importing process, its threads, signal dispositions, what import drew). The per-cause fixes
live in the driver (redfirst.gates.drivers.pytest_warm); this is the rule that makes warm safe
whatever the cause: under `mutate`, every warm gate's baseline runs warm and cold, and
`warm_agrees` must find the two alike case by case, or the gate runs cold for the whole run.
With the two baselines alike, a mutated run the warm process hands to a fresh interpreter is
compared against a baseline of its own mode."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from pathlib import Path

from redfirst.gates.model import Gate
from redfirst.gates.record import JUNIT
from redfirst.mutations.outcome import GateSeen

WARM = "pytest-warm"


def warm_gates(gates: Mapping[str, Gate], ids: Iterable[str]) -> list[str]:
    """The gates among `ids` that keep a warm process (their baseline also runs cold)."""
    return [g for g in ids if g in gates and gates[g].driver.type == WARM]


def cases(record: Path) -> dict[str, str] | None:
    """Each case of a run's JUnit report (`classname::name`) and its outcome: passed, failure,
    error, or skipped with its type (pytest marks an xfail so); None where there is no report."""
    try:
        root = ET.parse(record / JUNIT).getroot()
    except (OSError, ET.ParseError):
        return None
    found: dict[str, str] = {}
    for case in root.iter("testcase"):
        name = f"{case.get('classname') or ''}::{case.get('name') or ''}"
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error"):
                outcome = child.tag
                break
            if child.tag == "skipped":
                outcome = f"skipped {child.get('type') or ''}".strip()
        found[name] = outcome if name not in found else f"{found[name]}, {outcome}"
    return found


def warm_agrees(warm: GateSeen, cold: GateSeen, store_dir: Path) -> str | None:
    """None when one gate's warm and cold baseline runs agree: the same verdict, cause and exit
    status, and the same cases with the same outcomes in their JUnit reports (both must have
    one); else what differs, for the report. This is the one check that lets `mutate` use a warm
    run of a gate at all."""
    differs: list[str] = []
    if (warm.verdict, warm.cause) != (cold.verdict, cold.cause):
        differs.append(f"verdict {_said(warm)} warm, {_said(cold)} cold")
    if warm.counts.get("exit") != cold.counts.get("exit"):
        differs.append(f"exit {warm.counts.get('exit')} warm, {cold.counts.get('exit')} cold")
    runs = {mode: cases(store_dir / "evidence" / seen.evidence_id) if seen.evidence_id else None
            for mode, seen in (("warm", warm), ("cold", cold))}
    if runs["warm"] is None or runs["cold"] is None:
        missing = " and ".join(mode for mode, found in runs.items() if found is None)
        differs.append(f"no JUnit report of the {missing} run to compare")
    else:
        w, c = runs["warm"], runs["cold"]
        for name in sorted(w.keys() | c.keys()):
            if w.get(name) != c.get(name):
                differs.append(f"{_case(name)}: {w.get(name, 'not run')} warm, {c.get(name, 'not run')} cold")
    if not differs:
        return None
    shown = "; ".join(differs[:3]) + (f"; and {len(differs) - 3} more" if len(differs) > 3 else "")
    return f"its warm and cold baselines differ ({shown})"


def _said(seen: GateSeen) -> str:
    return seen.verdict.value + (f" ({seen.cause.value})" if seen.cause else "")


def _case(name: str) -> str:
    """`tests.test_calc::test_add` as pytest names it: `tests/test_calc.py::test_add`."""
    classname, _, test = name.partition("::")
    if not classname:
        return test
    parts = classname.split(".")
    module, classes = classname, []
    for n in range(len(parts), 0, -1):     # the module part of a classname is lowercase by convention only
        if not parts[n - 1][:1].isupper():
            module, classes = "/".join(parts[:n]) + ".py", parts[n:]
            break
    return "::".join([module, *classes, test])
