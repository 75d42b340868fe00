"""doc_checkpoint: when files matching `when` change on the squashed shape, files `require` change too."""

from __future__ import annotations

from typing import Any

from checkers.context import Context
from checkers.model import CheckResult, Finding, decide
from checkers.tree import NotAFile, regular, select

name = "doc_checkpoint"
needs = "diff"
summary = "changing files matching X requires changing files Y in the same change (judged on base...head)"
_GLOBS = {"type": "array", "items": {"type": "string"}, "minItems": 1}
schema: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["when", "require"],
        "additionalProperties": False,
        "properties": {"when": _GLOBS, "require": _GLOBS, "mode": {"enum": ["all", "any"]}},
    },
}


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    changed = ctx.changed_paths
    return [_check_one(entry, changed, ctx) for entry in config]


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
