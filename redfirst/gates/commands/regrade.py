"""`gates regrade ID`: re-derive a record's verdict from its raw files."""

from __future__ import annotations

import argparse
import sys

from redfirst import clitools
from redfirst.gates import api, report
from redfirst.gates.commands.common import with_json, with_root
from redfirst.gates.loader import LoadError
from redfirst.verdict import EXIT_ERROR, Cause, Verdict, exit_code


def add(sub: argparse._SubParsersAction) -> None:
    sp = with_json(with_root(sub.add_parser("regrade", help="re-grade a record from its raw files")))
    sp.add_argument("id", help="record id, unique prefix, or path to a record folder")
    sp.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates.store import StoreError

    try:
        gate, graded, folder = api.regrade(args.id, args.root)
    except (StoreError, LoadError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        if args.json:
            print(clitools.listing("gates regrade", EXIT_ERROR, [clitools.item(args.id, "regrade", Verdict.ERROR,
                                                                                str(e), Cause.CONFIG)]))
        else:
            print(f"{args.id}: ERROR: {e}")
        return EXIT_ERROR
    from redfirst.gates.runner import failures_json

    o = graded.outcome
    root = api.project(args.root).root     # where api.regrade found the record
    failed = {"failures": failures_json(gate, graded, root), "more_failures": graded.more_failures}
    if args.json:
        code = exit_code([o.verdict])
        print(clitools.listing("gates regrade", code, [clitools.item(
            gate.id, "regrade", o.verdict, o.reason or "", o.cause, graded.counts, folder.name, **failed)]))
        return code
    print(f"{gate.id}: {o.verdict.value}{' (' + o.cause.value + ')' if o.cause else ''} "
          f"{report.describe_counts(graded.counts)}{': ' + o.reason if o.reason else ''}")
    for line in report.failure_lines(failed):
        print(line)
    print(f"regraded from the raw record {folder}")
    return exit_code([o.verdict])
