"""`gates gc`: keep the evidence store under its size cap, never dropping a proof's evidence."""

from __future__ import annotations

import argparse
import sys

from redfirst import clitools
from redfirst.gates import api
from redfirst.gates.commands.common import with_root
from redfirst.verdict import EXIT_ERROR, EXIT_OK


def add(sub: argparse._SubParsersAction) -> None:
    g = with_root(sub.add_parser("gc", help="keep the evidence store under its size cap"))
    g.add_argument("--max-mib", type=float, help="cap in MiB (default: redfirst.yaml evidence.max_mib, or 512)")
    g.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates.proven import evidence_ids
    from redfirst.gates.store import Store

    proj = api.project(args.root)
    keep = evidence_ids(proj)
    cap = int(args.max_mib * 1024 * 1024) if args.max_mib is not None else proj.evidence_cap_bytes
    store = Store(proj.state_dir)
    removed, freed = store.gc(cap, keep)
    print(f"removed {removed} record(s), freed {freed / 1048576:.1f} MiB; cap {cap / 1048576:.0f} MiB")
    strays = [p for p in store.scan().problems if "not a record folder" in p or "cannot read" in p]
    for problem in strays:   # gc removes records only: what else the store holds is the user's to judge
        print(f"ERROR: {clitools.one_line(problem)}", file=sys.stderr)
    return EXIT_ERROR if strays else EXIT_OK
