"""doc_checkpoint: when files matching `when` change, files `require` change in the same change: on the
squashed shape (`base...head`), or in each commit (`per_commit: true`, optionally `first_parent: true`)."""

from __future__ import annotations

import re
from typing import Any

from redfirst.checkers.context import Context
from redfirst.checkers.model import CheckResult, Finding, decide
from redfirst.checkers.tree import NotAFile, regular, select

name = "doc_checkpoint"
needs = "diff"
summary = "changing files matching X requires changing files Y in the same change (base...head, or per commit)"
_GLOBS = {"type": "array", "items": {"type": "string"}, "minItems": 1}
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"when": ["redfirst/**/*.py"], "require": ["docs/guide.md"], "mode": "any"}]],
    "items": {
        "type": "object",
        "required": ["when", "require"],
        "additionalProperties": False,
        "properties": {
            "when": {**_GLOBS, "examples": [["src/**/*.py"]],
                     "description": "globs: a change touching a matching file triggers the rule"},
            "require": {**_GLOBS, "examples": [["docs/guide.md"]],
                        "description": "globs of files that must change in the same change"},
            "mode": {"enum": ["all", "any"], "default": "all", "examples": ["any"],
                     "description": "`all`: every `require` glob must see a change; `any`: one is enough"},
            "per_commit": {"type": "boolean", "default": False, "examples": [True],
                           "description": "judge each commit of the range, not the range's squashed diff"},
            "first_parent": {"type": "boolean", "default": False, "examples": [True],
                             "description": "with `per_commit`: only the commits on the head's first-parent line"},
        },
    },
}


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [p for entry in config for p in entry["require"]]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    changed = ctx.changed_paths
    return [_per_commit(entry, ctx) if entry.get("per_commit") else _check_one(entry, changed, ctx) for entry in config]


def _per_commit(entry: dict[str, Any], ctx: Context) -> CheckResult:
    """Each commit against its first parent (a merge too: what it brings to the line); a staged run
    is the one change being committed."""
    check_id = f"{name}:{_shown(entry['when'])}"
    if ctx.kind == "range" and ctx.since and ctx.head_sha:
        changes = commit_changes(ctx, ctx.since, ctx.head_sha, entry.get("first_parent", False))
    else:
        changes = [("staged change", ctx.changed_paths)]
    findings = []
    judged = 0
    for label, paths in changes:
        triggers = select(paths, entry["when"])
        if not triggers:
            continue
        judged += 1
        missing = [pattern for pattern in entry["require"] if not select(paths, [pattern])]
        if entry.get("mode", "all") == "any" and len(missing) < len(entry["require"]):
            continue
        shown = ", ".join(triggers[:3]) + ("..." if len(triggers) > 3 else "")
        findings += [Finding(label, 1, "doc-checkpoint", f"{shown} changed but {pattern.lstrip('/')} did not: "
                                                         f"update {pattern.lstrip('/')} in the same commit")
                     for pattern in missing]
    counts = {"commits": len(changes), "triggering_commits": judged}
    return decide(check_id, findings, counts=counts, checked=max(len(changes), 0), what="commits")


def _shown(globs: list[str]) -> str:
    return ",".join(globs[:3]) + (f",...(+{len(globs) - 3})" if len(globs) > 3 else "")


def commit_changes(ctx: Context, base: str, head: str, first_parent: bool) -> list[tuple[str, tuple[str, ...]]]:
    """(commit label, paths it changed against its first parent) for each commit of base..head, from one git log."""
    # --raw -z: a commit's id, then a `:modes ids status` field before each path. Fields are read by
    # position, never by their text: a path may hold any byte but NUL (an \x01, a leading LF, a
    # colon), so no path can be taken for a separator, an id or another path.
    # --root and --ignore-submodules=none: a root commit merged in and a submodule bump are changes
    # whatever the user's log.showRoot or diff.ignoreSubmodules say.
    args = ["-z", "--no-show-signature", "--format=%H", "--raw", "--no-abbrev", "--no-renames",
            "--diff-merges=first-parent", "--root", "--ignore-submodules=none"]
    out = ctx.repo.git.log(*args, *(["--first-parent"] if first_parent else []), f"{base}..{head}",
                           strip_newline_in_stdout=False)
    fields = out.split("\0")
    if fields and fields[-1] == "":
        fields.pop()
    changes: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(fields):
        field = fields[i].removeprefix("\n")
        if field.startswith(":") and changes:
            status = field.rsplit(" ", 1)[-1]
            n = 2 if status[:1] in ("R", "C") else 1  # a rename or copy names two paths
            changes[-1][1].extend(fields[i + 1:i + 1 + n])
            i += 1 + n
            continue
        if not re.fullmatch(r"[0-9a-f]{40,64}", field):
            raise ValueError(f"git log --raw printed {field[:60]!r} where a commit id belongs")
        changes.append((f"commit {field[:12]}", []))
        i += 1
    return [(label, tuple(paths)) for label, paths in changes]


def _check_one(entry: dict[str, Any], changed: tuple[str, ...], ctx: Context) -> CheckResult:
    check_id = f"{name}:{','.join(entry['when'])}"
    triggers = select(changed, entry["when"])
    counts = {"changed": len(changed), "triggers": len(triggers)}
    if not triggers:
        return decide(check_id, [], counts=counts, checked=1, what="changes (none matches `when`)")
    findings = []
    need_all = entry.get("mode", "all") == "all"
    # A required doc deleted by the change, or replaced by a link or submodule, was not updated by it.
    kept = set(ctx.head.paths())
    updated = tuple(p for p in regular(ctx.head, [p for p in changed if p in kept])[0] if _text_changed(ctx, p))
    missing = [pattern for pattern in entry["require"] if not select(updated, [pattern])]
    if (need_all and missing) or (not need_all and len(missing) == len(entry["require"])):
        shown = ", ".join(triggers[:3]) + ("..." if len(triggers) > 3 else "")
        for pattern in missing:
            findings.append(Finding(pattern, 1, "doc-checkpoint",
                                    f"{shown} changed but {pattern} did not: update {pattern} in the same change"))
    return decide(check_id, findings, counts=counts, checked=len(triggers), what="triggering changes")


def _text_changed(ctx: Context, path: str) -> bool:
    """A mode change alone (100644 -> 100755) is in `git diff --name-only`, yet the text is as it was."""
    try:
        before = ctx.base.read_bytes(path) if ctx.base is not None else None
    except NotAFile:
        return True  # a link or submodule at the base, a file now: its text is new
    return before != ctx.head.read_bytes(path)
