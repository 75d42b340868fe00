"""append_only: old lines of a file survive every change (insert mode) or stay its prefix (tail mode)."""

from __future__ import annotations

import bisect
import difflib
from typing import Any

from redfirst.checkers.context import Context
from redfirst.checkers.lines import byte_lines
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.tree import NotAFile

name = "append_only"
needs = "diff"
summary = "old lines survive, in order (insert) or as the prefix (tail), between base and head"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"path": "CHANGELOG.md"}, {"path": "docs/decisions.md", "mode": "tail"}]],
    "items": {
        "type": "object",
        "required": ["path"],
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string", "description": "the append-only file, relative to the repository root",
                     "examples": ["CHANGELOG.md"]},
            "mode": {"enum": ["insert", "tail"], "default": "insert", "examples": ["tail"],
                     "description": "`insert`: every old line survives, in order, new lines anywhere; `tail`: the old "
                                    "file stays the prefix, new lines only at the end"},
        },
    },
}

RULE = "append-only"


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [entry["path"] for entry in config]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    return [_check_one(entry["path"], entry.get("mode", "insert"), ctx) for entry in config]


def _check_one(path: str, mode: str, ctx: Context) -> CheckResult:
    check_id = f"{name}:{path}"
    assert ctx.base is not None
    try:
        old = ctx.base.read_bytes(path)
        new = ctx.head.read_bytes(path)
    except NotAFile as exc:
        return decide(check_id, [exc.finding()])
    if old is None and new is None:
        return decide(check_id, [], [Undecided(RULE, f"{path} is in neither {ctx.base.label} nor {ctx.head.label}")])
    if old is None:
        return decide(check_id, [], counts={"old_lines": 0}, checked=1, what=f"file (new since {ctx.base.label})")
    # Bytes split at LF, as `git diff` compares them: a CR, a U+2028 or an undecodable byte is part of its line.
    old_lines = _lines(old)
    if new is None:
        finding = Finding(path, 1, RULE, f"{path} was deleted or renamed; it is append-only: restore it from "
                                         f"{ctx.base.label}")
        return decide(check_id, [finding], counts={"old_lines": len(old_lines)})
    new_lines = _lines(new)
    # An old last line without its LF may gain one: appending after it does not edit it.
    variants = [old_lines] if old.endswith(b"\n") or not old_lines else \
        [old_lines, [*old_lines[:-1], old_lines[-1][:-1]]]
    for variant in variants:
        findings = edited_lines(path, variant, new_lines, ctx.base.label) if mode == "insert" \
            else _not_prefix(path, variant, new_lines, ctx.base.label)
        if not findings:
            break
    return decide(check_id, findings, counts={"old_lines": len(old_lines), "new_lines": len(new_lines)},
                  checked=len(old_lines), what=f"old lines ({mode} mode)")


def _lines(data: bytes) -> list[bytes]:
    """`byte_lines`, with a last line that lacks its LF kept apart (git's `\\ No newline at end of
    file`): no line holds an LF, so the marked line equals no LF-terminated one."""
    out = byte_lines(data)
    if out and not data.endswith(b"\n"):
        out[-1] += b"\n"
    return out


# Cells of difflib's matcher (old lines x new lines between the common prefix and suffix) it is given;
# past this its time grows with their product (hours on a large file of equal lines).
DIFF_BUDGET = 4_000_000
MAX_FINDINGS = 100


def edited_lines(path: str, old: list[bytes], new: list[bytes], base_label: str) -> list[Finding]:
    """Insert mode: every old line must still be present, in order; report where one was lost, in
    time linear in the lines beyond a small diff (a common prefix and suffix are kept lines)."""
    if _is_subsequence(old, new):
        return []
    lo = 0
    while lo < len(old) and lo < len(new) and old[lo] == new[lo]:
        lo += 1
    hi = 0
    while hi < len(old) - lo and hi < len(new) - lo and old[-1 - hi] == new[-1 - hi]:
        hi += 1
    a, b = old[lo:len(old) - hi], new[lo:len(new) - hi]
    lost = _diff_lost(a, b) if len(a) * len(b) <= DIFF_BUDGET else _greedy_lost(a, b)
    findings = []
    for tag, i1, i2, j1 in lost[:MAX_FINDINGS]:
        line = min(lo + j1 + 1, max(len(new), 1))
        what = f"line {lo + i1 + 1}" if i2 - i1 == 1 else f"lines {lo + i1 + 1}-{lo + i2}"
        findings.append(Finding(path, line, RULE,
                                f"{what} of {path} at {base_label} {tag} ({_snippet(old[lo + i1])}); the file is "
                                f"append-only: restore the old text and add new rows as new lines"))
    if len(lost) > MAX_FINDINGS:
        findings.append(Finding(path, findings[-1].line, RULE, f"and {len(lost) - MAX_FINDINGS} more places where "
                                                               f"old lines of {path} at {base_label} were lost"))
    return findings


def _diff_lost(old: list[bytes], new: list[bytes]) -> list[tuple[str, int, int, int]]:
    """(edited|removed, first old index, end, new index) of each run of old lines difflib finds lost."""
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    return [("edited" if tag == "replace" else "removed", i1, i2, j1)
            for tag, i1, i2, j1, _j2 in matcher.get_opcodes() if tag in ("replace", "delete")]


def _greedy_lost(old: list[bytes], new: list[bytes]) -> list[tuple[str, int, int, int]]:
    """The runs of old lines that an in-order earliest match leaves without a new line: each old
    line looked up by value in a position index, so time is linear (times a log) in the lines."""
    where: dict[bytes, list[int]] = {}
    for j, line in enumerate(new):
        where.setdefault(line, []).append(j)
    runs: list[tuple[str, int, int, int]] = []
    j = 0
    for i, line in enumerate(old):
        at = where.get(line, [])
        k = bisect.bisect_left(at, j)
        if k < len(at):
            j = at[k] + 1
        elif runs and runs[-1][2] == i:
            runs[-1] = (runs[-1][0], runs[-1][1], i + 1, runs[-1][3])
        else:
            runs.append(("removed or edited", i, i + 1, j))
    return runs


def _is_subsequence(old: list[bytes], new: list[bytes]) -> bool:
    """The rule itself (every old line kept, in order), exact where a diff heuristic is not."""
    rest = iter(new)
    return all(any(line == candidate for candidate in rest) for line in old)


def _not_prefix(path: str, old: list[bytes], new: list[bytes], base_label: str) -> list[Finding]:
    """Tail mode: the old content must be the exact prefix of the new one."""
    for i, line in enumerate(old):
        if i >= len(new) or new[i] != line:
            return [Finding(path, min(i + 1, max(len(new), 1)), RULE,
                            f"line {i + 1} of {path} at {base_label} changed ({_snippet(line)}); the file is "
                            f"append-only at its tail: restore the old lines and append after the last one")]
    return []


def _snippet(data: bytes) -> str:
    text = data.decode("utf-8", errors="replace").strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")
