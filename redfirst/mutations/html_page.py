"""`mutate --html` and `mutate merge --html`: one self-contained page, as Stryker's and PIT's
reports are laid out: the mutation score in total and per file, filters by outcome, each file's
source with every mutant inline at its line (its outcome, gates, reason and its diff with real
hunk headers), then the verdict table and the mutations x gates matrix. Offline: one inline style
and one inline script, nothing fetched when it is viewed."""

from __future__ import annotations

import html
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.html_report import COLOURS
from redfirst.mutations.engine import MutationResult
from redfirst.mutations.placed import Placed, anchor_diff, place, read_sources
from redfirst.mutations.testing_report import score
from redfirst.verdict import MutationOutcome

_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #1f2328; }
table { border-collapse: collapse; margin: 12px 0 24px; }
th, td { border: 1px solid #d0d7de; padding: 4px 8px; text-align: left; vertical-align: top; }
th { background: #f6f8fa; }
td.verdict, .badge { color: #fff; font-weight: 600; }
.badge { display: inline-block; padding: 0 6px; border-radius: 4px; margin-right: 6px; }
.tally span { display: inline-block; color: #fff; padding: 2px 8px; margin-right: 6px; border-radius: 4px; }
#filters label { margin-right: 12px; }
table.source { width: 100%; font: 13px/1.35 ui-monospace, monospace; }
table.source td { border: none; padding: 0 8px; white-space: pre; }
table.source td.n { color: #6e7781; text-align: right; user-select: none; width: 1%; }
table.source tr.hit td.n { font-weight: 700; }
table.source tr.mutant td { white-space: normal; background: #f6f8fa; border-left: 4px solid; padding: 4px 8px; }
table.source tr.mutant td.n { border: none; background: none; }
pre.diff { background: #fff; border: 1px solid #d0d7de; padding: 6px; margin: 4px 0; overflow-x: auto; }
.add { color: #1a7f37; } .del { color: #cf222e; } .hunk { color: #8250df; }
"""

# Filters: a box per outcome hides or shows its mutants; `#show=SURVIVED,ERROR` in the address
# starts with only those shown.
_SCRIPT = """
(function () {
  var boxes = document.querySelectorAll('#filters input');
  function apply() {
    var shown = {};
    boxes.forEach(function (b) { shown[b.value] = b.checked; });
    document.querySelectorAll('[data-outcome]').forEach(function (el) {
      el.hidden = !shown[el.getAttribute('data-outcome')];
    });
  }
  var m = /show=([A-Z_,]*)/.exec(location.hash);
  if (m) { var want = m[1].split(','); boxes.forEach(function (b) { b.checked = want.indexOf(b.value) >= 0; }); }
  boxes.forEach(function (b) { b.addEventListener('change', apply); });
  apply();
})();
"""


def _e(value: Any) -> str:
    return html.escape("" if value is None else str(value))


def _colour(outcome: str) -> str:
    return COLOURS.get(outcome, "#57606a")


def _score_text(outcomes: Sequence[str]) -> str:
    value = score(outcomes)
    return "n/a" if value is None else f"{value:.1f}%"


def _diff(text: str) -> str:
    lines = []
    for line in text.splitlines():
        cls = ("hunk" if line.startswith("@@") else "add" if line.startswith("+") and not line.startswith("+++")
               else "del" if line.startswith("-") and not line.startswith("---") else "")
        lines.append(f'<span class="{cls}">{_e(line)}</span>' if cls else _e(line))
    return "\n".join(lines)


def _mutant(item: Mapping[str, Any], diff: str, where: str = "") -> str:
    verdict = item["verdict"]
    gates = ", ".join(f"{g['gate']} {g['verdict']}" for g in (*item["gates"], *item["controls"])) or "no gate ran"
    return (f"<div class='m' id='m-{_e(item['id'])}'><span class='badge' style='background:{_colour(verdict)}'>"
            f"{_e(verdict)}</span><b>{_e(item['id'])}</b>{_e(where)} &middot; {_e(gates)}"
            f"<div class='reason'>{_e(item.get('reason') or '')}</div><pre class='diff'>{_diff(diff)}</pre></div>")


def _source_view(path: str, text: str, mutants: Sequence[tuple[Placed, Mapping[str, Any]]]) -> str:
    at_line: dict[int, list[tuple[Placed, Mapping[str, Any]]]] = {}
    for placed, item in mutants:
        at_line.setdefault(placed.start[0], []).append((placed, item))
    outcomes = [item["verdict"] for _, item in mutants]
    out = [f"<section class='file' data-file='{_e(path)}'><h3>{_e(path)} &middot; score "
           f"<span class='score'>{_score_text(outcomes)}</span> &middot; {len(mutants)} mutants</h3>"
           "<table class='source'><tbody>"]
    for n, line in enumerate(text.splitlines() or [""], 1):
        here = at_line.get(n, [])
        out.append(f"<tr class='{'hit' if here else 'line'}' id='{_e(path)}:{n}'><td class='n'>{n}</td>"
                   f"<td>{_e(line)}</td></tr>")
        for placed, item in here:
            out.append(f"<tr class='mutant' data-outcome='{_e(item['verdict'])}' style='border-color:"
                       f"{_colour(item['verdict'])}'><td class='n'></td><td style='border-color:"
                       f"{_colour(item['verdict'])}'>{_mutant(item, placed.diff, f' at {path}:{n}:{placed.start[1]}')}"
                       "</td></tr>")
    out.append("</tbody></table></section>")
    return "\n".join(out)


def page(title: str, doc: Mapping[str, Any], results: Sequence[MutationResult], root: Path) -> str:
    """The page of a run's document; `results` give each mutation's anchor, `root` its files as they are now."""
    items: Sequence[Mapping[str, Any]] = doc.get("items", [])
    by_id = {r.mutation.id: r for r in results}
    sources = read_sources(root, (r.mutation.file for r in results))
    placed = {r.mutation.id: place(r.mutation, sources) for r in results}
    tally: dict[str, int] = {}
    for item in items:
        tally[item["verdict"]] = tally.get(item["verdict"], 0) + 1
    outcomes = [item["verdict"] for item in items]
    out = [f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{_e(title)}</title>"
           f"<style>{_CSS}</style></head><body>",
           f"<h1>{_e(title)}</h1>",
           f"<p class='exit'>exit status {_e(doc.get('exit'))} &middot; {_e(time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime()))}"
           f" &middot; mutation score <b id='score'>{_score_text(outcomes)}</b> (KILLED of KILLED, SURVIVED "
           "and UNSCOPED)</p>",
           "<p class='tally' id='tally'>" + "".join(
               f"<span class='v-{_e(v)}' style='background:{_colour(v)}'>{n} {_e(v)}</span>"
               for v, n in tally.items()) + (" no items" if not items else "") + "</p>",
           *(f"<p class='error'>ERROR: {_e(p)}</p>" for p in doc.get("errors") or []),
           *([f"<p class='reason'>{_e(doc['reason'])}</p>"] if doc.get("reason") else []),
           "<p id='filters'>show: " + "".join(
               f"<label><input type='checkbox' value='{o.value}' checked> {o.value}</label>"
               for o in MutationOutcome if o.value in tally) + "</p>"]
    files: dict[str, list[tuple[Placed, Mapping[str, Any]]]] = {}
    unplaced: list[Mapping[str, Any]] = []
    for item in items:
        where = placed.get(item["id"])
        if where is None:
            unplaced.append(item)
        else:
            files.setdefault(by_id[item["id"]].mutation.file, []).append((where, item))
    if files:
        out.append("<h2>Files</h2><table id='files'><thead><tr><th>file</th><th>mutants</th><th>killed</th>"
                   "<th>survived</th><th>score</th></tr></thead><tbody>")
        for path, mutants in files.items():
            verdicts = [i["verdict"] for _, i in mutants]
            out.append(f"<tr><td>{_e(path)}</td><td>{len(verdicts)}</td><td>{verdicts.count(MutationOutcome.KILLED.value)}</td>"
                       f"<td>{verdicts.count(MutationOutcome.SURVIVED.value)}</td><td>{_score_text(verdicts)}</td></tr>")
        out.append("</tbody></table><h2>Source</h2><div id='sources'>")
        out.extend(_source_view(path, sources[path], mutants) for path, mutants in files.items())
        out.append("</div>")
    if unplaced:
        out.append("<h2>Not placed in a file</h2><p>Their anchor is not found once in the file as it is now.</p>"
                   "<div id='unplaced'>")
        out.extend(f"<div data-outcome='{_e(i['verdict'])}'>"
                   + _mutant(i, anchor_diff(by_id[i['id']].mutation) if i["id"] in by_id else "(no diff)") + "</div>"
                   for i in unplaced)
        out.append("</div>")
    out.append("<h2>Mutations</h2><table id='verdicts'><thead><tr><th>item</th><th>verdict</th><th>file</th>"
               "<th>time</th><th>evidence</th><th>reason</th></tr></thead><tbody>")
    for item in items:
        at = f"{item.get('file')}:{item.get('line')}" if item.get("line") else item.get("file")
        out.append(f"<tr data-outcome='{_e(item['verdict'])}'><td>{_e(item['id'])}</td><td class='verdict' "
                   f"style='background:{_colour(item['verdict'])}'>{_e(item['verdict'])}</td><td>{_e(at)}</td>"
                   f"<td>{float(item.get('seconds') or 0):.2f}s</td>"
                   f"<td><code>{_e(', '.join(str(v)[:12] for v in item.get('evidence') or []) or '-')}</code></td>"
                   f"<td>{_e(item.get('reason') or '')}</td></tr>")
    out.append("</tbody></table>")
    matrix = doc.get("matrix") or {}
    if matrix.get("rows"):
        gates = list(matrix.get("gates", []))
        out.append("<h2>Mutations x gates</h2><table id='matrix'><thead><tr><th>mutation</th>" +
                   "".join(f"<th>{_e(g)}</th>" for g in gates) + "</tr></thead><tbody>")
        for mutation, row in matrix["rows"].items():
            cells = "".join(f"<td class='verdict' style='background:{_colour(row[g])}'>{_e(row[g])}</td>"
                            if g in row else "<td>-</td>" for g in gates)
            out.append(f"<tr><td>{_e(mutation)}</td>{cells}</tr>")
        out.append("</tbody></table>")
    out.append(f"<script>{_SCRIPT}</script></body></html>\n")
    return "\n".join(out)


def write(path: Path, title: str, doc: Mapping[str, Any], results: Sequence[MutationResult], root: Path) -> str:
    """Write the page; "" when written, else why not (the caller makes that a usage error, exit 2)."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(page(title, doc, results, root), encoding="utf-8")
    except OSError as e:
        return f"cannot write the HTML report {path}: {e.strerror or e}"
    return ""
