"""ratchets: counted debt against a baseline JSON that may only go down."""

from __future__ import annotations

import functools
import json
import re
from pathlib import Path
from typing import Any

from redfirst.checkers import c_source, literals
from redfirst.checkers.context import Context
from redfirst.checkers.lines import lines as git_lines
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.tree import NotAFile, Tree, regular, select
from redfirst.yamlsrc import YamlError, load_json, load_json_text

name = "ratchets"
needs = "tree"
summary = "counted matches vs a baseline JSON: above is a regression, below must be lowered in the same change"
schema: dict[str, Any] = {
    "type": "array",
    "examples": [[{"baseline": "ratchets/todo.json", "paths": ["src/**/*.cc"], "buckets": {"todo": "TODO"}}]],
    "items": {
        "type": "object",
        "required": ["baseline", "paths", "buckets"],
        "additionalProperties": False,
        "properties": {
            "baseline": {"type": "string", "examples": ["ratchets/todo.json"],
                         "description": "the JSON of counts per bucket (and `total`), read at the merge base: above "
                                        "is a regression, below must be lowered in the same change"},
            "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1, "examples": [["src/**/*.cc"]],
                      "description": "globs of the files counted"},
            # a pattern counted on the code (comments and strings stripped when `strip: c`), or one
            # counted on the raw line, optionally only outside a preprocessor guard matching `outside`
            "buckets": {"type": "object", "minProperties": 1, "examples": [{"todo": "TODO", "casts": {
                "pattern": "reinterpret_cast", "outside": "REDFIRST_ALLOW"}}],
                "description": "the counted debt by bucket name: a regex, or an object",
                "additionalProperties": {"anyOf": [
                    {"type": "string", "format": "regex"},
                    {"type": "object", "required": ["pattern"], "additionalProperties": False,
                     "properties": {
                         "pattern": {"type": "string", "format": "regex", "examples": ["reinterpret_cast"],
                                     "description": "the regex counted, once per match"},
                         "raw": {"type": "boolean", "default": False, "examples": [True],
                                 "description": "count on the raw line, comments and strings included"},
                         "outside": {"type": "string", "format": "regex", "examples": ["USE_CUDA"],
                                     "description": "count only outside a preprocessor guard matching this"}}}]}},
            "strip": {"enum": ["none", "c"], "default": "none", "examples": ["c"],
                      "description": "`c`: strip C/C++ comments and strings before counting"},
            "exempt": {"type": "string", "format": "regex", "examples": ["ratchet: allow"],
                       "description": "a marker that exempts the line it is on"},
            "exempt_next_line": {"type": "boolean", "default": False, "examples": [True],
                                 "description": "the exempt marker also covers the line below it"},
            # per file and bucket: exactly this many matches are the platform's own ("*": all of them)
            "allowlist": {"type": "object", "examples": [{"src/platform.cc": {"casts": 2}}],
                          "description": "per file and bucket, exactly this many matches are the platform's own "
                                         "(`*`: all of them); a different count is a finding",
                          "additionalProperties": {"type": "object", "additionalProperties": {
                              "anyOf": [{"type": "integer", "minimum": 0}, {"const": "*"}]}}},
        },
    },
}


def inputs(config: list[dict[str, Any]]) -> list[str]:
    return [entry["baseline"] for entry in config]


def _bucket(spec: str | dict[str, Any]) -> tuple[re.Pattern[str], bool, re.Pattern[str] | None]:
    if isinstance(spec, str):
        return re.compile(spec), False, None
    return re.compile(spec["pattern"]), spec.get("raw", False), re.compile(spec["outside"]) if "outside" in spec else None


