"""Reports of a run: the human table, the versioned JSON document, JUnit XML."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TextIO

from gates.runner import GateResult
from gates.verdict import Verdict, all_passing

JSON_VERSION = 1


def describe_counts(counts: dict[str, Any]) -> str:
    """`2 cases, 516 assertions, 0 failed; 500 values, 0 differing; replays=4`."""
    parts = []
    if "cases" in counts:
        text = f"{counts['cases']} cases"
        if "assertions" in counts:
            text += f", {counts['assertions']} assertions"
        text += f", {counts.get('failed', 0)} failed"
        if counts.get("skipped"):
            text += f", {counts['skipped']} skipped"
        parts.append(text)
    if "values" in counts:
        parts.append(f"{counts['values']} values, {counts['differing']} differing")
    reserved = {"cases", "assertions", "failed", "skipped", "passed", "values", "differing", "exit", "build",
                "signal", "observed"}
    extra = [f"{k}={v}" for k, v in counts.items() if k not in reserved]
    if extra:
        parts.append(" ".join(extra))
    if counts.get("observed"):
        parts.append(str(counts["observed"]))
    return "; ".join(parts) or "-"


def label(result: GateResult) -> str:
    if result.verdict is Verdict.GREEN and result.exit_only:
        return "GREEN (EXIT-ONLY)"
    return result.verdict.value


def item_json(result: GateResult) -> dict[str, Any]:
    return {
        "id": result.gate_id,
        "kind": "gate",
        "label": result.kind,
        "verdict": result.verdict.value,
        "cause": result.cause.value if result.cause else None,
        "reason": result.reason if result.verdict is not Verdict.GREEN or not result.exit_only
        else f"EXIT-ONLY: {result.exit_only}",
        "counts": result.counts,
        "requires": result.requires,
        "evidence": result.evidence_id,
        "exit_only": result.exit_only,
        "source": result.source,
        "duration_s": round(result.duration_s, 3),
    }


def document(results: Sequence[GateResult], exit_code: int, **extra: Any) -> dict[str, Any]:
    """The versioned --json document of a run: the one serialisation every gates reporter reads."""
    return {"version": JSON_VERSION, "exit": exit_code, "items": [item_json(r) for r in results], **extra}


def to_json(results: Sequence[GateResult], exit_code: int) -> str:
    return json.dumps(document(results, exit_code), indent=2, sort_keys=False)


def _rows(results: Sequence[GateResult]) -> list[tuple[str, ...]]:
    return [(r.gate_id, label(r), r.cause.value if r.cause else "", describe_counts(r.counts),
             f"{r.duration_s:.2f}s", (r.evidence_id or "")[:12], r.reason or "") for r in results]


def print_table(results: Sequence[GateResult], out: TextIO = sys.stdout) -> None:
    """The human table: rich on a terminal; plain aligned columns in a log (one row a line,
    nothing wrapped, and no rich import on the path of every CI run)."""
    if not out.isatty():
        header = ("gate", "verdict", "cause", "counts", "time", "evidence", "reason")
        rows = _rows(results)
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
        for row in (header, *rows):
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
        return
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    colours = {Verdict.GREEN: "green", Verdict.RED: "red", Verdict.NO_DECISION: "yellow", Verdict.ERROR: "magenta"}
    width = int(os.environ.get("COLUMNS", "0")) or 200
    console = Console(file=out, width=width, no_color=not out.isatty(), highlight=False, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("gate", "verdict", "cause", "counts", "time", "reason", "evidence"):
        table.add_column(column, overflow="fold")
    for r in results:
        table.add_row(escape(r.gate_id), f"[{colours[r.verdict]}]{label(r)}[/]",
                      r.cause.value if r.cause else "", escape(describe_counts(r.counts)), f"{r.duration_s:.2f}s",
                      escape(r.reason or ""), (r.evidence_id or "")[:12])
    console.print(table)


def closing_line(results: Sequence[GateResult]) -> str:
    verdicts = [r.verdict for r in results]
    if not results:
        return "No gate selected: nothing was decided."
    if all_passing(verdicts):
        return f"All {len(results)} gates GREEN."
    tally = {v.value: sum(1 for x in verdicts if x is v) for v in Verdict}
    return ", ".join(f"{n} {name}" for name, n in tally.items() if n) + "."


def write_junit(results: Sequence[GateResult], path: Path) -> None:
    """JUnit XML: RED is a failure, ERROR an error, NO_DECISION a failure (never a skip:
    a CI dashboard must not count missing evidence as fine)."""
    suite = ET.Element("testsuite", name="redfirst-gates", tests=str(len(results)),
                       failures=str(sum(r.verdict in (Verdict.RED, Verdict.NO_DECISION) for r in results)),
                       errors=str(sum(r.verdict is Verdict.ERROR for r in results)), skipped="0")
    for r in results:
        case = ET.SubElement(suite, "testcase", classname="gates", name=r.gate_id, time=f"{r.duration_s:.3f}")
        message = f"{r.verdict.value} ({r.cause.value if r.cause else ''}): {r.reason}"
        if r.verdict in (Verdict.RED, Verdict.NO_DECISION):
            ET.SubElement(case, "failure", message=message, type=r.verdict.value).text = describe_counts(r.counts)
        elif r.verdict is Verdict.ERROR:
            ET.SubElement(case, "error", message=message, type=Verdict.ERROR.value).text = r.reason
        else:
            ET.SubElement(case, "system-out").text = f"{label(r)}: {describe_counts(r.counts)}"
    path.parent.mkdir(parents=True, exist_ok=True)
    root = ET.Element("testsuites")
    root.append(suite)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)
