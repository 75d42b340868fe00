"""`gates run`: run gates, grade them, and report the run (table, --json, --junit, --html, GitHub)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from redfirst.gates import api, report
from redfirst.gates.commands.common import problems, with_root
from redfirst.gates.loader import LoadError
from redfirst.verdict import EXIT_ERROR, Verdict, exit_code


def add(sub: argparse._SubParsersAction) -> None:
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
    r.set_defaults(func=main)


def _unmutated(root: Path) -> list[str]:
    """Problems that stop the run when a killed (or live) in-place mutate run left the tree
    mutated and it cannot be restored first; restored files are said on stderr."""
    if not (root / ".redfirst" / "journal").is_dir():
        return []     # no in-place run ever journaled here
    from redfirst.journal import RestoreError
    from redfirst.unmutated import TreeBusy, before_grading

    try:
        for line in before_grading(root):
            print(f"gates: {line}", file=sys.stderr)
    except (TreeBusy, RestoreError, OSError) as e:
        return [f"not graded: {e}"]
    return []


def _stopped(args: argparse.Namespace, found: list[str]) -> int:
    """A run that stopped before grading: its --junit file, --html page and --json document say so (exit 2)."""
    doc = report.document([], EXIT_ERROR, errors=found)
    if args.junit:   # this run's report, never the last run's left in place
        try:
            report.write_junit(doc, Path(args.junit))
        except OSError as e:
            found = doc["errors"] = [*found, f"cannot write the JUnit report {args.junit}: {e.strerror or e}"]
    if args.html:   # this run's page, never the last run's left in place
        from redfirst.gates import html_report

        unwritten = html_report.write(Path(args.html), "redfirst: gates run", doc)
        found = doc["errors"] = [*found, unwritten] if unwritten else found
    if args.json:
        print(json.dumps(doc, indent=2))
    from redfirst.gates import github

    if github.active():
        github.publish(github.stopped_report("gates run", EXIT_ERROR, "\n".join(f"ERROR: {p}" for p in found)))
    return problems(found)


def main(args: argparse.Namespace) -> int:
    try:
        proj = api.project(args.root)
        mutated = _unmutated(proj.root)
        if mutated:
            raise LoadError(mutated)
        from redfirst.gates import loader

        loaded = loader.load_gates(proj)
        gates = api.select(loaded, args.gates, args.keyword)
    except LoadError as e:
        return _stopped(args, e.problems)
    left_out = [g for g in gates if args.device and g.requires.device != args.device]
    gates = [g for g in gates if g not in left_out]
    from redfirst.gates.progress import Progress

    bar = Progress("gates")
    progress = None if args.quiet else bar
    from redfirst.gates.runner import RunContext, run_all, source_state, unproven
    from redfirst.gates.store import Store

    if progress:
        progress(f"{len(gates)} gate(s) selected under {proj.root}")
        bar.start(len(gates), "gates")
    state = source_state(proj.root)
    ctx = RunContext(proj, Store(proj.state_dir), state, args.lease, args.lease_wait, progress)
    try:
        results = run_all(gates, ctx, args.jobs)
    finally:
        bar.stop()
    if args.require_proven:
        from redfirst.gates.proven import valid_proofs

        by_id = {g.id: g for g in gates}
        graded = results
        results = [r if r.verdict is not Verdict.GREEN or valid_proofs(proj, by_id[r.gate_id]) else unproven(r)
                   for r in results]
        for before, after in zip(graded, results, strict=True):
            if progress and after is not before:
                progress(f"{after.gate_id}: {after.verdict.value} (--require-proven: {after.reason})")
    code = exit_code([r.verdict for r in results], args.allow_no_decision)
    # every report below reads this one document
    doc = report.document(results, code, run=report.run_facts(state.get("commit"), state.get("dirty")))
    unwritten = _reports(args, doc)
    if unwritten:   # a report the user asked for is missing: a usage error, never read as the gates' verdict
        print(f"ERROR: {unwritten}", file=sys.stderr)
        code = doc["exit"] = EXIT_ERROR
    if progress:
        # The last line a log shows is the verdict the exit status reports.
        progress(f"{report.closing_line(doc)} (exit {code})")
    if args.json:
        print(report.to_json(doc))
    else:
        report.print_table(doc)
        print(report.closing_line(doc))
        if left_out:
            devices = sorted({g.requires.device for g in left_out})
            print(f"Not selected: {len(left_out)} gate(s) for device {', '.join(devices)} (--device {args.device}).")
        if any(r.requires.get("device") == "cuda" and r.verdict is Verdict.NO_DECISION for r in results) or \
                any(g.requires.device == "cuda" for g in left_out):
            print("CUDA gates need an NVIDIA GPU and the cuda extra: pip install '.[cuda]' in the redfirst "
                  "checkout, then "
                  "`gates run --device cuda` on a GPU machine, or `gates run --lease BOX` to lease one.")
    from redfirst.gates import github

    # A non-zero exit the verdicts do not explain (an unwritten report) outranks them there too.
    github.publish_gates(doc, exit_status=code if code == EXIT_ERROR else None)
    return code


def _reports(args: argparse.Namespace, doc: dict[str, Any]) -> str:
    """Write the --junit and --html reports of the run's document; "" when written, else why one was not."""
    if args.junit:
        try:
            report.write_junit(doc, Path(args.junit))
        except OSError as e:
            return f"cannot write the JUnit report {args.junit}: {e.strerror or e}"
    if args.html:
        from redfirst.gates import html_report

        return html_report.write(Path(args.html), "redfirst: gates run", doc)
    return ""
