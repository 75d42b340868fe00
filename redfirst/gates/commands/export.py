"""`gates export ID DIR`: copy a record into DIR, self-contained."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from redfirst.gates import api
from redfirst.gates.commands.common import with_root
from redfirst.verdict import EXIT_ERROR, EXIT_OK


def add(sub: argparse._SubParsersAction) -> None:
    e = with_root(sub.add_parser("export", help="copy a record into DIR, self-contained"))
    e.add_argument("id", help="record id, unique prefix, or path to a record folder")
    e.add_argument("dir", help="where the copy goes (created)")
    e.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates.store import Store, StoreError, export

    proj = api.project(args.root)
    try:
        target = export(Store(proj.state_dir).find(args.id), Path(args.dir))
    except StoreError as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return EXIT_ERROR
    print(target)
    return EXIT_OK
