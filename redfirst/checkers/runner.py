"""One run: build the context, read the policy from the right tree, run the selectable checkers."""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

import git

from redfirst.checkers.base import Checker
from redfirst.checkers.config import CONFIG_FILE, Policy, load_policy
from redfirst.checkers.context import Context
from redfirst.checkers.markdown import TooLarge
from redfirst.checkers.model import CheckResult, config_error, decide, no_decision
from redfirst.checkers.presets import PRESETS
from redfirst.checkers.registry import REGISTRY
from redfirst.checkers.trailers import trailer_keys
from redfirst.checkers.tree import NotAFile, select
from redfirst.verdict import Cause


@dataclass(frozen=True)
class Outcome:
    results: tuple[CheckResult, ...]
    skipped: tuple[str, ...]  # "name (why)" for configured checkers this kind of run cannot judge
    nothing: str = ""  # why nothing was selected, when results is empty


def policy_of(ctx: Context) -> Policy | None:
    """Raises ConfigError (exit 2) for a bad policy."""
    return load_policy(ctx.policy, REGISTRY, PRESETS)


def selectable(checker: Checker, ctx: Context) -> str | None:
    """None when this run can judge `checker`, else why not."""
    if checker.needs == "diff" and ctx.base is None:
        return "needs a base: --base REV or --staged"
    if checker.needs == "diff" and ctx.kind == "range" and ctx.base_sha == ctx.head_sha:
        # the head is the merge base: base...head holds no change, so nothing would be compared
        return "the range is empty: the head is already in the history of --base, so no change is judged"
    if checker.needs == "commits" and ctx.kind != "range" and not ctx.commits:
        return "judges commits: --base REV, or the commit-msg hook"
    return None


def run(ctx: Context, only: list[str] | None = None, policy: Policy | None = None,
        needs: tuple[str, ...] = ("tree", "diff", "commits")) -> Outcome:
    policy = policy or policy_of(ctx)
    if policy is None:
        return Outcome((), (), f"no `checkers:` section in {CONFIG_FILE} or [tool.redfirst] at {ctx.policy.label}: nothing selected")
    ctx.trailer_keys = trailer_keys(dict(policy.entries).get("trailers", {}))
    ctx.policy_foreign = policy.foreign
    results: list[CheckResult] = []
    skipped: list[str] = []
    for name, config in policy.entries:
        checker = REGISTRY[name]
        if only and name not in only:
            continue
        if name in policy.preset_only:
            config = with_inputs(checker, config, ctx)
            if config is None:
                continue  # a preset names files this repository does not keep: that rule is not the project's
        if checker.needs not in needs:
            continue
        why = selectable(checker, ctx)
        if why:
            # Configured and not deselected, yet this run cannot judge it: NO_DECISION, never left
            # out of the count (a plain run must not read "All checks green" over an unjudged rule).
            skipped.append(f"{name} ({why})")
            results.append(no_decision(name, why, Cause.ENVIRONMENT))
            continue
        results.extend(_guarded(checker, config, ctx))
    nothing = "" if results else "no configured checker is selected by this run (--only, --records-only, commit-msg)"
    return Outcome(tuple(results), tuple(skipped), nothing)


def run_each(ctx: Context, only: list[str] | None = None, policy: Policy | None = None,
             needs: tuple[str, ...] = ("tree", "diff", "commits")) -> Outcome:
    """`run` against every merge base of the range (one, unless the history is criss-cross), each
    with its own policy unless one is given. A result that differs between merge bases is kept for
    each, its id naming the merge base (`append_only:index.md@1a2b3c4d5e6f`): a line only one of
    them holds is old all the same, and a check green against one base is not green against all."""
    if len(ctx.merge_bases) < 2:
        return run(ctx, only, policy, needs)
    runs = [(sha[:12], run(ctx if sha == ctx.base_sha else ctx.with_merge_base(sha), only, policy, needs))
            for sha in ctx.merge_bases]
    by_id: dict[str, list[tuple[str, CheckResult]]] = {}
    for label, outcome in runs:
        for result in outcome.results:
            by_id.setdefault(result.id, []).append((label, result))
    results: list[CheckResult] = []
    for group in by_id.values():
        if len(group) == len(runs) and all(result == group[0][1] for _label, result in group):
            results.append(group[0][1])
        else:
            results.extend(dataclasses.replace(result, id=f"{result.id}@{label}") for label, result in group)
    skipped = tuple(dict.fromkeys(s for _label, outcome in runs for s in outcome.skipped))
    nothing = "" if results else runs[0][1].nothing
    return Outcome(tuple(results), skipped, nothing)


def with_inputs(checker: Checker, config: Any, ctx: Context) -> Any:
    """The part of a preset's configuration whose input files all exist in the head or the policy
    tree (each entry of a list on its own), or None when no part does."""
    inputs = getattr(checker, "inputs", None)
    keep = getattr(checker, "keep_present", None)
    if inputs is None and keep is None:
        return config  # judges commits or the whole tree: nothing to be absent
    paths = sorted(set(ctx.head.paths()) | set(ctx.policy.paths()))

    def exists(glob: str) -> bool:
        return bool(select(paths, [glob]))

    if keep is not None:
        return keep(config, exists)
    if inputs is None:
        return config

    def present(part: Any) -> bool:
        return all(exists(glob) for glob in inputs(part))

    if isinstance(config, list):
        kept = [entry for entry in config if present([entry])]
        return kept or None
    return config if present(config) else None


def _guarded(checker: Checker, config: Any, ctx: Context) -> list[CheckResult]:
    """A checker that fails to run is ERROR with its reason, never a silent pass."""
    try:
        return checker.check(config, ctx)
    except NotAFile as exc:  # a checker met a link or submodule it did not judge itself: never its text
        return [decide(checker.name, [exc.finding()])]
    except TooLarge as exc:  # a record it would parse as markdown is past the limit: nothing decided
        return [no_decision(checker.name, f"a record is {exc}")]
    except git.GitCommandError as exc:
        return [config_error(checker.name, f"git failed: {' '.join(map(str, exc.command))[:200]}: "
                                           f"{str(exc.stderr).strip()[:300]}")]
    except (re.error, ValueError, KeyError, TypeError, IndexError) as exc:
        return [config_error(checker.name, f"{checker.name} could not run: {type(exc).__name__}: {exc}")]
