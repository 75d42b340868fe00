"""The report: a table for people, one JSON document for machines, JUnit for CI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gates.verdict import MutationOutcome, Verdict, all_passing
from mutations.engine import MutationResult

JSON_VERSION = 1


def _build_text(r: MutationResult) -> str:
    if r.build.state == "none":
        return "gates" if r.gates or r.controls else "-"
    return r.build.state


def table(results: Sequence[MutationResult], exit_code: int) -> str:
    rows = [("mutation", "changed", "build", "outcome", "red gates", "controls")]
    for r in results:
        reds = "; ".join(g.brief() for g in r.gates) or "-"
        controls = "; ".join(f"{g.gate_id} {g.verdict.value}" for g in r.controls) or "-"
        rows.append((r.mutation.id, r.diffstat or "-", _build_text(r), r.outcome.value + (" (cached)" if r.cached else ""),
                     reds, controls))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=False)) + "  " + row[4] + "  | " + row[5]
             for row in rows]
    for r in results:
        if r.outcome is not MutationOutcome.KILLED:
            lines.append(f"{r.mutation.id}: {r.outcome.value}: {r.reason} ({r.mutation.source})")
        for g in (*r.gates, *r.controls):
            if g.reason and g.verdict is not Verdict.GREEN:
                lines.append(f"  {r.mutation.id}: {g.describe()}")
    outcomes = [r.outcome for r in results]
    if all_passing(outcomes):
        lines.append(f"All {len(results)} mutations KILLED")
    else:
        counts = {o.value: sum(1 for x in outcomes if x is o) for o in MutationOutcome}
        lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no mutations selected")
    lines.append(f"exit {exit_code}")
    return "\n".join(lines)


def document(results: Sequence[MutationResult], exit_code: int) -> dict[str, Any]:
    gate_ids = list(dict.fromkeys(g.gate_id for r in results for g in (*r.gates, *r.controls)))
    items = []
    for r in results:
        rec = r.record()
        items.append({
            "id": r.mutation.id, "kind": "mutation", "verdict": r.outcome.value,
            "cause": rec["cause"], "reason": r.reason, "counts": {"diffstat": r.diffstat},
            "requires": {}, "evidence": [g.evidence_id for g in (*r.gates, *r.controls) if g.evidence_id],
            **{k: rec[k] for k in ("file", "line", "diffstat", "mode", "build", "gates", "controls", "seconds",
                                   "cached", "source")},
        })
    matrix = {r.mutation.id: {g.gate_id: g.verdict.value for g in (*r.gates, *r.controls)} for r in results}
    return {"version": JSON_VERSION, "exit": exit_code, "items": items,
            "matrix": {"gates": gate_ids, "rows": matrix}}


def diffs(results: Sequence[MutationResult]) -> dict[str, str]:
    """Each mutation's edit as a unified diff of its anchor (what the HTML page shows)."""
    import difflib

    out = {}
    for r in results:
        m = r.mutation
        out[m.id] = "\n".join(difflib.unified_diff(m.anchor.splitlines(), m.replace.splitlines(),
                                                  f"a/{m.file}", f"b/{m.file}", lineterm="")) or "(no change)"
    return out


def dumps(results: Sequence[MutationResult], exit_code: int) -> str:
    return json.dumps(document(results, exit_code), indent=1, sort_keys=False)


def write_junit(path: Path, results: Sequence[MutationResult]) -> None:
    suite = ET.Element("testsuite", name="mutate", tests=str(len(results)))
    failures = errors = 0
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="mutate", name=r.mutation.id, time=f"{r.seconds:.3f}")
        if r.outcome is MutationOutcome.ERROR:
            errors += 1
            ET.SubElement(case, "error", type=r.outcome.value, message=r.reason).text = r.reason
        elif r.outcome is not MutationOutcome.KILLED:
            # DISCARDED is not a pass either: reported as a failure, never skipped.
            failures += 1
            ET.SubElement(case, "failure", type=r.outcome.value, message=r.reason).text = r.reason
    suite.set("failures", str(failures))
    suite.set("errors", str(errors))
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(suite).write(path, encoding="utf-8", xml_declaration=True)
