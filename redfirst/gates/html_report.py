"""One self-contained HTML page of a run, from its --json document: the verdict table with
counts, causes, reasons, times and evidence ids; for mutations, the mutations x gates
matrix and each mutation's diff. No script, no external resource: it opens from an
artifact as it is."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redfirst.verdict import MutationOutcome, Verdict

# Verdict colours (str enums: a document's plain words look them up): the screenshot test looks for these pixels.
COLOURS: dict[str, str] = {
    Verdict.GREEN: "#1a7f37", MutationOutcome.KILLED: "#1a7f37",
    Verdict.RED: "#cf222e", MutationOutcome.SURVIVED: "#cf222e",
    Verdict.NO_DECISION: "#9a6700", MutationOutcome.UNSCOPED: "#9a6700", MutationOutcome.DISCARDED: "#9a6700",
    MutationOutcome.EQUIVALENT: "#9a6700", MutationOutcome.DUPLICATE: "#9a6700",
    Verdict.ERROR: "#8250df",
}

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; }
table { border-collapse: collapse; margin: 12px 0 24px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.verdict { color: #fff; font-weight: 600; }
pre.diff { background: #f6f8fa; padding: 8px; overflow-x: auto; }
.add { color: #1a7f37; } .del { color: #cf222e; }
tr.case td { background: #fff8f8; font-size: 13px; }
tr.case code { white-space: pre-wrap; }
.meta { color: #57606a; }
.tally span { display: inline-block; color: #fff; padding: 2px 8px; margin-right: 6px; border-radius: 4px; }
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _verdict_cell(verdict: str) -> str:
    colour = COLOURS.get(verdict, "#57606a")
    return f'<td class="verdict v-{_e(verdict)}" style="background:{colour}">{_e(verdict)}</td>'


def _counts(counts: Mapping[str, Any]) -> str:
    from redfirst.gates.report import describe_counts

    return describe_counts(dict(counts)) if counts else "-"


def _evidence(value: Any) -> str:
    if isinstance(value, list):
        return ", ".join(str(v)[:12] for v in value) or "-"
    return str(value)[:12] if value else "-"


def _diff(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = "add" if line.startswith("+") and not line.startswith("+++") else \
            "del" if line.startswith("-") and not line.startswith("---") else ""
        lines.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return "\n".join(lines)


def _facts(run: Any) -> list[str]:
    """The run's date, commit and redfirst version (the --json document's `run`), under the title."""
    if not isinstance(run, Mapping):
        return []
    commit = str(run.get("commit") or "no git commit")[:12] + (" (with changes)" if run.get("dirty") else "")
    return [f"<p class='meta' id='run'>run <time>{_e(run.get('date'))}</time> &middot; commit <code>{_e(commit)}"
            f"</code> &middot; redfirst {_e(run.get('redfirst'))}</p>"]


def _case_rows(item: Mapping[str, Any]) -> list[str]:
    """One row per failed case of an item under its row: the case's id, its first failure line and
    where, then "and N more"."""
    rows = []
    for f in item.get("failures") or ():
        at = f"{f.get('file')}:{f.get('line')}" if f.get("file") and f.get("line") else ""
        rows.append(f"<tr class='case'><td></td><td colspan='2'>FAILED</td><td colspan='2'><code class='case-id'>"
                    f"{_e(f.get('id'))}</code></td><td><code class='case-at'>{_e(at)}</code></td>"
                    f"<td><code class='case-message'>{_e(f.get('message'))}</code></td></tr>")
    if item.get("more_failures"):
        rows.append(f"<tr class='case more'><td></td><td colspan='6'>... and {_e(item['more_failures'])} more "
                    "failed cases</td></tr>")
    return rows


def page(title: str, doc: Mapping[str, Any], diffs: Mapping[str, str] | None = None) -> str:
    items: Sequence[Mapping[str, Any]] = doc.get("items", [])
    tally: dict[str, int] = {}
    for item in items:
        tally[item["verdict"]] = tally.get(item["verdict"], 0) + 1
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           *_facts(doc.get("run")),
           f"<p class='exit'>exit status {_e(doc.get('exit'))}</p>",
           "<p class='tally' id='tally'>" + "".join(
               f"<span class='v-{_e(v)}' style='background:{COLOURS.get(v, '#57606a')}'>{n} {_e(v)}</span>"
               for v, n in tally.items()) + (" no items" if not items else "") + "</p>",
           # A run that stopped before grading says why here (its --json `errors` / `reason`).
           *(f"<p class='error'>ERROR: {_e(p)}</p>" for p in doc.get("errors") or []),
           *([f"<p class='reason'>{_e(doc['reason'])}</p>"] if doc.get("reason") else []),
           "<table id='verdicts'><thead><tr><th>item</th><th>verdict</th><th>cause</th><th>counts</th>"
           "<th>time</th><th>evidence</th><th>reason</th></tr></thead><tbody>"]
    for item in items:
        seconds = item.get("seconds", item.get("duration_s"))
        out.append(f"<tr><td>{_e(item['id'])}</td>{_verdict_cell(item['verdict'])}<td>{_e(item.get('cause') or '')}</td>"
                   f"<td>{_e(_counts(item.get('counts') or {}))}</td>"
                   f"<td>{'' if seconds is None else f'{float(seconds):.2f}s'}</td>"
                   f"<td><code>{_e(_evidence(item.get('evidence')))}</code></td><td>{_e(item.get('reason') or '')}</td></tr>")
        out.extend(_case_rows(item))
    out.append("</tbody></table>")
    matrix = doc.get("matrix")
    if matrix and matrix.get("rows"):
        gates = list(matrix.get("gates", []))
        out.append("<h2>Mutations x gates</h2><table id='matrix'><thead><tr><th>mutation</th>" +
                   "".join(f"<th>{_e(g)}</th>" for g in gates) + "</tr></thead><tbody>")
        for mutation, row in matrix["rows"].items():
            cells = "".join(_verdict_cell(row[g]) if g in row else "<td>-</td>" for g in gates)
            out.append(f"<tr><td>{_e(mutation)}</td>{cells}</tr>")
        out.append("</tbody></table>")
    if diffs:
        out.append("<h2>Diffs</h2><div id='diffs'>")
        for mutation, text in diffs.items():
            out.append(f"<h3>{_e(mutation)}</h3><pre class='diff'>{_diff(text)}</pre>")
        out.append("</div>")
    out.append("</body></html>\n")
    return "\n".join(out)


def write(path: Path, title: str, doc: Mapping[str, Any], diffs: Mapping[str, str] | None = None) -> str:
    """Write the page; "" when written, else why not (the caller makes that a usage error, exit 2)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(title, doc, diffs), encoding="utf-8")
    except OSError as e:
        return f"cannot write the HTML report {path}: {e.strerror or e}"
    return ""
