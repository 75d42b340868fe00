"""Renderers: text, JSON (versioned), SARIF 2.1.0 and GitHub annotations plus a step summary."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Sequence
from typing import Any

from redfirst import clitools, scrub
from redfirst import sarif as sarif_format
from redfirst.checkers.model import CheckResult, Finding
from redfirst.verdict import Verdict, all_passing

JSON_VERSION = 1
FORMATS = ("text", "json", "sarif", "github")


def scrubbed(results: list[CheckResult], names: Sequence[str] = ()) -> list[CheckResult]:
    """`results` with every form of every secret of the environment (`scrub.secret_values`: secret-looking
    names, the project's own `names` (`projectconfig.secret_names`), URL passwords) replaced in each reason,
    finding (file, message) and undecided rule. A finding quotes the repository's text (an old line, a commit
    subject) and the reports are stored (SARIF uploaded to code scanning, the step summary, CI logs): a caller
    that prints or writes only what this returns stores no secret of the run, as the gates' records do not."""
    secrets = scrub.secret_values(os.environ, extra_names=names)
    if not secrets:
        return results

    def text(value: str) -> str:
        return scrub.scrub_text(value, secrets)

    return [dataclasses.replace(
        r, reason=text(r.reason),
        findings=tuple(dataclasses.replace(f, file=text(f.file), message=text(f.message)) for f in r.findings),
        undecided=tuple(dataclasses.replace(u, missing=text(u.missing)) for u in r.undecided)) for r in results]


def is_file(finding: Finding) -> bool:
    """Commit findings name a commit (`commit 1a2b...`), not a file of the tree."""
    return not finding.file.startswith("commit ")


def closing_line(results: Sequence[CheckResult]) -> str:
    if all_passing(r.verdict for r in results):
        return f"All {len(results)} checks green"
    tally = {v: sum(r.verdict is v for r in results) for v in Verdict}
    parts = [f"{n} {v.value}" for v, n in tally.items() if n]
    return f"{len(results)} checks: " + ", ".join(parts) if results else "0 checks selected"


one_line = clitools.one_line   # the shared printer of one line (a path, a message, a reason)


def text(results: Sequence[CheckResult], note: str = "") -> str:
    out: list[str] = [f"NOTE: {one_line(note)}"] if note else []
    for r in results:
        out.extend(f"{one_line(f.file)}:{f.line}: {f.rule}: {one_line(f.message)}" for f in r.findings)
    for r in results:
        if clitools.verbosity() < 0 and r.verdict is Verdict.GREEN:
            continue   # -q: the findings, what is not GREEN, the closing line
        head = f"{r.verdict.value:<11} {one_line(r.id)}"
        out.append(f"{head}: {one_line(r.reason)}" if r.reason else head)
        if clitools.verbosity() > 0 and r.counts:   # -v: what each check counted
            out.append(" " * 12 + ", ".join(f"{k} {v}" for k, v in sorted(r.counts.items())))
    out.append(closing_line(results))
    return "\n".join(out)


def to_json(results: Sequence[CheckResult], exit_status: int, note: str = "") -> str:
    doc: dict[str, Any] = {"version": JSON_VERSION, "exit": exit_status}
    if note:  # a policy from --config or the head: a reader of the document must see it
        doc["policy"] = {"from_merge_base": False, "note": note}
    doc["items"] = [_item(r) for r in results]
    return json.dumps(doc, indent=2)


def _item(r: CheckResult) -> dict[str, Any]:
    return {
        "id": r.id, "kind": "checker", "verdict": r.verdict.value, "cause": r.cause.value if r.cause else None,
        "reason": r.reason, "counts": dict(r.counts), "requires": {}, "evidence": None,   # the output schema's keys
        "findings": [{"file": f.file, "line": f.line, "rule": f.rule, "message": f.message} for f in r.findings],
        "undecided": [{"rule": u.rule, "missing": u.missing} for u in r.undecided],
    }


# GitHub code scanning refuses an upload with more results than this in a run.
MAX_RESULTS = sarif_format.MAX_RESULTS


