"""The report of a run: one JSON document (the one serialisation of the results), and the
table for people and JUnit for CI read from it, as the GitHub and HTML reports are."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redfirst.clitools import JSON_VERSION
from redfirst.mutations.engine import MutationResult
from redfirst.mutations.outcome import GateSeen
from redfirst.verdict import EXIT_ERROR, EXIT_NO_DECISION, Cause, MutationOutcome, Verdict, all_passing


def _seen(d: Mapping[str, Any]) -> GateSeen:
    """A gate's run as the document holds it (MutationResult.record), to tell it as mutate does."""
    return GateSeen(d["gate"], Verdict(d["verdict"]), Cause(d["cause"]) if d["cause"] else None, d["reason"] or "",
                    dict(d["counts"] or {}), d["evidence"])


def _build_text(item: Mapping[str, Any]) -> str:
    if item["build"]["state"] == "none":
        return "gates" if item["gates"] or item["controls"] else "-"
    return str(item["build"]["state"])


def table(doc: Mapping[str, Any]) -> str:
    """The human table of a run, read from its document alone."""
    items = doc["items"]
    rows = [("mutation", "changed", "build", "outcome", "red gates", "controls")]
    for i in items:
        reds = "; ".join(_seen(g).brief() for g in i["gates"]) or "-"
        controls = "; ".join(f"{g['gate']} {g['verdict']}" for g in i["controls"]) or "-"
        rows.append((i["id"], i["diffstat"] or "-", _build_text(i), i["verdict"] + (" (cached)" if i["cached"] else ""),
                     reds, controls))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(row[:4], widths, strict=False)) + "  " + row[4] + "  | " + row[5]
             for row in rows]
    from redfirst import clitools

    for i in items:
        if i["verdict"] != MutationOutcome.KILLED.value or clitools.verbosity() > 0:   # -v: every reason
            lines.append(f"{i['id']}: {i['verdict']}: {i['reason']} ({i['source']})")
        for g in map(_seen, (*i["gates"], *i["controls"])):
            if g.reason and g.verdict is not Verdict.GREEN:
                lines.append(f"  {i['id']}: {g.describe()}")
    outcomes = [i["verdict"] for i in items]
    if all_passing(outcomes) and doc["exit"] == 0:    # never over an exit that is not a pass
        lines.append(f"All {len(items)} mutations KILLED")
    else:
        counts = {o.value: sum(1 for x in outcomes if x == o.value) for o in MutationOutcome}
        lines.append(", ".join(f"{n} {k}" for k, n in counts.items() if n) or "no mutations selected")
    lines.append(f"exit {doc['exit']}")
    return "\n".join(lines)


def document(results: Sequence[MutationResult], exit_code: int) -> dict[str, Any]:
    """The versioned --json document of a run: the one serialisation of the results (each item
    from `MutationResult.record`), which the table, JUnit, GitHub and HTML reports all read."""
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
            **({"lease": rec["lease"]} if "lease" in rec else {}),     # a leased worker's (redfirst.mutations.fleet)
        })
    matrix = {r.mutation.id: {g.gate_id: g.verdict.value for g in (*r.gates, *r.controls)} for r in results}
    return {"version": JSON_VERSION, "exit": exit_code, "items": items,
            "matrix": {"gates": gate_ids, "rows": matrix}}


def dumps(doc: Mapping[str, Any]) -> str:
    """The one JSON form of a mutation run's document (run, merge, promote)."""
    return json.dumps(doc, indent=1, sort_keys=False)


