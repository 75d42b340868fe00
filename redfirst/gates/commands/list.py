"""`gates list`: the stored evidence records, with the verdict each was graded at run time."""

from __future__ import annotations

import argparse
import sys

from redfirst import clitools
from redfirst.gates import api, report
from redfirst.gates.commands.common import with_json, with_root
from redfirst.verdict import EXIT_ERROR, EXIT_OK, Cause, Verdict


def add(sub: argparse._SubParsersAction) -> None:
    with_json(with_root(sub.add_parser("list", help="list stored evidence records"))).set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates.store import NO_SUMMARY, Store

    proj = api.project(args.root)
    scan = Store(proj.state_dir).scan()
    for problem in scan.problems:   # listed all the same: the store's other records are still read
        print(f"ERROR: {clitools.one_line(problem)}", file=sys.stderr)
    code = EXIT_ERROR if scan.problems else EXIT_OK
    if args.json:
        print(clitools.listing("gates list", code, [
            clitools.item(_label(summary), "record", str(summary.get("verdict", Verdict.ERROR.value)),
                          str(summary.get("reason") or ("" if summary else NO_SUMMARY)),
                          summary.get("cause") if summary else Cause.EVIDENCE.value, summary.get("counts") or {},
                          folder.name) for folder, summary in scan.records],
            **({"errors": scan.problems} if scan.problems else {})))
        return code
    print("# verdicts as graded at run time; `gates regrade ID` re-derives one from the raw record")
    for folder, summary in scan.records:
        print(clitools.one_line(f"{folder.name[:12]}  {summary.get('verdict', '?'):<11}  {_label(summary):<30}  "
                                f"{report.describe_counts(summary.get('counts', {}))}"))
    return code


def _label(summary: dict) -> str:
    # a `mutate hazards` run is kept beside the gate's own runs: never listed as one of them
    hazard = summary.get("hazard")
    return f"{summary.get('gate', '?')}{f' (hazard {hazard})' if hazard else ''}"
