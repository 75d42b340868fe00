"""script: run a repository's own check script on the checked-out head and grade it, so a project
can move to redfirst one script at a time. The script is policy: it runs as the policy tree (the
merge base) holds it, with every module it imports; the head is the data it reads."""

from __future__ import annotations

import importlib.machinery
import os
import posixpath
import re
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from redfirst.checkers.context import Context
from redfirst.checkers.model import CheckResult, Finding, Undecided, config_error, decide
from redfirst.checkers.tree import NotAFile, Tree

name = "script"
needs = "tree"
summary = "runs a repository's own check script (exit status and ERROR:/::error:: lines graded)"
schema: dict[str, Any] = {
    "type": "array",
    "items": {
        "type": "object",
        "required": ["path"],
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string"},  # the script, relative to the repository root
            "args": {"type": "array", "items": {"type": "string"}},  # {base} and {head} are the range's commits
            "interpreter": {"type": "string"},  # default: this Python for .py, else run directly
            "timeout": {"type": "number", "exclusiveMinimum": 0},
        },
    },
}

BOOTSTRAP = Path(__file__).with_name("frombase.py")
PYTHON = re.compile(r"(?:.*[/\\])?python[0-9.]*(?:\.exe)?$")
IMPORTABLE = tuple(importlib.machinery.all_suffixes())
ERROR_LINE = re.compile(r"^(?:ERROR:\s*|::error(?: [^:]*)?::)(.*)$")
WHERE = re.compile(r"^([\w./-]+):(\d+):\s*(.*)$")


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [entry["path"] for entry in config]


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    return [_check_one(entry, ctx) for entry in config]


def _checked_out_head(ctx: Context) -> str | None:
    """None when the working tree is the judged head, unmodified; else why the script cannot run."""
    if ctx.kind == "staged":
        return "a staged run judges the index, which a script reading the working tree cannot see"
    state = ctx.worktree
    if isinstance(state, str):
        return state
    at, dirty = state
    if ctx.head_sha and at != ctx.head_sha:
        return f"the working tree is at {at[:12]}, not the head {ctx.head_sha[:12]}: check the head out"
    if dirty:
        return "the working tree has uncommitted changes: the script would judge them, not the head"
    return None


def _rewritten(path: str, ctx: Context) -> str | None:
    """Why the head's script is not the rule: the policy tree (the merge base) holds other bytes at
    `path`. The script is the rule, so a change that rewrites it cannot also be judged by it."""
    if ctx.policy is ctx.head or ctx.policy_foreign:
        return None  # no base, or a policy taken from the head or a file on purpose (labelled)
    try:
        before = ctx.policy.read_bytes(path)
    except NotAFile:
        before = None
    if before == ctx.head.read_bytes(path):
        return None
    state = "added" if before is None else "changed"
    return (f"{path} {state} between {ctx.policy.label} and {ctx.head.label}: the rule would judge the change "
            f"that rewrote it; land the script on its own first, or run with --policy-from head (labelled)")


def _in_repository(program: str | None, ctx: Context) -> list[str]:
    """The repository path an `interpreter:` names when it is a file of the repository (a path with a
    folder, relative to the root or absolute inside it): code like the script, pinned the same way."""
    if not program or "/" not in program.replace(os.sep, "/"):
        return []  # a bare name, found on PATH
    root = ctx.root.resolve()
    target = (ctx.root / program).resolve()
    if target != root and root not in target.parents:
        return []
    return [target.relative_to(root).as_posix()]


