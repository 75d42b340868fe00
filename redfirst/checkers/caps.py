"""caps: size caps on paragraphs, table cells and whole files."""

from __future__ import annotations

import re
from typing import Any

from redfirst.checkers.context import Context
from redfirst.checkers.lines import GIT_SPACE, is_blank
from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.markdown import TooLarge, tables
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.records import hidden, read_file
from redfirst.checkers.tree import select

name = "caps"
needs = "tree"
summary = "paragraph, table-cell and file-size caps"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"paths": ["docs/*.md"], "paragraph_chars": 1200, "file_bytes": 200000}]],
    "items": {
        "type": "object",
        "required": ["paths"],
        "additionalProperties": False,
        "properties": {
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [["docs/*.md"]],
                      "description": "globs of the files capped, relative to the repository root"},
            "paragraph_chars": {"type": "integer", "minimum": 1, "examples": [1200],
                                "description": "the most characters a paragraph may hold"},
            "cell_chars": {"type": "integer", "minimum": 1, "examples": [300],
                           "description": "the most characters a table cell may hold"},
            "file_bytes": {"type": "integer", "minimum": 1, "examples": [200000],
                           "description": "the most bytes a whole file may hold"},
        },
        # an entry without a cap would pass every file
        "anyOf": [{"required": ["paragraph_chars"]}, {"required": ["cell_chars"]}, {"required": ["file_bytes"]}],
    },
}


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [p for entry in config for p in entry["paths"]]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    results = []
    for entry in config:
        files = select(ctx.head.paths(), entry["paths"])
        findings: list[Finding] = []
        too_large: list[Undecided] = []
        for path in files:
            text, refused = read_file(ctx.head, path)
            try:
                findings.extend([refused.finding()] if refused else over_caps(path, text or "", entry))
            except TooLarge as exc:  # its cells cannot be read; its bytes and paragraphs were judged
                too_large.append(Undecided("caps", f"{path} is {exc}"))
        findings.extend(exc.finding() for exc in hidden(ctx, entry["paths"]))
        undecided = too_large if files else [Undecided("caps", f"no file matches {', '.join(entry['paths'])}")]
        results.append(decide(f"{name}:{','.join(entry['paths'])}", findings, undecided, {"files": len(files)},
                              len(files) - len(too_large), "files"))
    return results


_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")


def over_caps(path: str, text: str, cap: dict[str, Any]) -> list[Finding]:
    findings = []
    size = len(text.encode("utf-8"))
    if "file_bytes" in cap and size > cap["file_bytes"]:
        findings.append(Finding(path, 1, "cap-file", f"{size} bytes, over the {cap['file_bytes']}-byte cap: "
                                                     f"archive closed material or split the file"))
    if "paragraph_chars" in cap:
        start, chunk = 0, list[str]()
        for i, line in enumerate(git_lines(text) + [""], start=1):
            # Blank and indented as markdown reads them: a U+2028 or a form feed is text, not a break.
            # A heading is `#`s then a space (ATX); `#tag` at a line start is paragraph text.
            if not is_blank(line) and not line.lstrip(" \t").startswith(("|", "```")) and not _HEADING.match(line):
                if not chunk:
                    start = i
                chunk.append(line.strip(GIT_SPACE))
                continue
            para = " ".join(chunk)
            if len(para) > cap["paragraph_chars"]:
                findings.append(Finding(path, start, "cap-paragraph",
                                        f"paragraph of {len(para)} characters, over the {cap['paragraph_chars']} cap: "
                                        f"cut it, or move detail to a linked record"))
            chunk = []
    # A cell is part of one line: a file with no line over the cap has no cell over it, and is not parsed.
    if "cell_chars" in cap and any(len(line) > cap["cell_chars"] for line in git_lines(text)):
        for table in tables(text):
            for row in table.rows:
                for cell in row.cells:
                    if len(cell.text) > cap["cell_chars"]:
                        findings.append(Finding(path, row.line, "cap-cell",
                                                f"table cell of {len(cell.text)} characters, over the "
                                                f"{cap['cell_chars']} cap: keep the cell to anchors and move prose "
                                                f"to the spec or ledger"))
    return findings
