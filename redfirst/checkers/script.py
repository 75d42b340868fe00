"""script: run a repository's own check script on the checked-out head and grade it, so a project
can move to redfirst one script at a time. The script is policy: it runs as the policy tree (the
merge base) holds it, with every module it imports; the head is the data it reads."""

from __future__ import annotations

import importlib.machinery
import os
import posixpath
import re
import sys
from pathlib import Path
from typing import Any

from redfirst import process, tempdirs
from redfirst.checkers.context import Context
from redfirst.checkers.model import CheckResult, Finding, Undecided, config_error, decide
from redfirst.checkers.tree import GIT_AS_COMMITTED, NotAFile, Tree

name = "script"
needs = "tree"
summary = "runs a repository's own check script (exit status and ERROR:/::error:: lines graded)"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"path": "tools/check_record.py", "args": ["{base}", "{head}"]}]],
    "items": {
        "type": "object",
        "required": ["path"],
        "additionalProperties": False,
        "properties": {
            "path": {"type": "string", "examples": ["tools/check_record.py"],
                     "description": "the script, relative to the repository root, as the merge base holds it"},
            "args": {"type": "array", "items": {"type": "string"}, "default": [], "examples": [["{base}", "{head}"]],
                     "description": "its arguments; `{base}` and `{head}` are the range's commits"},
            "interpreter": {"type": "string", "examples": ["python3"],
                            "description": "the program that runs it; unset: this Python for `.py`, else run "
                                           "directly"},
            "timeout": {"type": "number", "exclusiveMinimum": 0, "default": 600, "examples": [120],
                        "description": "seconds it may run before the check is NO_DECISION"},
        },
    },
}

BOOTSTRAP = Path(__file__).with_name("frombase.py")
PYTHON = re.compile(r"(?:.*[/\\])?python[0-9.]*(?:\.exe)?$")
SHEBANG_PYTHON = re.compile(rb"#![ \t]*(?:\S*/)?(?:env(?:[ \t]+-\S+)*[ \t]+)?python[0-9.]*(?:[ \t]|$)")
# What a script that is not Python may source or run: script languages, build files, Python code.
CODE_SUFFIXES = (".sh", ".bash", ".zsh", ".ksh", ".pl", ".pm", ".rb", ".js", ".mjs", ".cjs", ".ts", ".lua", ".tcl",
                 ".awk", ".sed", ".jq", ".mk", ".cmake", ".ps1", ".bat", ".cmd", *importlib.machinery.all_suffixes())
CODE_NAMES = ("Makefile", "makefile", "GNUmakefile", "CMakeLists.txt")
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
    unlike = ctx.unlike_head
    if unlike is not None:
        return (f"{unlike} in the working tree is not the head's blob (its .gitattributes' working-tree-encoding, "
                f"eol or ident, an assume-unchanged or skip-worktree edit, or a sparse checkout that left it out): "
                f"the script would judge those bytes, not the head's")
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
    interpreter = entry.get("interpreter") or (sys.executable if _python_script(path, ctx) else None)
    if interpreter is None or not PYTHON.match(interpreter):
        why = _code_changed(path, ctx)
        if why:
            return decide(check_id, [], [Undecided("script", why)])
        return _run(check_id, entry, [*([interpreter] if interpreter else []), str(ctx.root / path), *args], ctx)
    try:
        with tempdirs.folder("redfirst-policy-") as policy_dir:
            export_tree(_code_tree(ctx), Path(policy_dir))
            bootstrap = BOOTSTRAP.read_text(encoding="utf-8")
            return _run(check_id, entry, [interpreter, "-I", "-B", "-c", bootstrap, str(policy_dir), str(ctx.root), path,
                                          *args], ctx)
    except OSError as exc:  # no writable temporary folder: nothing was judged
        return config_error(check_id, f"{path}: cannot export the policy tree's code: {exc.strerror or exc}")


