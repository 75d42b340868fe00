"""trailers: required, forbidden and conditional trailers, parsed by git, over every commit of the range."""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import git

from redfirst.checkers.commits import Commit, clean_merge
from redfirst.checkers.context import Context
from redfirst.checkers.lines import visible
from redfirst.checkers.lookalike import latin
from redfirst.checkers.model import CheckResult, Finding, decide

name = "trailers"
needs = "commits"
summary = "required / forbidden / conditional commit trailers (git's own trailer parsing), merges skipped"
_REGEX_MAP = {"type": "object", "additionalProperties": {"type": "string", "format": "regex"}}
schema: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "examples": [{"require": {"Signed-off-by": ".+@.+"}, "forbid": ["Co-authored-by"]}],
    "properties": {
        "require": {**_REGEX_MAP, "examples": [{"Signed-off-by": ".+@.+"}],
                    "description": "trailer key -> regex: each commit needs at least one such trailer whose value "
                                   "matches"},
        "forbid": {"type": "array", "items": {"type": "string"}, "default": [], "examples": [["Co-authored-by"]],
                   "description": "trailer keys that must not appear"},
        "forbid_in": {**_REGEX_MAP, "examples": [{"Signed-off-by": "root@"}],
                      "description": "trailer key -> regex no value may match (forbidden identities)"},
        "when": {  # conditional: a message matching `message` (or carrying trailer `trailer`) requires more
            "type": "array", "default": [], "examples": [[{"message": "^fix", "require": {"Fixes": "#[0-9]+"}}]],
            "description": "conditional rules: a message matching `message`, or carrying `trailer`, needs more",
            "items": {
                "type": "object",
                "required": ["require"],
                "additionalProperties": False,
                "properties": {
                    "message": {"type": "string", "format": "regex", "examples": ["^fix"],
                                "description": "a regex on the whole message that triggers the rule"},
                    "trailer": {"type": "string", "examples": ["Reviewed-by"],
                                "description": "a trailer key whose presence triggers the rule"},
                    "require": {**_REGEX_MAP, "examples": [{"Fixes": "#[0-9]+"}],
                                "description": "trailer key -> regex the triggered commit must then carry"}},
            },
        },
        "include_merges": {"type": "boolean", "default": False, "examples": [True],
                           "description": "judge every merge commit too; false skips a merge whose tree is git's own "
                                          "merge of its parents (a merge carrying an edit is judged). Unset under "
                                          "`first_parent`, a merge is judged: it stands for the commits it brings in"},
        "first_parent": {"type": "boolean", "default": False, "examples": [True],
                         "description": "only the commits on the head's first-parent line (a merged-in branch's "
                                        "commits are the merge's)"},
        "message_require": {"type": "array", "items": {"type": "string", "format": "regex"}, "minItems": 1,
                            "examples": [["^Issue: [0-9]+$"]],
                            "description": "regexes every judged message must contain somewhere, matched per line"},
    },
    # a policy without a rule would pass every commit
    "anyOf": [{"required": ["require"]}, {"required": ["forbid"]}, {"required": ["forbid_in"]}, {"required": ["when"]},
              {"required": ["message_require"]}],
}


def trailer_keys(config: dict[str, Any]) -> tuple[str, ...]:
    """The trailer keys a policy names; they are declared to git as configured trailers."""
    keys = [*config.get("require", {}), *config.get("forbid", []), *config.get("forbid_in", {})]
    for cond in config.get("when", []):
        keys += [*cond["require"], *([cond["trailer"]] if cond.get("trailer") else [])]
    return tuple(sorted(set(keys), key=str.lower))


def check(config: dict[str, Any], ctx: Context) -> list[CheckResult]:
    commits = ctx.commits_with(trailer_keys(config))
    first_parent = bool(config.get("first_parent")) and ctx.kind == "range"
    if first_parent:
        line = set(ctx.repo.git.rev_list("--first-parent", f"{ctx.since}..{ctx.head_sha}").split())
        commits = [c for c in commits if c.sha in line]
    # Under first_parent a merge stands for the commits it brings in (they are not judged): judged unless the
    # policy writes include_merges: false (vllm.cpp's protocol-tag job judges first-parent non-merges only).
    include = config.get("include_merges")
    commits, skipped_merges = select_commits(commits, first_parent if include is None else include, ctx.repo)
    findings: list[Finding] = []
    for commit in commits:
        findings.extend(commit_findings(commit, config))
    counts = {"commits": len(commits) + skipped_merges, "checked": len(commits), "merges_skipped": skipped_merges,
              "failing_commits": len({f.file for f in findings})}
    return [decide(name, findings, counts=counts, checked=len(commits), what="commits")]


def select_commits(commits: list[Commit], include_merges: bool, repo: git.Repo) -> tuple[list[Commit], int]:
    """The commits a commit rule judges, and how many merges it skipped. A caller may rely on every change of
    the range lying in a judged commit: a merge is skipped only where it changes nothing of its own
    (`commits.clean_merge`: its tree is git's merge of its parents), never an evil merge carrying an edit."""
    kept = [c for c in commits if include_merges or not c.is_merge or not clean_merge(repo, c)]
    return kept, len(commits) - len(kept)


def _keyed(commit: Commit) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in commit.trailers:
        out.setdefault(key.lower(), []).append(value)
    return out


def commit_findings(commit: Commit, config: dict[str, Any]) -> list[Finding]:
    have = _keyed(commit)
    findings = []

    def require(rules: dict[str, str], why: str) -> None:
        for key, pattern in rules.items():
            values = have.get(key.lower(), [])
            if not values:
                findings.append(Finding(commit.label, 1, "trailer-required",
                                        f"no `{key}:` trailer{why}: add `{key}: ...` to the last paragraph "
                                        f"(git commit --amend --trailer)"))
            elif not any(re.search(pattern, v) for v in values):
                findings.append(Finding(commit.label, 1, "trailer-format",
                                        f"`{key}: {values[0]}` does not match {pattern}{why}: rewrite the trailer"))

    require(config.get("require", {}), "")
    for pattern in config.get("message_require", []):
        if not re.search(pattern, commit.message, re.M):
            findings.append(Finding(commit.label, 1, "message-required",
                                    f"the message does not contain {pattern}: add it (git commit --amend)"))
    for key in config.get("forbid", []):
        if key.lower() in have:
            findings.append(Finding(commit.label, 1, "trailer-forbidden", f"trailer `{key}:` is not allowed: remove it"))
    for key, pattern in config.get("forbid_in", {}).items():
        for value in have.get(key.lower(), []):
            # As `git log` shows it: an invisible or full-width letter does not hide the name.
            seen = unicodedata.normalize("NFKC", visible(value))
            if re.search(pattern, value) or re.search(pattern, seen) or re.search(pattern, latin(seen)):
                findings.append(Finding(commit.label, 1, "trailer-identity",
                                        f"`{key}: {value}` names a forbidden identity ({pattern}): "
                                        f"only people sign off or co-author; credit tools in the required trailer"))
    for cond in config.get("when", []):
        hit = bool(cond.get("message") and re.search(cond["message"], commit.message, re.M)) or \
            bool(cond.get("trailer") and cond["trailer"].lower() in have)
        if hit:
            require(cond["require"], f" (required because the message matches {cond.get('message') or cond.get('trailer')})")
    return findings
