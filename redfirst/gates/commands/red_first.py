"""`gates red-first GATE --base REV`: prove a gate fails on REV's sources and passes at HEAD."""

from __future__ import annotations

import argparse

from redfirst.gates.commands.common import with_root


def add(sub: argparse._SubParsersAction) -> None:
    rf = with_root(sub.add_parser("red-first", help="prove a gate fails on REV's sources and passes at HEAD"))
    rf.add_argument("gate", help="the gate id to prove")
    rf.add_argument("--base", required=True, metavar="REV", help="the revision whose sources must make it RED")
    rf.add_argument("--json", action="store_true", help="one JSON document on stdout")
    rf.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from redfirst.gates import redfirst_cmd  # type: ignore[attr-defined,unused-ignore]

    return int(redfirst_cmd.main(args))
