"""specs: every spec file has the required `## ` sections, each with real content under it."""

from __future__ import annotations

import re
from typing import Any

from redfirst.checkers import spec_fields
from redfirst.checkers.context import Context
from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.markdown import Section, TooLarge, sections, visible_text
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.records import read_file, removed
from redfirst.checkers.tree import select

name = "specs"
needs = "tree"
summary = "required `## ` sections with real content (not a placeholder) in every spec"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"glob": "specs/*.md", "sections": ["Goal", "Design", "Tests"]}]],
    "items": {
        "type": "object",
        "required": ["glob", "sections"],
        "additionalProperties": False,
        "properties": {
            "glob": {"type": "string", "examples": ["specs/*.md"], "description": "the spec files, a glob"},
            "sections": {"type": "array", "items": {"type": "string"}, "minItems": 1,
                         "examples": [["Goal", "Design", "Tests"]],
                         "description": "the `## ` sections each spec must have, each with real content"},
            "placeholder": {"type": "string", "format": "regex", "examples": ["(?i)^(tbd|todo)$"],
                            "description": "content that counts as none; unset: TBD, TODO, n/a, ... and the like"},
        },
    },
}

PLACEHOLDER = r"(?i)^(tbd|tba|todo|n/?a|none|placeholder|fill (me |this )?in|coming soon|\.\.\.|…|-+|\?+)\.?$"


def normalize(title: str) -> str:
    """`Risks / decisions`, `Risks and decisions` and `risks & decisions` name one section."""
    words = re.sub(r"[^a-z0-9]+", " ", title.lower().replace("&", " ")).split()
    return " ".join(w for w in words if w != "and")


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [entry["glob"] for entry in config]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    return [_check_glob(entry, ctx) for entry in config]


def _check_glob(entry: dict[str, Any], ctx: Context) -> CheckResult:
    pattern = entry["glob"]
    placeholder = re.compile(entry.get("placeholder", PLACEHOLDER))
    files = select(ctx.head.paths(), [pattern])
    findings: list[Finding] = []
    too_large: list[Undecided] = []
    for path in files:
        text, refused = read_file(ctx.head, path)
        if refused:
            findings.append(refused.finding())
            continue
        try:
            findings.extend(missing_sections(path, text or "", entry["sections"], placeholder))
        except TooLarge as exc:
            too_large.append(Undecided("spec-sections", f"{path} is {exc}"))
    # A spec the change deleted, renamed or moved under a link is judged too, never just left out.
    base_files = select(ctx.base.paths(), [pattern]) if ctx.base is not None else []
    findings.extend(f for p in base_files if p not in files and (f := removed(ctx, p, "spec-removed", "spec")))
    undecided = too_large if files or findings else [Undecided("spec-sections", f"no file matches {pattern} at "
                                                                                  f"{ctx.head.label}")]
    judged = len(files) - len(too_large)
    return decide(f"{name}:{pattern}", findings, undecided, {"files": len(files)}, judged, "spec files")


def missing_sections(path: str, text: str, required: list[str], placeholder: re.Pattern[str]) -> list[Finding]:
    found: dict[str, list[Section]] = {}
    for section in sections(text, 2):
        found.setdefault(normalize(section.title), []).append(section)
    findings = []
    for title in required:
        same = found.get(normalize(title), [])
        if not same:
            findings.append(Finding(path, 1, "spec-section",
                                    f"missing `## {title}` section: add it with the {title.lower()} of this spec"))
        # Every section of the name is judged: a second, full one does not cover an empty first.
        findings.extend(Finding(path, section.line, "spec-content",
                                f"`## {section.title}` has no real content (empty or a placeholder): "
                                f"write the {title.lower()} under it")
                        for section in same if not has_content(section.body, placeholder))
    return findings


# A line that only promises content: TBD leading a note, a bare WIP, "to be decided", or a TODO to fill it in.
_PROMISE = re.compile(r"(?i)^(?:(?:tbd|tba)\b|wip\W*$|to be (?:determined|decided|defined|written|added|filled in)\b|"
                      r"(?:todo|fixme)\b\W*(?:(?:fill|write|add)(?: (?:me|this|it))?(?: in)?(?: later)?)?\W*$)")


def _table_values(body: str) -> str:
    """A table read as its values: a header row and a separator announce a table but are none of it,
    and a row's first cell labels the values after it (`| unit | TBD |` holds only TBD)."""
    lines = git_lines(body)
    # the next non-blank line after each one, from one pass back to front (a slice of the rest per
    # table line made a long table cost the square of its rows)
    following_of = [""] * len(lines)
    after = ""
    for i in range(len(lines) - 1, -1, -1):
        following_of[i] = after
        after = lines[i].strip() or after
    out = []
    for i, line in enumerate(lines):
        if not line.strip().startswith("|"):
            out.append(line)
            continue
        following = following_of[i]
        if spec_fields.is_separator(line) or (following.startswith("|") and spec_fields.is_separator(following)):
            continue
        cells = spec_fields.cells(line)
        out.extend(cells[1:] if len(cells) >= 2 else cells)
    return "\n".join(out)


def has_content(body: str, placeholder: re.Pattern[str]) -> bool:
    # Judged as rendered: markup that shows nothing (`&nbsp;`, a zero-width space, a link
    # definition) is not content, and a sub-heading announces content but is none.
    words = [re.sub(r"^[\s>*+\-#|`_]+|[\s*`_|]+$", "", line) for line in git_lines(visible_text(_table_values(body)))]
    lines = [w for w in words if w]
    text = " ".join(lines).strip()
    if not text or placeholder.match(text):
        return False
    return not all(_placeholder_line(line, placeholder) for line in lines)


def _placeholder_line(line: str, placeholder: re.Pattern[str]) -> bool:
    bare = re.sub(r"^[\s(\[<{]+|[\s)\]>}.!:]+$", "", line)
    return bool(placeholder.match(line) or placeholder.match(bare) or _PROMISE.match(bare))
