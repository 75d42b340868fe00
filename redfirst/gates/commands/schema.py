"""`gates schema`: print the gate file, --json output or redfirst.yaml JSON Schema."""

from __future__ import annotations

import argparse
import json

from redfirst.verdict import EXIT_OK


def add(sub: argparse._SubParsersAction) -> None:
    s = sub.add_parser("schema", help="print the gate file JSON Schema")
    which = s.add_mutually_exclusive_group()
    which.add_argument("--output", action="store_true", help="print the --json output schema instead")
    which.add_argument("--config", action="store_true", help="print the redfirst.yaml schema (checkers, leases...)")
    s.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    from importlib import resources

    if args.config:
        from redfirst.config_schema import config_schema

        print(json.dumps(config_schema(), indent=2))
        return EXIT_OK
    name = "output.schema.json" if args.output else "gate.schema.json"
    print(resources.files("redfirst.gates").joinpath(f"schema/{name}").read_text(encoding="utf-8"), end="")
    return EXIT_OK
