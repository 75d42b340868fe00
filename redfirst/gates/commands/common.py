"""What several `gates` subcommands share: the problem list on stderr and the common options."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from redfirst.verdict import EXIT_ERROR


def problems(found: Sequence[str]) -> int:
    for p in found:
        print(f"ERROR: {p}", file=sys.stderr)
    print(f"gates: {len(found)} problem(s); nothing was run.", file=sys.stderr)
    return EXIT_ERROR


def with_json(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sp.add_argument("--json", action="store_true", help="one JSON document on stdout (gates schema --output)")
    return sp


def with_root(sp: argparse.ArgumentParser) -> argparse.ArgumentParser:
    sp.add_argument("--root", type=Path, help="project root (default: where redfirst.yaml is, else git top)")
    return sp
