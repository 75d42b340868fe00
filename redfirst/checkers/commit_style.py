"""commit_style: subject pattern, no trailing period, a body when required; merges skipped."""

from __future__ import annotations

import re
from typing import Any

from redfirst.checkers.commits import Commit
from redfirst.checkers.context import Context
from redfirst.checkers.lines import visible
from redfirst.checkers.model import CheckResult, Finding, decide
from redfirst.checkers.trailers import select_commits

name = "commit_style"
needs = "commits"
summary = "subject pattern and length, no trailing period, body required"
schema: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "examples": [{"subject": "^(feat|fix|docs|test)(\\(.+\\))?: ", "max_subject": 72, "body": "required"}],
    "properties": {
        "subject": {"type": "string", "format": "regex", "examples": ["^(feat|fix|docs): "],
                    "description": "a regex each subject must match (searched); unset: any subject"},
        "max_subject": {"type": "integer", "minimum": 1, "examples": [72],
                        "description": "the longest subject allowed, in characters; unset: no limit"},
        "body": {"enum": ["required", "optional"], "default": "optional", "examples": ["required"],
                 "description": "whether each commit needs a body below its subject"},
        "include_merges": {"type": "boolean", "default": False, "examples": [True],
                           "description": "judge every merge commit too (without it a merge is skipped only where its "
                                          "tree is git's own merge of its parents: a merge carrying an edit is judged)"},
    },
}


def check(config: dict[str, Any], ctx: Context) -> list[CheckResult]:
    commits, skipped = select_commits(ctx.commits, config.get("include_merges", False), ctx.repo)
    findings = [f for c in commits for f in style_findings(c, config)]
    counts = {"commits": len(commits) + skipped, "checked": len(commits), "merges_skipped": skipped,
              "failing_commits": len({f.file for f in findings})}
    return [decide(name, findings, counts=counts, checked=len(commits), what="commits")]


def style_findings(commit: Commit, config: dict[str, Any]) -> list[Finding]:
    subject = commit.subject
    findings = []
    if "subject" in config and not re.search(config["subject"], subject):
        findings.append(Finding(commit.label, 1, "subject-pattern",
                                f"subject {subject[:72]!r} does not match {config['subject']}: reword it "
                                f"(git commit --amend, or rebase -i with reword)"))
    if visible(subject).rstrip().endswith("."):  # judged as `git log` shows it: no invisible tail
        findings.append(Finding(commit.label, 1, "subject-period", "subject ends with a period: drop it"))
    if "max_subject" in config and len(subject) > config["max_subject"]:
        findings.append(Finding(commit.label, 1, "subject-length",
                                f"subject is {len(subject)} characters, over {config['max_subject']}: shorten it "
                                f"and move detail to the body"))
    if config.get("body") == "required" and not visible(commit.body).strip():
        findings.append(Finding(commit.label, 3, "body-required",
                                "no body: after a blank line, say what changed and why"))
    return findings