def sarif_split(results: Sequence[CheckResult]) -> tuple[list[Finding], list[tuple[str, str]]]:
    """The one place that decides what SARIF holds as results: (the findings that are results,
    (level, text) of everything else). GitHub code scanning needs a file location for each result
    and takes at most MAX_RESULTS a run, so a commit finding, a check's NO_DECISION or ERROR and
    the findings past the limit go to the run's notifications and stderr instead. A caller may
    rely on: nothing is dropped; whatever is not a result is a line of the second list."""
    located = [f for r in results for f in r.findings if is_file(f)]
    notes: list[tuple[str, str]] = []
    for r in results:
        notes += [("error", f"{f.file}: {f.rule}: {f.message}") for f in r.findings if not is_file(f)]
        if r.verdict is Verdict.NO_DECISION:
            notes.append(("warning", f"NO_DECISION {r.id}: {r.reason}"))
        elif r.verdict is Verdict.ERROR:
            notes.append(("error", f"ERROR {r.id}: {r.reason}"))
    if len(located) > MAX_RESULTS:
        notes.append(("error", f"{len(located) - MAX_RESULTS} more findings than GitHub takes in one run "
                               f"({MAX_RESULTS}); --format json lists them all"))
    return located[:MAX_RESULTS], notes


def sarif(results: Sequence[CheckResult], note: str = "") -> str:
    from redfirst.checkers.rule_help import describe
    from redfirst.clitools import version

    located, unlocated = sarif_split(results)
    found = [sarif_format.Result(f.rule, f.file, f.line, f.message) for f in located]
    doc = sarif_format.document("redfirst-checkers", version(), {f.rule: describe(f.rule) for f in located},
                                found, unlocated, policy=note,
                                # a check that errored or could not decide did not do its job: never a clean scan
                                successful=not any(r.verdict in (Verdict.ERROR, Verdict.NO_DECISION) for r in results))
    return json.dumps(doc, indent=2)


def escape_data(value: str) -> str:
    return value.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(value: str) -> str:
    return escape_data(value).replace(":", "%3A").replace(",", "%2C")


def github(results: Sequence[CheckResult], note: str = "") -> str:
    lines: list[str] = [f"::warning title=redfirst policy::{escape_data(note)}"] if note else []
    for r in results:
        for f in r.findings:
            where = f"file={escape_property(f.file)},line={max(f.line, 1)}," if is_file(f) else ""
            message = f.message if is_file(f) else f"{f.file}: {f.message}"
            lines.append(f"::error {where}title={escape_property(f.rule)}::{escape_data(message)}")
        if r.verdict is Verdict.NO_DECISION:
            lines.append(f"::warning title={escape_property('NO_DECISION ' + r.id)}::{escape_data(r.reason)}")
        elif r.verdict is Verdict.ERROR:
            lines.append(f"::error title={escape_property('ERROR ' + r.id)}::{escape_data(r.reason)}")
    lines.append(closing_line(results))
    return "\n".join(lines)


def step_summary(results: Sequence[CheckResult], note: str = "") -> str:
    rows = ["| check | verdict | findings | reason |", "|---|---|---:|---|"]
    head = f"**{note}**\n\n" if note else ""
    for r in results:
        reason = one_line(r.reason).replace("|", "\\|")
        rows.append(f"| `{one_line(r.id)}` | {r.verdict.value} | {len(r.findings)} | {reason} |")
    return "### redfirst checkers\n\n" + head + "\n".join(rows) + f"\n\n{closing_line(results)}\n"


def write_step_summary(results: Sequence[CheckResult], note: str = "") -> None:
    """Under GitHub Actions, append the table to $GITHUB_STEP_SUMMARY when it is set."""
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if os.environ.get("GITHUB_ACTIONS") == "true" and path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(step_summary(results, note))


def render(results: Sequence[CheckResult], fmt: str, exit_status: int, note: str = "") -> str:
    """`note` (a policy not read from the merge base) is shown in every format."""
    if fmt == "json":
        return to_json(results, exit_status, note)
    if fmt == "sarif":
        return sarif(results, note)
    if fmt == "github":
        return github(results, note)
    return text(results, note)
