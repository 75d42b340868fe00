"""env_documented: environment variables the code reads are documented, and documented ones are read."""

from __future__ import annotations

import re
from typing import Any

from redfirst.checkers.context import Context
from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.records import hidden
from redfirst.checkers.tree import Tree, regular, select

name = "env_documented"
needs = "tree"
summary = "every env var the code reads is documented and every documented one is read (with an allowlist)"
schema: dict[str, Any] = {
    "type": "object",
    "required": ["code", "docs", "names"],
    "additionalProperties": False,
    "examples": [{"code": ["src/**/*.cpp"], "docs": ["docs/env.md"], "names": "^VT_[A-Z0-9_]+$"}],
    "properties": {
        "code": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [["src/**/*.cpp"]],
                 "description": "globs of the code whose environment reads are collected"},
        "docs": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [["docs/env.md"]],
                 "description": "globs of the documents that must name each variable"},
        "names": {"type": "string", "format": "regex", "examples": ["^VT_[A-Z0-9_]+$"],
                  "description": "what a variable name of the project looks like"},
        "read": {"type": "string", "format": "regex", "examples": ["getenv\\(\"([A-Z_]+)\"\\)"],
                 "description": "a regex finding a read in code, group 1 the name; unset: getenv, os.environ "
                                "and similar reads"},
        "allowlist": {"type": "string", "examples": ["docs/env-allowlist.txt"],
                      "description": "a file of names exempt both ways, one a line (`#` comments), read with the "
                                     "policy"},
    },
}

READ = r"""(?:getenv|environ(?:\.get)?|GetEnv\w*|EnvFlag\w*)\s*[(\[]\s*["']([A-Z][A-Z0-9_]+)["']"""


_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.S)


def _unseen_blanked(path: str, text: str) -> str:
    """A markdown doc's HTML comments blanked (newlines kept): text no reader sees documents nothing."""
    if not path.endswith((".md", ".markdown")):
        return text
    return _HTML_COMMENT.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


def _occurrences(tree: Tree, files: list[str], rx: re.Pattern[str], group: int,
                 docs: bool = False) -> dict[str, tuple[str, int]]:
    found: dict[str, tuple[str, int]] = {}
    for path in files:
        text = tree.read(path) or ""
        for lineno, line in enumerate(git_lines(_unseen_blanked(path, text) if docs else text), start=1):
            for m in rx.finditer(line):
                found.setdefault(m.group(group), (path, lineno))
    return found


def inputs(config: dict[str, Any]) -> list[str]:
    """The allowlist when one is named (a project without it does not keep this rule), else the docs."""
    return [config["allowlist"]] if "allowlist" in config else list(config["docs"])


def check(config: dict[str, Any], ctx: Context) -> list[CheckResult]:
    code_files, code_refused = regular(ctx.head, select(ctx.head.paths(), config["code"]))
    doc_files, doc_refused = regular(ctx.head, select(ctx.head.paths(), config["docs"]))
    # What a link or submodule holds is neither read nor documented here: the rule cannot be judged.
    hid = hidden(ctx, [*config["code"], *config["docs"]])
    undecided = [Undecided("env-files", str(exc)) for exc in code_refused + doc_refused + hid]
    if not code_files:
        undecided.append(Undecided("env-read", f"no code file matches {', '.join(config['code'])}"))
    if not doc_files:
        undecided.append(Undecided("env-doc", f"no doc file matches {', '.join(config['docs'])}"))
    allow: set[str] = set()
    if "allowlist" in config:
        # Exemptions are policy: read where redfirst.yaml is (the merge base in range mode), so a
        # change cannot exempt the variable it starts reading.
        text = ctx.policy.read(config["allowlist"])
        if text is None:
            undecided.append(Undecided("env-allowlist", f"{config['allowlist']} is not in the tree at "
                                                        f"{ctx.policy.label}"))
        else:
            allow = {ln.strip() for ln in git_lines(text) if ln.strip() and not ln.startswith("#")}
    if undecided:
        return [decide(name, [], undecided)]
    names = re.compile(config["names"])
    read = _occurrences(ctx.head, code_files, re.compile(config.get("read", READ)), 1)
    read = {k: v for k, v in read.items() if names.fullmatch(k)}
    bare = names.pattern.strip("^$")
    documented = _occurrences(ctx.head, doc_files, re.compile(rf"(?<![A-Za-z0-9_])({bare})(?![A-Za-z0-9_])"), 1,
                              docs=True)
    findings = []
    for var, (path, line) in sorted(read.items()):
        if var not in documented and var not in allow:
            findings.append(Finding(path, line, "env-undocumented",
                                    f"{var} is read here but documented nowhere in {', '.join(config['docs'])}: "
                                    f"document it (or add it to the allowlist with a reason)"))
    for var, (path, line) in sorted(documented.items()):
        if var not in read and var not in allow:
            findings.append(Finding(path, line, "env-unread",
                                    f"{var} is documented but no code reads it: remove the stale entry"))
    return [decide(name, findings, counts={"read": len(read), "documented": len(documented)},
                   checked=len(read) + len(documented), what="variables")]