def count_file(entry: dict[str, Any], text: str, path: str, problems: list[Finding]) -> dict[str, int]:
    """Matches per bucket in one file, net of exempt lines and of its allowlist entry (a count that
    differs from the allowlist's exact number is a finding: the allowlist is a ratchet too)."""
    code_text = c_source.strip_comments_and_strings(text) if entry.get("strip") == "c" else text
    allow = (entry.get("allowlist") or {}).get(path, {})
    counts: dict[str, int] = {}
    raw: list[str] | None = None
    code: list[str] | None = None
    covered: set[int] | None = None
    for bucket, spec in entry["buckets"].items():
        rx, on_raw, outside = _bucket(spec)
        whole = text if on_raw else code_text
        hits: list[int] = []
        # a line's match is a match in the whole text: a file without one is skipped line by line
        # (first by the literals every match contains: `\bkCUDA\b` has no prefix re can scan for)
        if literals.may_match(rx, whole) and _anywhere(rx).search(whole):
            raw = git_lines(text) if raw is None else raw
            if on_raw:
                lines = raw
            else:
                code = git_lines(code_text) if code is None else code
                lines = code
            guard = c_source.guarded(raw, outside) if outside is not None else None
            hits = [i for i, line in enumerate(lines) for _ in rx.findall(line) if not (guard and guard[i])]
        expected = allow.get(bucket)
        if expected == "*":
            hits = []
        elif expected is not None:
            if len(hits) != expected:
                problems.append(Finding(path, 1, "ratchet-allowlist",
                                        f"{bucket}: {len(hits)} match(es), the allowlist says exactly {expected}: "
                                        f"fix the code, or change the allowlist and say why in the same change"))
            hits = hits[int(expected):]
        if hits and covered is None:
            covered = _exempt_lines(entry, git_lines(text) if raw is None else raw)
        counts[bucket] = sum(i not in (covered or ()) for i in hits)
    return counts


@functools.lru_cache(maxsize=64)
def _anywhere(rx: re.Pattern[str]) -> re.Pattern[str]:
    return re.compile(rx.pattern, rx.flags | re.M)


def _exempt_lines(entry: dict[str, Any], raw: list[str]) -> set[int]:
    """Lines the exempt marker covers: its own, and the next with `exempt_next_line`."""
    if "exempt" not in entry:
        return set()
    exempt = re.compile(entry["exempt"])
    covered: set[int] = set()
    for i, line in enumerate(raw):
        if exempt.search(line):
            covered.update((i, i + 1) if entry.get("exempt_next_line") else (i,))
    return covered


def measure(entry: dict[str, Any], tree: Tree, before: Tree | None = None,
            problems: list[Finding] | None = None) -> tuple[dict[str, int], int]:
    """Matches per bucket (plus `total`) over the files the ratchet covers, and how many files.
    Raises NotAFile for a covered link or submodule: what it hides cannot be counted. A covered
    file of `before` that now lies under a link or submodule (a folder turned into one) is refused too."""
    files, refused = regular(tree, select(tree.paths(), entry["paths"]))
    if before is not None:
        kept = set(tree.paths())
        refused += regular(tree, [p for p in select(before.paths(), entry["paths"]) if p not in kept])[1]
    if refused:
        raise refused[0]
    counts = dict.fromkeys(entry["buckets"], 0)
    sink: list[Finding] = [] if problems is None else problems
    for path in files:
        for bucket, n in count_file(entry, tree.read(path) or "", path, sink).items():
            counts[bucket] += n
    counts["total"] = sum(counts.values())
    return counts, len(files)


def read_baseline(text: str | None) -> dict[str, int] | str:
    """The counts of a baseline JSON (each bucket's, and `total`), or why the text is not a baseline:
    absent, not JSON, a key written twice (readers disagree on which one counts), or a count that is
    not a whole number. A count redfirst cannot read bounds nothing, so it is never skipped."""
    if text is None:
        return "no such file"
    try:  # the one JSON loader: a syntax error, a key written twice, nesting past its bound
        data = load_json_text(text, Path("baseline"))
    except YamlError as exc:
        return "not a baseline JSON (" + "; ".join(f"line {p.line}: {p.message}" for p in exc.problems) + ")"
    if not isinstance(data, dict):
        return "not a JSON object"
    buckets = data.get("buckets", {})
    if not isinstance(buckets, dict):
        return "`buckets` is not a JSON object"
    counts = [*buckets.items(), *([("total", data["total"])] if "total" in data else [])]
    bad = next(((key, value) for key, value in counts if type(value) is not int), None)  # bool is no count
    if bad:
        return f"{bad[0]} is {json.dumps(bad[1])}, not a whole number"
    return dict(counts)


def check(config: list[dict[str, Any]], ctx: Context) -> list[CheckResult]:
    return [_check_one(entry, ctx) for entry in config]