def _code_tree(ctx: Context) -> Tree:
    """Where the script's code comes from: the policy tree, or the head when the policy is taken from
    the head or a file on purpose (labelled as such)."""
    return ctx.head if ctx.policy_foreign else ctx.policy


def _python_script(path: str, ctx: Context) -> bool:
    """A script with no `interpreter:` is Python by its `.py` suffix or by its shebang line
    (`#!/usr/bin/env python3`, `#!/usr/bin/python3 -u`): run from the merge base like any `.py`."""
    if path.endswith(".py"):
        return True
    first = (ctx.head.read_bytes(path) or b"").split(b"\n", 1)[0]
    return SHEBANG_PYTHON.match(first.rstrip(b"\r")) is not None


def export_tree(tree: Tree, dest: Path) -> int:
    """Writes every regular file of `tree` under `dest` at its path (links and submodules are left
    out): the policy tree whole, so any file a Python script reads as code (by import, by a loader
    on its path, `runpy`, `exec` of its text) is there as the policy holds it, and a file the policy
    lacks is absent. The folder `frombase.py` maps the head's folders to. Returns the files written."""
    paths = list(tree.paths())
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


def code_for_a_program(path: str, changed: str, ctx: Context) -> bool:
    """Whether `changed` may be code to the script `path` that redfirst cannot hook (not Python):
    a file in its folder or any folder below it, or anywhere a file that looks like a program (a
    script-language or build-file name, an executable bit or a `#!` line at the head). The one rule
    behind NO_DECISION for such a script; a file it says False for is data."""
    folder = posixpath.dirname(path)
    if not folder or changed.startswith(folder + "/"):
        return True  # a script at the root: the whole repository is its folder tree
    name = posixpath.basename(changed)
    if name in CODE_NAMES or name.endswith(CODE_SUFFIXES):
        return True
    target = ctx.root / changed
    try:
        if target.stat().st_mode & 0o111:
            return True
        with target.open("rb") as fh:
            return fh.read(2) == b"#!"
    except OSError:
        return False  # deleted at the head: a deleted program has a program's name (above) or is data


def _code_changed(path: str, ctx: Context) -> str | None:
    """Why a script redfirst cannot hook (not Python) may not run: the range changed a file it may
    source or run as the head's, not as at the merge base (`code_for_a_program`)."""
    if ctx.kind != "range" or ctx.policy_foreign:
        return None
    code = [p for p in ctx.changed_paths if p != path and code_for_a_program(path, p, ctx)]
    if not code:
        return None
    return (f"{', '.join(code[:3])}{' ...' if len(code) > 3 else ''} changed in the range and may be code {path} "
            f"sources or runs: a script that is not Python would run it as the head's, not as at the merge base; "
            f"land it on its own first, or run with --policy-from head (labelled)")


def _run(check_id: str, entry: dict[str, Any], cmd: list[str], ctx: Context) -> CheckResult:
    """Run the script contained, as a gate's command is (`process.run`): what it starts and leaves running (a
    helper holding its output pipe, a daemon in a session of its own) is ended when it exits, so it neither
    holds the check until the timeout nor outlives it; its output goes to a file, never a pipe."""
    path = entry["path"]
    timeout = entry.get("timeout", 600)
    env = {**os.environ, **GIT_AS_COMMITTED, "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        with tempdirs.folder("redfirst-script-") as folder:
            out = Path(folder) / "output"
            ended = process.run(cmd, cwd=ctx.root, env=env, stdout=out, stderr=None, timeout=timeout)
            output = out.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:      # no writable temporary folder: nothing was judged
        return config_error(check_id, f"{path}: cannot keep its output: {exc.strerror or exc}")
    if not ended.started:
        return config_error(check_id, f"{path} could not start: {ended.start_error}")
    if ended.timed_out:
        return config_error(check_id, f"{path} ran past {timeout} s{ended.escape_note()}")
    return grade(check_id, path, -ended.signal if ended.signal is not None else ended.returncode or 0, output)


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