def _check_one(entry: dict[str, Any], ctx: Context) -> CheckResult:
    path = entry["path"]
    check_id = f"{name}:{path}"
    try:
        present = ctx.head.read_bytes(path) is not None
    except Exception:  # noqa: BLE001 - a link or submodule: not a script redfirst will run
        present = False
    if not present:
        return decide(check_id, [], [Undecided("script", f"{path} is not a file at {ctx.head.label}")])
    named = [path, *_in_repository(entry.get("interpreter"), ctx)]
    why = next(filter(None, (_rewritten(p, ctx) for p in named)), None) or _checked_out_head(ctx)
    if why:
        return decide(check_id, [], [Undecided("script", why)])
    args = [a.format(base=ctx.base_sha or "", head=ctx.head_sha or "") for a in entry.get("args", [])]
    interpreter = entry.get("interpreter") or (sys.executable if path.endswith(".py") else None)
    if interpreter is None or not PYTHON.match(interpreter):
        why = _sources_changed(path, ctx)
        if why:
            return decide(check_id, [], [Undecided("script", why)])
        return _run(check_id, entry, [*([interpreter] if interpreter else []), str(ctx.root / path), *args], ctx)
    try:
        with tempfile.TemporaryDirectory(prefix="redfirst-policy-") as policy_dir:
            export_code(_code_tree(ctx), path, Path(policy_dir))
            bootstrap = BOOTSTRAP.read_text(encoding="utf-8")
            return _run(check_id, entry, [interpreter, "-I", "-B", "-c", bootstrap, policy_dir, str(ctx.root), path,
                                          *args], ctx)
    except OSError as exc:  # no writable temporary folder: nothing was judged
        return config_error(check_id, f"{path}: cannot export the policy tree's code: {exc.strerror or exc}")


def _code_tree(ctx: Context) -> Tree:
    """Where the script's code comes from: the policy tree, or the head when the policy is taken from
    the head or a file on purpose (labelled as such)."""
    return ctx.head if ctx.policy_foreign else ctx.policy


def export_code(tree: Tree, script: str, dest: Path) -> int:
    """Writes `script` and every file of `tree` Python can import (by suffix: source, bytecode,
    extension modules) under `dest` at its path; links and submodules are left out (nothing to
    import from). The folder `frombase.py` maps the head's folders to. Returns the files written."""
    paths = [p for p in tree.paths() if p == script or p.endswith(IMPORTABLE)]
    prefetch = getattr(tree, "prefetch", None)
    if prefetch is not None:
        prefetch(paths)
    written = 0
    for rel in paths:
        try:
            data = tree.read_bytes(rel)
        except NotAFile:
            continue
        if data is None:
            continue
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        written += 1
    return written


def _sources_changed(path: str, ctx: Context) -> str | None:
    """Why a script redfirst cannot hook (not Python) may not run: the range changed a file in its
    folder, which it may source or execute as the head's, not as the merge base's."""
    if ctx.kind != "range" or ctx.policy_foreign:
        return None
    folder = posixpath.dirname(path)
    beside = [p for p in ctx.changed_paths if p != path and posixpath.dirname(p) == folder]
    if not beside:
        return None
    return (f"{', '.join(beside[:3])}{' ...' if len(beside) > 3 else ''} changed beside {path} in the range: a "
            f"script that is not Python may run it as the head's, not as at the merge base; land it on its own "
            f"first, or run with --policy-from head (labelled)")


def _run(check_id: str, entry: dict[str, Any], cmd: list[str], ctx: Context) -> CheckResult:
    path = entry["path"]
    try:
        proc = subprocess.run(cmd, cwd=ctx.root, capture_output=True, text=True, errors="replace",
                              timeout=entry.get("timeout", 600), env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    except subprocess.TimeoutExpired:
        return config_error(check_id, f"{path} ran past {entry.get('timeout', 600)} s")
    except OSError as exc:
        return config_error(check_id, f"{path} could not start: {exc.strerror or exc}")
    return grade(check_id, path, proc.returncode, proc.stdout + proc.stderr)


def grade(check_id: str, path: str, status: int, output: str) -> CheckResult:
    """Exit 0 and no error line: GREEN. An error line is a finding (at its `file:line:` when it names
    one); a failing exit with none is one finding saying so. A signal is ERROR, never a verdict."""
    if status < 0:
        return config_error(check_id, f"{path} was killed by signal {-status}")
    findings = []
    for line in dict.fromkeys(output.splitlines()):
        m = ERROR_LINE.match(line)
        if not m:
            continue
        where = WHERE.match(m[1])
        findings.append(Finding(where[1], int(where[2]), "script", where[3]) if where
                            else Finding(path, 1, "script", m[1]))
    if status != 0 and not findings:
        tail = output.strip().splitlines()[-1:] or ["(no output)"]
        findings.append(Finding(path, 1, "script", f"exit status {status}: {tail[0][:300]}"))
    return decide(check_id, findings, counts={"exit": status}, checked=1, what="script runs")