def write_junit(path: Path, doc: Mapping[str, Any]) -> None:
    """JUnit XML of a run, read from its document alone (`redfirst.junit`'s shape)."""
    from redfirst import junit

    items = doc["items"]
    suite = ET.Element("testsuite", name="mutate")
    failures = errors = 0
    for i in items:
        case = ET.SubElement(suite, "testcase", classname="mutate", name=i["id"], time=f"{i['seconds']:.3f}")
        if i["verdict"] == MutationOutcome.ERROR.value:
            errors += 1
            ET.SubElement(case, "error", type=i["verdict"], message=i["reason"]).text = i["reason"]
        elif i["verdict"] != MutationOutcome.KILLED.value:
            # DISCARDED is not a pass either: reported as a failure, never skipped.
            failures += 1
            ET.SubElement(case, "failure", type=i["verdict"], message=i["reason"]).text = i["reason"]
    # What the run or merge as a whole did not decide (a shard missing, a selection not covered):
    # an error of its own, or a CI reading only this file sees every item pass.
    problems = [*(doc.get("merge") or {}).get("problems", ()), *doc.get("errors", ())]
    if not problems and doc["exit"] != 0 and failures + errors == 0:
        problems = [str(doc.get("reason") or f"exit {doc['exit']} with every mutation KILLED")]
    junit.stopped_cases(suite, "mutate", problems,
                        (Verdict.NO_DECISION if doc["exit"] == EXIT_NO_DECISION else Verdict.ERROR).value)
    junit.write(path, suite)


@dataclass(frozen=True)
class SarifPlace:
    """Where and as what a mutant's item is a SARIF result: `rule` its operator, `column` 1-based,
    `text` what the operator does (the rule's description)."""

    rule: str
    column: int | None
    text: str


SURVIVED_RULE = SarifPlace("mutation-survived", None, "A mutation survived: every gate it ran against stayed GREEN.")
_HELP = ("No gate that builds or tests the file failed with the mutant in place: add a test that tells the code "
         "from the mutant, then `mutate promote KEY` (a sweep's survivor) keeps it as an anchored mutation; "
         "see docs/guide.md.")


def sarif(doc: Mapping[str, Any], places: Mapping[str, SarifPlace]) -> dict[str, Any]:
    """The SARIF 2.1.0 document of a run's or sweep's `doc`: each SURVIVED item a result (level
    warning) at its file and line, and its `places` entry's column and rule (a C/C++/CUDA
    mutant's operator, e.g. cxx_ge_to_lt), else rule mutation-survived. A caller may rely on
    this: every other item but a KILLED one (DISCARDED, ERROR, UNSCOPED: warning or error;
    EQUIVALENT, DUPLICATE: note) and every problem of the run is a notification, and
    executionSuccessful is false for an ERROR or exit 2: no undecided mutant reads as a clean scan."""
    from redfirst import clitools
    from redfirst import sarif as sarif_format

    results: list[sarif_format.Result] = []
    rules: dict[str, dict[str, Any]] = {}
    notes: list[tuple[str, str]] = []
    for i in doc["items"]:
        verdict = i["verdict"]
        if verdict == MutationOutcome.SURVIVED.value:
            place = places.get(i["id"], SURVIVED_RULE)
            rules[place.rule] = sarif_format.rule(place.rule, place.text, _HELP, "warning")
            results.append(sarif_format.Result(place.rule, i["file"], i["line"] or 1, i["reason"], "warning",
                                               place.column))
        elif verdict != MutationOutcome.KILLED.value:
            level = "error" if verdict == MutationOutcome.ERROR.value else "note" if verdict in (
                MutationOutcome.EQUIVALENT.value, MutationOutcome.DUPLICATE.value) else "warning"
            notes.append((level, f"{verdict} {i['id']} ({i['file']}:{i['line']}): {i['reason']}"))
    problems = [*(doc.get("merge") or {}).get("problems", ()), *doc.get("errors", ())]
    notes += [("error", str(p)) for p in problems]
    if doc["exit"] != 0 and not results and not notes:   # what the whole run did not decide, as write_junit
        notes.append(("error" if doc["exit"] == EXIT_ERROR else "warning",
                      str(doc.get("reason") or f"exit {doc['exit']} with every mutation KILLED")))
    failed = doc["exit"] == EXIT_ERROR or any(i["verdict"] == MutationOutcome.ERROR.value for i in doc["items"])
    return sarif_format.document("redfirst-mutate", clitools.version(), rules, results, notes, successful=not failed)


def write_sarif(path: Path, doc: Mapping[str, Any], places: Mapping[str, SarifPlace]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(sarif(doc, places), indent=2) + "\n", encoding="utf-8")
