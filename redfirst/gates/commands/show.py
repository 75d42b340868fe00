"""`gates show ID`: one stored record, and its gate document."""

from __future__ import annotations

import argparse
import json
import sys

from redfirst import clitools
from redfirst.gates import api, report
from redfirst.gates.commands.common import with_json, with_root
from redfirst.verdict import EXIT_ERROR, EXIT_OK, Cause, Verdict


def add(sub: argparse._SubParsersAction) -> None:
    sp = with_json(with_root(sub.add_parser("show", help="show a stored record")))
    sp.add_argument("id", help="record id, unique prefix, or path to a record folder")
    sp.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates.store import NO_SUMMARY, Store, StoreError, read_record, read_summary

    proj = api.project(args.root)
    try:
        folder = Store(proj.state_dir).find(args.id)
        record = read_record(folder)
    except (StoreError, OSError) as e:
        print(f"ERROR: {clitools.one_line(str(e))}", file=sys.stderr)
        if args.json:
            print(clitools.listing("gates show", EXIT_ERROR, [], errors=[str(e)]))
        return EXIT_ERROR
    if args.json:
        summary, _problem = read_summary(folder)   # the verdict at run time, beside the record
        print(clitools.listing("gates show", EXIT_OK, [clitools.item(
            str(record.get("gate_id", "?")), "record", str(summary.get("verdict", Verdict.ERROR.value)),
            str(summary.get("reason") or ("" if summary else NO_SUMMARY)),
            summary.get("cause") if summary else Cause.EVIDENCE.value, summary.get("counts") or {}, folder.name,
            failures=summary.get("failures") or [], more_failures=summary.get("more_failures") or 0,
            record=record)]))
        return EXIT_OK
    summary, _problem = read_summary(folder)
    print(clitools.one_line(f"record {folder.name}"))
    print(clitools.one_line(f"folder {folder}"))
    if summary.get("verdict"):
        cause = f" ({summary['cause']})" if summary.get("cause") else ""
        print(clitools.one_line(f"verdict {summary['verdict']}{cause}: {summary.get('reason') or ''}"))
        for line in report.failure_lines(summary, indent="  "):
            print(line)
    print(json.dumps({k: v for k, v in record.items() if k != "gate_document"}, indent=1))
    print("--- gate document ---")
    print(record.get("gate_document", ""))
    return EXIT_OK
