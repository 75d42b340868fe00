"""`checkers run | list | commit-msg`: parse arguments and dispatch; exit codes of DESIGN section 1."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from pathlib import Path

import git

from redfirst import clitools, projectconfig, scrub, yamlsrc
from redfirst.checkers import ratchets, report
from redfirst.checkers.commits import read_message_file
from redfirst.checkers.config import CONFIG_FILE, ConfigError, Policy, load_policy, parse_policy
from redfirst.checkers.context import Context, Mode, Undecidable, build, open_repo
from redfirst.checkers.model import CheckResult, config_error, no_decision
from redfirst.checkers.presets import PRESETS
from redfirst.checkers.registry import REGISTRY
from redfirst.checkers.runner import policy_of, run, run_each
from redfirst.checkers.trailers import trailer_keys
from redfirst.checkers.tree import GitTree, IndexTree, Tree
from redfirst.verdict import EXIT_ERROR, EXIT_OK, Cause, exit_code


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="checkers", description="Pre-merge record checks on commits, not the working tree.")
    clitools.add_version(p)
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run the configured checkers")
    r.add_argument("--root", type=Path, help="repository root (default: the git top-level of the cwd)")
    r.add_argument("--base", help="judge the range from the merge base of BASE and HEAD; policy read there")
    r.add_argument("--head", help="head of the range (default HEAD)")
    r.add_argument("--staged", action="store_true", help="judge the index against HEAD (pre-commit stage)")
    r.add_argument("--pre-push", action="store_true",
                   help="take --base/--head from PRE_COMMIT_FROM_REF / PRE_COMMIT_TO_REF (pre-push stage)")
    r.add_argument("--only", action="append", help="run only this checker (repeatable)")
    r.add_argument("--records-only", action="store_true", help="skip commit-message checkers (pre-commit stage)")
    r.add_argument("--format", choices=report.FORMATS, default="text", help="text, json, sarif or github")
    r.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    r.add_argument("--allow-no-decision", action="store_true", help="exit 0 instead of 3 when nothing is RED")
    r.add_argument("--config", type=Path, metavar="FILE",
                   help="read the policy from FILE, not the merge base (labelled: policy not from the merge base)")
    r.add_argument("--policy-from", choices=("base", "head"), default="base",
                   help="head: read redfirst.yaml from the head (the change that adds it); labelled as such")
    r.add_argument("--write-baseline", action="store_true", help="lower ratchet baselines to the measured values")
    sub.add_parser("list", help="list the checkers").add_argument(
        "--root", type=Path, help="repository root (default: the git top-level of the cwd)")
    c = sub.add_parser("commit-msg", help="check one commit message (commit-msg hook)")
    c.add_argument("file", help="the commit message file git hands the hook")
    c.add_argument("--root", type=Path, help="repository root (default: the git top-level of the cwd)")
    c.add_argument("--format", choices=report.FORMATS, default="text", help="text, json, sarif or github")
    c.add_argument("--json", dest="format", action="store_const", const="json", help="the same as --format json")
    return clitools.add_conventions(p)


def main(argv: list[str] | None = None) -> int:
    return clitools.guard_output("checkers", lambda: _main(argv))


def _main(argv: list[str] | None) -> int:
    args = clitools.parse_args(_parser(), argv)
    try:
        if args.command == "list":
            return _list(args)
        if args.command == "commit-msg":
            return _commit_msg(args)
        return _run(args)
    except ConfigError as exc:
        for problem in exc.problems:
            print(problem, file=sys.stderr)
        if getattr(args, "format", "text") != "text":  # json, sarif, github: one document, annotations
            print(report.render([config_error("checkers", p) for p in exc.problems], args.format, EXIT_ERROR))
        return EXIT_ERROR


def _secret_names(args: argparse.Namespace, policy: Tree | None = None) -> tuple[str, ...]:
    """The project's own `secrets: names` (`projectconfig.secret_names`): of the configuration in the working
    tree at --root, or at the git top-level of the cwd, where the CI job's checkout is, and of the tree the
    policy is read from (the merge base): a head that drops the base's names still has them scrubbed. A
    configuration that cannot give its names is said on stderr, never silently dropped."""
    root = getattr(args, "root", None)
    if root is None:
        try:
            with open_repo(None) as repo:
                root = Path(repo.working_tree_dir or Path.cwd())
        except Undecidable:
            root = Path.cwd()

    def say(text: str) -> None:
        print(f"checkers: {report.one_line(scrub.typed_text(text))}", file=sys.stderr)

    names = projectconfig.secret_names_at(Path(root), say)
    if policy is not None:
        tree = policy
        names += projectconfig.secret_names_in(
            lambda: projectconfig.choose(tree.read, lambda name: Path(f"{name}@{tree.label}")), say)
    return tuple(dict.fromkeys(names))


def _undecidable(reason: str, fmt: str, names: tuple[str, ...]) -> int:
    """No checker was reached (no repository, base or range): nothing selected, so 3 even under
    --allow-no-decision, which would otherwise pass a CI job that judged nothing."""
    results = report.scrubbed([no_decision("checkers", reason, Cause.ENVIRONMENT)], names)
    status = exit_code([])
    _print(results, fmt, status)
    report.write_step_summary(results)
    return status


def _print(results: list[CheckResult], fmt: str, status: int, note: str = "") -> None:
    """The report on stdout; under SARIF, what it holds only as a notification (no file to point
    at: report.sarif_split) on stderr too, so no CI log reads the scan as clean."""
    print(report.render(results, fmt, status, note))
    if fmt == "sarif":
        for _level, text in report.sarif_split(results)[1]:
            print(f"checkers: not in SARIF's results: {report.one_line(text)}", file=sys.stderr)


def _finish(results: list[CheckResult], fmt: str, allow_no_decision: bool, names: tuple[str, ...], nothing: str = "",
            note: str = "") -> int:
    """Print and return the exit status; selecting nothing (`nothing` says why) is 3, always."""
    if nothing:
        results = [no_decision("checkers", nothing, Cause.CONFIG)]
        status = exit_code([])
    else:
        status = exit_code([r.verdict for r in results], allow_no_decision=allow_no_decision)
    results = report.scrubbed(results, names)   # every output below (stdout, stderr, the step summary) reads these
    if note:
        print(f"checkers: {note}", file=sys.stderr)
    _print(results, fmt, status, note)
    report.write_step_summary(results, note)
    return status


def _run(args: argparse.Namespace) -> int:
    base, head = args.base, args.head
    if args.pre_push:
        base = os.environ.get("PRE_COMMIT_FROM_REF") or base
        head = os.environ.get("PRE_COMMIT_TO_REF") or head
        if not base:
            return _undecidable("pre-push: PRE_COMMIT_FROM_REF is not set, so the range to judge is unknown",
                                args.format, _secret_names(args))
    # A usage error is a ConfigError: `_main` prints it, and under every machine format its one document.
    unknown = sorted(set(args.only or ()) - set(REGISTRY))
    if unknown:
        raise ConfigError([f"checkers: --only {', '.join(unknown)}: no such checker (known: {', '.join(REGISTRY)})"])
    if args.staged and base:
        raise ConfigError(["checkers: --staged and --base judge different things; give one"])
    if args.config and args.policy_from == "head":
        raise ConfigError(["checkers: --config FILE and --policy-from head name two policies; give one"])
    try:
        repo = open_repo(args.root)
    except Undecidable as exc:
        return _undecidable(str(exc), args.format, _secret_names(args))
    try:
        return _run_in(repo, args, base, head)
    finally:
        repo.close()  # ends GitPython's persistent cat-file processes


def _run_in(repo: git.Repo, args: argparse.Namespace, base: str | None, head: str | None) -> int:
    try:
        ctx = build(repo, Mode(base, head, args.staged))
    except Undecidable as exc:
        return _undecidable(str(exc), args.format, _secret_names(args))
    if args.write_baseline:
        return _write_baseline(ctx)
    needs = ("tree", "diff") if args.records_only else ("tree", "diff", "commits")
    policy = _foreign_policy(args, ctx)
    if len(ctx.merge_bases) > 1:
        print(f"checkers: {len(ctx.merge_bases)} merge bases of {base} and {head or 'HEAD'} (a criss-cross "
              f"history): judged against each of {', '.join(sha[:12] for sha in ctx.merge_bases)}", file=sys.stderr)
    outcome = run_each(ctx, args.only, policy=policy, needs=needs)
    for skipped in outcome.skipped:
        print(f"checkers: cannot judge in this run (NO_DECISION): {skipped}", file=sys.stderr)
    note = policy.note if policy else ""
    names = _secret_names(args, ctx.policy)
    return _finish(list(outcome.results), args.format, args.allow_no_decision, names, outcome.nothing, note)


def _foreign_policy(args: argparse.Namespace, ctx: Context) -> Policy | None:
    """The policy of --config FILE or of the head tree; None reads it from the merge base as usual.
    Raises ConfigError for an unreadable FILE or a bad policy (exit 2)."""
    if args.config is not None:
        try:
            text = yamlsrc.read_text(args.config)
        except yamlsrc.YamlError as exc:
            raise ConfigError([str(p) for p in exc.problems]) from None
        policy = parse_policy(text, str(args.config), REGISTRY, PRESETS, foreign=True)
        if policy is None:
            raise ConfigError([f"{args.config}:1: no `checkers:` section: nothing to run"])
        return policy
    if args.policy_from == "head" and ctx.head is not ctx.policy:
        policy = load_policy(ctx.head, REGISTRY, PRESETS)
        if policy is None:
            raise ConfigError([f"{CONFIG_FILE}@{ctx.head.label}:1: --policy-from head: no `checkers:` section there"])
        return dataclasses.replace(policy, foreign=True)
    return None


def _write_baseline(ctx: Context) -> int:
    policy = policy_of(ctx)
    entries = dict(policy.entries).get("ratchets", []) if policy else []
    if not entries:
        print("checkers: no ratchets configured", file=sys.stderr)
        return EXIT_ERROR
    try:
        for entry in entries:
            print(ratchets.write_baseline(entry, ctx, ctx.root))
    except ValueError as exc:
        print(f"checkers: {exc}", file=sys.stderr)
        return EXIT_ERROR
    return EXIT_OK


def _commit_msg(args: argparse.Namespace) -> int:
    try:
        repo = open_repo(args.root)
    except Undecidable as exc:
        return _finish([no_decision("checkers", str(exc))], args.format, False, _secret_names(args))
    try:
        return _commit_msg_in(repo, args)
    finally:
        repo.close()


def _commit_msg_in(repo: git.Repo, args: argparse.Namespace) -> int:
    policy_tree = GitTree(repo, repo.head.commit.hexsha) if repo.head.is_valid() else IndexTree(repo)
    policy = load_policy(policy_tree, REGISTRY, PRESETS)
    keys = trailer_keys(dict(policy.entries).get("trailers", {})) if policy else ()
    try:
        message = read_message_file(repo, args.file, keys)
    except OSError as exc:
        print(f"checkers: cannot read the commit message {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    if (Path(repo.git_dir) / "MERGE_HEAD").exists():  # a merge being concluded: judged as a merge commit
        message = type(message)(message.sha, ("0" * 40, "1" * 40), message.message, message.trailers)
    ctx = Context(repo, policy_tree, None, policy_tree, "message", messages=[message])
    outcome = run(ctx, policy=policy, needs=("commits",))
    return _finish(list(outcome.results), args.format, False, _secret_names(args), outcome.nothing)


def _list(args: argparse.Namespace) -> int:
    for name, checker in REGISTRY.items():
        print(f"{name:<15} {checker.needs:<8} {checker.summary}")
    return EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
