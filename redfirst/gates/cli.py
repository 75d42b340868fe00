"""`gates`: parse arguments and dispatch; each subcommand is one module of `gates/commands/`."""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from redfirst import clitools
from redfirst.gates.commands import COMMANDS
from redfirst.gates.commands.common import problems
from redfirst.gates.loader import LoadError
from redfirst.gates.store import StoreError
from redfirst.verdict import EXIT_ERROR


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gates", description="Run declarative gates and keep their evidence.")
    clitools.add_version(p)
    sub = p.add_subparsers(dest="command", required=True)
    for name in COMMANDS:
        importlib.import_module(f"redfirst.gates.commands.{name}").add(sub)
    return clitools.add_conventions(p)


def main(argv: Sequence[str] | None = None) -> int:
    def run() -> int:
        args = clitools.parse_args(parser(), argv)
        try:
            return int(args.func(args))
        except LoadError as e:
            return problems(e.problems)
        except StoreError as e:     # a store that cannot be used as it is (a link out of the project): no traceback
            print(f"ERROR: {e}", file=sys.stderr)
            return EXIT_ERROR
        except KeyboardInterrupt:
            print("gates: interrupted", file=sys.stderr)
            return 130

    return clitools.guard_output("gates", run)


if __name__ == "__main__":
    sys.exit(main())
