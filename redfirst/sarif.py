"""SARIF 2.1.0 documents as GitHub code scanning ingests them: the building blocks the checkers'
`--format sarif` and the mutations' `--sarif FILE` share (checkers may import only this layer,
and mutations may not import checkers)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

# GitHub code scanning refuses an upload with more results than this in a run.
MAX_RESULTS = 25000
SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


@dataclass(frozen=True)
class Result:
    """One located result: `file` relative to the repository root, `line` and `column` 1-based
    (column None: the whole line)."""

    rule: str
    file: str
    line: int
    message: str
    level: str = "error"
    column: int | None = None


def information_uri() -> str | None:
    """The project's home page from the installed package's metadata (pyproject's [project.urls]),
    or None: a made-up address is never written."""
    from importlib import metadata

    try:
        urls = metadata.metadata("redfirst").get_all("Project-URL") or []
    except metadata.PackageNotFoundError:
        return None
    found = [u.split(",", 1)[1].strip() for u in urls if "," in u]
    return next((u for u in found if u.startswith("https://")), None)


def rule(rule_id: str, text: str, help_text: str, level: str) -> dict[str, Any]:
    """A rule's `reportingDescriptor`: id, name, short and full description, help in text and
    Markdown, default level: every field GitHub's ingestion rules ask of one."""
    return {"id": rule_id, "name": "".join(p.title() for p in rule_id.replace("_", "-").split("-")),
            "shortDescription": {"text": text}, "fullDescription": {"text": text},
            "help": {"text": f"{text} {help_text}", "markdown": f"**{rule_id}**: {text}\n\n{help_text}"},
            "defaultConfiguration": {"level": level}}


def relative_uri(path: str) -> str:
    """A repository path as a SARIF `uri` relative to %SRCROOT%: its bytes percent-encoded. A caller may
    hand any name git stores: one that is not UTF-8 (read back with surrogate escapes, `bad\\udcff`) is
    encoded as the bytes it names (`bad%FF`), never a UnicodeEncodeError."""
    return quote(path.encode("utf-8", "surrogateescape"))


def document(tool: str, version: str, rules: Mapping[str, Mapping[str, Any]], results: Sequence[Result],
             notes: Sequence[tuple[str, str]], *, successful: bool, policy: str = "") -> dict[str, Any]:
    """One run's SARIF document. A caller may rely on this: nothing is dropped (results past
    MAX_RESULTS become an error notification saying how many), every result is located under
    %SRCROOT% and names a rule of `rules`, and `notes` ((level, text): what has no file to point
    at, a decision not made) are the invocation's notifications, so no reader sees a clean scan."""
    shown = list(results[:MAX_RESULTS])
    said = list(notes)
    if len(results) > MAX_RESULTS:
        said.append(("error", f"{len(results) - MAX_RESULTS} more results than GitHub takes in one run "
                              f"({MAX_RESULTS}); the JSON report lists them all"))
    ids = sorted({r.rule for r in shown})
    index = {rule_id: n for n, rule_id in enumerate(ids)}
    out = []
    for r in shown:
        region: dict[str, int] = {"startLine": max(r.line, 1)}
        if r.column is not None:
            region["startColumn"] = max(r.column, 1)
        out.append({"ruleId": r.rule, "ruleIndex": index[r.rule], "level": r.level,
                    "kind": "fail", "message": {"text": r.message},
                    "locations": [{"physicalLocation": {"artifactLocation": {"uri": relative_uri(r.file),
                                                                             "uriBaseId": "%SRCROOT%"},
                                                        "region": region}}]})
    driver: dict[str, Any] = {"name": tool, "version": version, "semanticVersion": version,
                              "rules": [dict(rules[rule_id]) for rule_id in ids]}
    uri = information_uri()
    if uri:
        driver["informationUri"] = uri
    invocation: dict[str, Any] = {
        "executionSuccessful": successful,
        "toolExecutionNotifications": [{"level": level, "message": {"text": text}} for level, text in said]}
    if policy:
        invocation["toolConfigurationNotifications"] = [{"level": "warning", "message": {"text": policy}}]
    run: dict[str, Any] = {"tool": {"driver": driver}, "invocations": [invocation], "results": out,
                           "originalUriBaseIds": {"%SRCROOT%": {"description": {"text": "the repository root"}}}}
    if policy:
        run["properties"] = {"policy": policy}
    return {"$schema": SCHEMA, "version": "2.1.0", "runs": [run]}
