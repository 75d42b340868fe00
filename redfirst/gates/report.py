"""Reports of a run: the versioned JSON document (the one serialisation), and the human table
and JUnit XML read from it."""

from __future__ import annotations

import json
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from redfirst.clitools import JSON_VERSION
from redfirst.gates.runner import GateResult
from redfirst.verdict import Verdict, all_passing


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


def item_json(result: GateResult) -> dict[str, Any]:
    """One gate's result as every report tells it (the --json item)."""
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
        "failures": list(result.failures),
        "more_failures": result.more_failures,
        **({"output_tail": result.tail} if result.tail else {}),
    }


def failure_lines(item: Mapping[str, Any], indent: str = "    ") -> list[str]:
    """The failed cases of an item, one line each, as pytest's `-rf` short summary prints them:
    `FAILED id - message (at file:line)`, then `... and N more`. Every text report (the table,
    `gates show`, `gates regrade`, JUnit) prints these lines."""
    out = []
    for f in item.get("failures") or ():
        at = f" (at {f['file']}:{f['line']})" if f.get("file") and f.get("line") else ""
        out.append(f"{indent}FAILED {f.get('id')} - {f.get('message')}{at}")
    if item.get("more_failures"):
        out.append(f"{indent}... and {item['more_failures']} more")
    return out


def run_facts(commit: str | None, dirty: bool | None) -> dict[str, Any]:
    """When and on what a run ran, as its reports head it: the UTC date, the commit (None outside
    git) and whether the tree differed from it, and the redfirst version."""
    import datetime as dt

    import redfirst

    date = dt.datetime.now(dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
    return {"date": date, "commit": commit, "dirty": dirty, "redfirst": redfirst.__version__}


def document(results: Sequence[GateResult], exit_code: int, **extra: Any) -> dict[str, Any]:
    """The versioned --json document of a run: the one serialisation of the gates' results.
    Every reporter (table, JUnit, GitHub, HTML) reads it, so none can tell a gate otherwise."""
    doc = {"version": JSON_VERSION, "exit": exit_code, "items": [item_json(r) for r in results], **extra}
    # What a reader of the JSON text sees: tuples as lists, nothing only Python holds.
    loaded: dict[str, Any] = json.loads(json.dumps(doc))
    return loaded


def to_json(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=2, sort_keys=False)


def label(item: Mapping[str, Any]) -> str:
    if item["verdict"] == Verdict.GREEN.value and item.get("exit_only"):
        return "GREEN (EXIT-ONLY)"
    return str(item["verdict"])


def _rows(doc: Mapping[str, Any]) -> list[tuple[str, ...]]:
    from redfirst import clitools

    shown = None if clitools.verbosity() > 0 else 12   # -v: the whole evidence id
    return [(i["id"], label(i), i["cause"] or "", describe_counts(i["counts"]), f"{i['duration_s']:.2f}s",
             (i["evidence"] or "")[:shown], i["reason"] or "") for i in doc["items"]]


def print_table(doc: Mapping[str, Any], out: TextIO | None = None) -> None:
    """The human table: rich where escape codes are wanted (`clitools.styled`: a terminal, no
    NO_COLOR, or `--color always`); else plain aligned columns (one row a line, nothing wrapped,
    and no rich import on the path of every CI run)."""
    from redfirst import clitools

    out = out or sys.stdout   # looked up at the call: clitools.guard_output may have replaced it
    rows = _rows(doc)
    if not clitools.styled(out):
        header = ("gate", "verdict", "cause", "counts", "time", "evidence", "reason")
        widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header) - 1)]
        out.write("  ".join([*(c.ljust(w) for c, w in zip(header, widths, strict=False)), header[-1]]).rstrip() + "\n")
        for item, row in zip(doc["items"], rows, strict=True):
            cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
            out.write("  ".join([*cells, row[-1]]).rstrip() + "\n")
            out.writelines(line + "\n" for line in failure_lines(item))
        return
    from rich import box
    from rich.console import Console
    from rich.markup import escape
    from rich.table import Table

    colours = {Verdict.GREEN: "green", Verdict.RED: "red", Verdict.NO_DECISION: "yellow", Verdict.ERROR: "magenta"}
    width = int(os.environ.get("COLUMNS", "0")) or 200
    console = Console(file=out, width=width, force_terminal=True, no_color=False, highlight=False, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False)
    for column in ("gate", "verdict", "cause", "counts", "time", "reason", "evidence"):
        table.add_column(column, overflow="fold")
    for item, (gate, verdict, cause, counts, seconds, evidence, reason) in zip(doc["items"], rows, strict=True):
        table.add_row(escape(gate), f"[{colours.get(item['verdict'], 'magenta')}]{verdict}[/]", cause,
                      escape(counts), seconds, escape(reason), evidence)
    console.print(table)
    for item in doc["items"]:     # the failed cases under the table, by gate, as pytest's -rf prints them
        lines = failure_lines(item)
        if lines:
            console.print(escape(f"{item['id']}:\n" + "\n".join(lines)))


def closing_line(doc: Mapping[str, Any]) -> str:
    verdicts = [i["verdict"] for i in doc["items"]]
    if not verdicts:
        return "No gate selected: nothing was decided."
    if all_passing(verdicts):
        return f"All {len(verdicts)} gates GREEN."
    tally = {v.value: sum(1 for x in verdicts if x == v.value) for v in Verdict}
    return ", ".join(f"{n} {name}" for name, n in tally.items() if n) + "."


def write_junit(doc: Mapping[str, Any], path: Path) -> None:
    """JUnit XML: RED is a failure, ERROR an error, NO_DECISION a failure (never a skip:
    a CI dashboard must not count missing evidence as fine); a run stopped by a bad file is its
    errors (`redfirst.junit`)."""
    from redfirst import junit

    items = doc["items"]
    failing = (Verdict.RED.value, Verdict.NO_DECISION.value)
    suite = ET.Element("testsuite", name="redfirst-gates", skipped="0")
    for i in items:
        case = ET.SubElement(suite, "testcase", classname="gates", name=i["id"], time=f"{i['duration_s']:.3f}")
        message = f"{i['verdict']} ({i['cause'] or ''}): {i['reason']}"
        cases = failure_lines(i, indent="")
        if cases:   # the first failed case names what failed, in the message a CI dashboard shows
            message += f"; {cases[0]}"
        if i["verdict"] in failing:
            ET.SubElement(case, "failure", message=message, type=i["verdict"]).text = "\n".join(
                [describe_counts(i["counts"]), *cases])
        elif i["verdict"] == Verdict.GREEN.value:
            ET.SubElement(case, "system-out").text = f"{label(i)}: {describe_counts(i['counts'])}"
        else:   # ERROR, or a word this version does not know: never a pass
            ET.SubElement(case, "error", message=message, type=Verdict.ERROR.value).text = "\n".join([i["reason"], *cases])
        if i.get("output_tail"):    # the end of the run's output, as the dashboard's "output" of the case
            ET.SubElement(case, "system-out").text = i["output_tail"]
    junit.stopped_cases(suite, "gates", doc.get("errors", ()), Verdict.ERROR.value)
    junit.write(path, suite)
