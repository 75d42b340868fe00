"""`gates`: parse arguments and dispatch. Each subcommand's work lives in its own module."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from gates import api, clitools, report
from gates.loader import LoadError
from gates.verdict import EXIT_ERROR, EXIT_NO_DECISION, EXIT_OK, Verdict, exit_code

if TYPE_CHECKING:
    from gates.runner import GateResult


def _problems(problems: Sequence[str]) -> int:
    for p in problems:
        print(f"ERROR: {p}", file=sys.stderr)
    print(f"gates: {len(problems)} problem(s); nothing was run.", file=sys.stderr)
    return EXIT_ERROR


def _unmutated(root: Path) -> list[str]:
    """Problems that stop the run when a killed (or live) in-place mutate run left the tree
    mutated and it cannot be restored first; restored files are said on stderr."""
    if not (root / ".redfirst" / "journal").is_dir():
        return []     # no in-place run ever journaled here
    from mutations.journal import RestoreError
    from mutations.workspaces import WorkspaceError, in_place

    try:
        for line in in_place.before_grading(root):
            print(f"gates: {line}", file=sys.stderr)
    except (WorkspaceError, RestoreError, OSError) as e:
        return [f"not graded: {e}"]
    return []


def _stopped(args: argparse.Namespace, problems: list[str]) -> int:
    """A run that stopped before grading: its --html page and --json document say so (exit 2)."""
    doc = {"version": 1, "exit": EXIT_ERROR, "items": [], "errors": problems}
    if args.html:   # this run's page, never the last run's left in place
        from gates import html_report

        unwritten = html_report.write(Path(args.html), "redfirst: gates run", doc)
        problems = doc["errors"] = [*problems, unwritten] if unwritten else problems
    if args.json:
        print(json.dumps(doc, indent=2))
    from gates import github

    if github.active():
        github.publish(github.stopped_report("gates run", EXIT_ERROR, "\n".join(f"ERROR: {p}" for p in problems)))
    return _problems(problems)


def cmd_run(args: argparse.Namespace) -> int:
    try:
        proj = api.project(args.root)
        mutated = _unmutated(proj.root)
        if mutated:
            raise LoadError(mutated)
        from gates import loader

        loaded = loader.load_gates(proj)
        gates = api.select(loaded, args.gates, args.keyword)
    except LoadError as e:
        return _stopped(args, e.problems)
    left_out = [g for g in gates if args.device and g.requires.device != args.device]
    gates = [g for g in gates if g not in left_out]
    from gates.progress import Progress

    bar = Progress("gates")
    progress = None if args.quiet else bar
    from gates.runner import RunContext, run_all, source_state, unproven
    from gates.store import Store

    if progress:
        progress(f"{len(gates)} gate(s) selected under {proj.root}")
        bar.start(len(gates), "gates")
    ctx = RunContext(proj, Store(proj.state_dir), source_state(proj.root), args.lease, args.lease_wait, progress)
    try:
        results = run_all(gates, ctx, args.jobs)
    finally:
        bar.stop()
    if args.require_proven:
        from gates.proven import valid_proofs

        by_id = {g.id: g for g in gates}
        graded = results
        results = [r if r.verdict is not Verdict.GREEN or valid_proofs(proj, by_id[r.gate_id]) else unproven(r)
                   for r in results]
        for before, after in zip(graded, results, strict=True):
            if progress and after is not before:
                progress(f"{after.gate_id}: {after.verdict.value} (--require-proven: {after.reason})")
    code = exit_code([r.verdict for r in results], args.allow_no_decision)
    unwritten = _reports(args, results, code)
    if unwritten:   # a report the user asked for is missing: a usage error, never read as the gates' verdict
        print(f"ERROR: {unwritten}", file=sys.stderr)
        code = EXIT_ERROR
    if progress:
        # The last line a log shows is the verdict the exit status reports.
        progress(f"{report.closing_line(results)} (exit {code})")
    if args.json:
        print(report.to_json(results, code))
    else:
        report.print_table(results)
        print(report.closing_line(results))
        if left_out:
            devices = sorted({g.requires.device for g in left_out})
            print(f"Not selected: {len(left_out)} gate(s) for device {', '.join(devices)} (--device {args.device}).")
        if any(r.requires.get("device") == "cuda" and r.verdict is Verdict.NO_DECISION for r in results) or \
                any(g.requires.device == "cuda" for g in left_out):
            print("CUDA gates need an NVIDIA GPU and the cuda extra: pip install '.[cuda]' in the redfirst "
                  "checkout, then "
                  "`gates run --device cuda` on a GPU machine, or `gates run --lease BOX` to lease one.")
    _github(results, code)
    return code


def _github(results: Sequence[object], code: int) -> None:
    from gates import github

    # A non-zero exit the verdicts do not explain (an unwritten report) outranks them there too.
    github.publish_gates(results, exit_status=code if code == EXIT_ERROR else None)


def _reports(args: argparse.Namespace, results: Sequence[GateResult], code: int) -> str:
    """Write the --junit and --html reports; "" when written, else why one was not."""
    if args.junit:
        try:
            report.write_junit(results, Path(args.junit))
        except OSError as e:
            return f"cannot write the JUnit report {args.junit}: {e.strerror or e}"
    if args.html:
        from gates import html_report

        return html_report.write(Path(args.html), "redfirst: gates run", json.loads(report.to_json(results, code)))
    return ""


def cmd_check(args: argparse.Namespace) -> int:
    try:
        gates = api.load_gates(args.root)
    except LoadError as e:
        if args.json:
            print(clitools.listing("gates check", EXIT_ERROR, [], errors=e.problems))
        return _problems(e.problems)
    if not gates:
        # As every empty selection: nothing checked is no decision that the gate files are fine.
        why = f"No gate files found under {api.project(args.root).root} (redfirst.yaml gates.paths)."
        print(clitools.listing("gates check", EXIT_NO_DECISION, [], reason=why) if args.json else why)
        return EXIT_NO_DECISION
    if args.json:
        print(clitools.listing("gates check", EXIT_OK, [
            clitools.item(g.id, "gate-file", "GREEN", "valid", source=str(g.source), driver=g.driver.type)
            for g in gates]))
        return EXIT_OK
    for g in gates:
        print(f"{g.source}: {g.id} ({g.driver.type}{', ' + g.driver.format if g.driver.format != 'none' else ''})")
    print(f"{len(gates)} gate(s) valid.")
    return EXIT_OK


def cmd_schema(args: argparse.Namespace) -> int:
    from importlib import resources

    if args.config:
        from gates.config_schema import config_schema

        print(json.dumps(config_schema(), indent=2))
        return EXIT_OK
    name = "output.schema.json" if args.output else "gate.schema.json"
    print(resources.files("gates").joinpath(f"schema/{name}").read_text(encoding="utf-8"), end="")
    return EXIT_OK


def cmd_list(args: argparse.Namespace) -> int:
    from gates.store import Store

    proj = api.project(args.root)
    if args.json:
        print(clitools.listing("gates list", EXIT_OK, [
            clitools.item(str(summary.get("gate", "?")), "record", str(summary.get("verdict", "ERROR")),
                          str(summary.get("reason") or ""), summary.get("cause"), summary.get("counts") or {},
                          folder.name) for folder, summary in Store(proj.state_dir).records()]))
        return EXIT_OK
    print("# verdicts as graded at run time; `gates regrade ID` re-derives one from the raw record")
    for folder, summary in Store(proj.state_dir).records():
        print(f"{folder.name[:12]}  {summary.get('verdict', '?'):<11}  {summary.get('gate', '?'):<30}  "
              f"{report.describe_counts(summary.get('counts', {}))}")
    return EXIT_OK


def cmd_show(args: argparse.Namespace) -> int:
    from gates.store import Store, StoreError

    proj = api.project(args.root)
    try:
        folder = Store(proj.state_dir).find(args.id)
        record = json.loads((folder / "record.json").read_text())
    except (StoreError, OSError, ValueError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        if args.json:
            print(clitools.listing("gates show", EXIT_ERROR, [], errors=[str(e)]))
        return EXIT_ERROR
    if args.json:
        try:   # the verdict at run time, beside the record
            summary = json.loads((folder / "verdict.json").read_text())
        except (OSError, ValueError):
            summary = {}
        print(clitools.listing("gates show", EXIT_OK, [clitools.item(
            str(record.get("gate_id", "?")), "record", str(summary.get("verdict", "ERROR")),
            str(summary.get("reason") or ""), summary.get("cause"), summary.get("counts") or {}, folder.name,
            record=record)]))
        return EXIT_OK
    print(f"record {folder.name}\nfolder {folder}")
    print(json.dumps({k: v for k, v in record.items() if k != "gate_document"}, indent=1))
    print("--- gate document ---")
    print(record.get("gate_document", ""))
    return EXIT_OK


def cmd_regrade(args: argparse.Namespace) -> int:
    from gates.store import StoreError

    try:
        gate, graded, folder = api.regrade(args.id, args.root)
    except (StoreError, LoadError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        if args.json:
            print(clitools.listing("gates regrade", EXIT_ERROR, [clitools.item(args.id, "regrade", "ERROR", str(e),
                                                                                "config")]))
        else:
            print(f"{args.id}: ERROR: {e}")
        return EXIT_ERROR
    o = graded.outcome
    if args.json:
        code = exit_code([o.verdict])
        print(clitools.listing("gates regrade", code, [clitools.item(
            gate.id, "regrade", o.verdict.value, o.reason or "", o.cause.value if o.cause else None,
            graded.counts, folder.name)]))
        return code
    print(f"{gate.id}: {o.verdict.value}{' (' + o.cause.value + ')' if o.cause else ''} "
          f"{report.describe_counts(graded.counts)}{': ' + o.reason if o.reason else ''}")
    print(f"regraded from the raw record {folder}")
    return exit_code([o.verdict])


def cmd_export(args: argparse.Namespace) -> int:
    from gates.store import Store, StoreError, export

    proj = api.project(args.root)
    try:
        target = export(Store(proj.state_dir).find(args.id), Path(args.dir))
    except StoreError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return EXIT_ERROR
    print(target)
    return EXIT_OK


def cmd_gc(args: argparse.Namespace) -> int:
    from gates.store import Store

    proj = api.project(args.root)
    from gates.proven import evidence_ids

    keep = evidence_ids(proj)
    cap = int(args.max_mib * 1024 * 1024) if args.max_mib is not None else proj.evidence_cap_bytes
    removed, freed = Store(proj.state_dir).gc(cap, keep)
    print(f"removed {removed} record(s), freed {freed / 1048576:.1f} MiB; cap {cap / 1048576:.0f} MiB")
    return EXIT_OK


def cmd_red_first(args: argparse.Namespace) -> int:
    from gates import redfirst_cmd  # type: ignore[attr-defined,unused-ignore]

    return redfirst_cmd.main(args)


def cmd_proofs(args: argparse.Namespace) -> int:
    from gates import proofs

    proj = api.project(args.root)
    try:
        gates = api.load_gates(args.root)
    except LoadError as e:
        return _problems(e.problems)
    from gates.proven import valid_proofs

    table = proofs.proofs(proj.root)
    if args.json:
        items = []
        for g in gates:
            valid = valid_proofs(proj, g)
            items.append(clitools.item(
                g.id, "proof", "GREEN" if valid else "NO_DECISION",
                "" if valid else "UNPROVEN: no proof that this gate can fail", None if valid else "evidence",
                {"proofs": len(valid), "stale": len(table.get(g.id, [])) - len(valid)},
                proofs=[f"{p.kind}:{p.ref}" for p in valid]))
        print(clitools.listing("gates proofs", EXIT_OK, items))
        return EXIT_OK
    for g in gates:
        valid = valid_proofs(proj, g)
        stale = len(table.get(g.id, [])) - len(valid)
        names = ", ".join(f"{p.kind}:{p.ref}" for p in valid) or "UNPROVEN"
        note = f"  ({stale} proof(s) of an earlier version of this gate)" if stale else ""
        print(f"{g.id:<32} {names}{note}")
    return EXIT_OK


def cmd_completion(args: argparse.Namespace) -> int:
    print(clitools.completion(args.shell), end="")
    return EXIT_OK


def cmd_probe(args: argparse.Namespace) -> int:
    try:
        from gates.cuda import probe  # type: ignore[attr-defined,unused-ignore]
    except ImportError as e:
        print(f"gates probe: not available ({e})", file=sys.stderr)
        return 3
    return int(probe.main(args.probe_args))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gates", description="Run declarative gates and keep their evidence.")
    clitools.add_version(p)
    sub = p.add_subparsers(dest="command", required=True)

    def with_json(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--json", action="store_true", help="one JSON document on stdout (gates schema --output)")
        return sp

    def with_root(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
        sp.add_argument("--root", type=Path, help="project root (default: where redfirst.yaml is, else git top)")
        return sp

    r = with_root(sub.add_parser("run", help="run gates and grade them"))
    r.add_argument("gates", nargs="*", help="gate ids or globs (default: all)")
    r.add_argument("-k", dest="keyword", help="only gates whose id contains this (`a or b`)")
    r.add_argument("--device", choices=("cpu", "cuda"), help="only gates that require this device")
    r.add_argument("-n", "--jobs", type=int, default=1, help="independent gates in parallel")
    r.add_argument("--json", action="store_true", help="one JSON document on stdout")
    r.add_argument("--junit", metavar="PATH", help="also write JUnit XML")
    r.add_argument("--html", metavar="PATH", help="also write one self-contained HTML page of the run")
    r.add_argument("--allow-no-decision", action="store_true", help="exit 0 instead of 3 (still printed)")
    r.add_argument("--require-proven", action="store_true", help="a gate with no proof is NO_DECISION")
    r.add_argument("--lease", metavar="BOX|auto", help="run each gate under a lease of BOX (or any fitting box)")
    r.add_argument("--lease-wait", type=float, default=600.0, metavar="S", help="how long to wait for a lease")
    r.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    r.set_defaults(func=cmd_run)

    with_json(with_root(sub.add_parser("check", help="validate gate files only"))).set_defaults(func=cmd_check)
    s = sub.add_parser("schema", help="print the gate file JSON Schema")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--output", action="store_true", help="print the --json output schema instead")
    which.add_argument("--config", action="store_true", help="print the redfirst.yaml schema (checkers, leases...)")
    s.set_defaults(func=cmd_schema)
    with_json(with_root(sub.add_parser("list", help="list stored evidence records"))).set_defaults(func=cmd_list)
    for name, func, help_ in (("show", cmd_show, "show a stored record"),
                              ("regrade", cmd_regrade, "re-grade a record from its raw files")):
        sp = with_json(with_root(sub.add_parser(name, help=help_)))
        sp.add_argument("id", help="record id, unique prefix, or path to a record folder")
        sp.set_defaults(func=func)
    e = with_root(sub.add_parser("export", help="copy a record into DIR, self-contained"))
    e.add_argument("id", help="record id, unique prefix, or path to a record folder")
    e.add_argument("dir", help="where the copy goes (created)")
    e.set_defaults(func=cmd_export)
    g = with_root(sub.add_parser("gc", help="keep the evidence store under its size cap"))
    g.add_argument("--max-mib", type=float, help="cap in MiB (default: redfirst.yaml evidence.max_mib, or 512)")
    g.set_defaults(func=cmd_gc)
    rf = with_root(sub.add_parser("red-first", help="prove a gate fails on REV's sources and passes at HEAD"))
    rf.add_argument("gate", help="the gate id to prove")
    rf.add_argument("--base", required=True, metavar="REV", help="the revision whose sources must make it RED")
    rf.add_argument("--json", action="store_true", help="one JSON document on stdout")
    rf.set_defaults(func=cmd_red_first)
    with_json(with_root(sub.add_parser("proofs", help="list gates and what proves they can fail"))).set_defaults(
        func=cmd_proofs)
    pr = sub.add_parser("probe", help="device probes: `gates probe device`, `gates probe rebegin`")
    pr.add_argument("probe_args", nargs=argparse.REMAINDER, help="the probe and its arguments")
    pr.set_defaults(func=cmd_probe)
    c = sub.add_parser("completion", help="print a shell completion script for gates, mutate, leases, checkers")
    c.add_argument("shell", choices=("bash", "zsh"), help="eval \"$(gates completion bash)\" in ~/.bashrc")
    c.set_defaults(func=cmd_completion)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        return int(args.func(args))
    except LoadError as e:
        return _problems(e.problems)
    except KeyboardInterrupt:
        print("gates: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
