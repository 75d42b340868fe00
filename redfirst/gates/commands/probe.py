"""`gates probe device|rebegin ...`: the device probes of the cuda extra."""

from __future__ import annotations

import argparse
import sys


def add(sub: argparse._SubParsersAction) -> None:
    pr = sub.add_parser("probe", help="device probes: `gates probe device`, `gates probe rebegin`")
    pr.add_argument("probe_args", nargs=argparse.REMAINDER, help="the probe and its arguments")
    pr.set_defaults(func=main)


def main(args: argparse.Namespace) -> int:
    try:
        from redfirst.gates.cuda import probe  # type: ignore[attr-defined,unused-ignore]
    except ImportError as e:
        print(f"gates probe: not available ({e})", file=sys.stderr)
        return 3
    return int(probe.main(args.probe_args))