def _check_one(entry: dict[str, Any], ctx: Context) -> CheckResult:
    path = entry["baseline"]
    check_id = f"{name}:{path}"
    policy = read_baseline(ctx.policy.read(path))
    if isinstance(policy, str):
        return decide(check_id, [], [Undecided("ratchet", f"{path} at {ctx.policy.label} is not readable as a "
                                                          f"baseline: {policy}")])
    allowlist: list[Finding] = []
    try:
        measured, files = measure(entry, ctx.head, ctx.base, allowlist)
    except NotAFile as exc:
        return decide(check_id, [], [Undecided("ratchet", f"cannot count: {exc}")])
    if files == 0:
        return decide(check_id, [], [Undecided("ratchet", f"no file matches {', '.join(entry['paths'])} at "
                                                          f"{ctx.head.label}")])
    unbounded = [b for b in entry["buckets"] if b not in policy] if "total" not in policy else []
    if unbounded or not policy:
        # A baseline that names none of the buckets bounds nothing: never a pass.
        return decide(check_id, [], [Undecided("ratchet", f"{path} at {ctx.policy.label} has no count for "
                                                          f"{', '.join(unbounded or ['total'])}: add the measured "
                                                          f"value(s) {measured} to it")])
    findings = list(allowlist)
    # The head's baseline bounds the next change: one it cannot read, or that drops a count the merge
    # base holds, is the ratchet raised to no bound at all.
    proposed = read_baseline(ctx.head.read(path)) if ctx.head is not ctx.policy else policy
    if isinstance(proposed, str):
        findings.append(Finding(path, 1, "ratchet-baseline", f"{path} at {ctx.head.label}: {proposed}; it bounds "
                                                             f"the next change, so keep it: a JSON object of whole-"
                                                             f"number counts, each key once"))
        proposed = policy
    for key in policy:
        if key not in proposed:
            findings.append(Finding(path, 1, "ratchet-baseline",
                                    f"{key} has no count in {path} at {ctx.head.label} ({policy[key]} at "
                                    f"{ctx.policy.label}): a dropped count is a raised one; restore it"))
    for key, allowed in policy.items():
        now = measured.get(key)
        if now is None:
            continue
        new_base = proposed.get(key, allowed)
        if new_base > allowed:
            findings.append(Finding(path, 1, "ratchet-raised", f"{key} baseline raised {allowed} -> {new_base}: "
                                                               f"a baseline only goes down; fix the code instead"))
        if now > allowed:
            findings.append(Finding(path, 1, "ratchet-regression",
                                    f"{key}={now}, above the baseline {allowed}: remove the {now - allowed} new "
                                    f"occurrence(s)"))
        elif new_base < now:
            findings.append(Finding(path, 1, "ratchet-below-count",
                                    f"{key} baseline lowered to {new_base}, below the {now} counted: set it to {now}"))
        elif now < allowed and new_base != now:
            findings.append(Finding(path, 1, "ratchet-lower",
                                    f"{key}={now}, below the baseline {allowed}: lower the baseline to {now} in this "
                                    f"change (checkers run --write-baseline)"))
    return decide(check_id, findings, counts={**measured, "files": files}, checked=files, what="files measured")


def write_baseline(entry: dict[str, Any], ctx: Context, root: Path) -> str:
    """Lower the working-tree baseline to the measured values; refuses to raise any of them."""
    path = entry["baseline"]
    policy = read_baseline(ctx.policy.read(path))
    if isinstance(policy, str):
        raise ValueError(f"{path}: no baseline at {ctx.policy.label} to lower: {policy}")
    try:
        measured, _files = measure(entry, ctx.head, ctx.base)
    except NotAFile as exc:
        raise ValueError(f"{path}: cannot count: {exc}") from exc
    raised = [f"{k} {policy[k]} -> {measured[k]}" for k in policy if k in measured and measured[k] > policy[k]]
    if raised:
        raise ValueError(f"{path}: refusing to raise the baseline ({', '.join(raised)}); fix the regression instead")
    target = root / path
    try:
        data = load_json(target)
    except YamlError as exc:
        raise ValueError(f"{path}: cannot read the working-tree baseline to lower it: {exc}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: cannot read the working-tree baseline to lower it: not a JSON object")
    if "total" in data:
        data["total"] = measured["total"]
    for key in data.get("buckets") or {}:
        if key in measured:
            data["buckets"][key] = measured[key]
    target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return f"{path}: " + ", ".join(f"{k}={measured[k]}" for k in policy if k in measured)
