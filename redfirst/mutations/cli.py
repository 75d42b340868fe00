"""`mutate`: argument parsing and dispatch only; each subcommand is one module."""

from __future__ import annotations

import sys
from collections.abc import Sequence

SUBCOMMANDS = {"check": "check", "sweep": "sweep", "promote": "promote", "hazards": "hazards", "merge": "merge"}


def main(argv: Sequence[str] | None = None) -> int:
    from redfirst import clitools

    return clitools.guard_output("mutate", lambda: _main(argv))


def _main(argv: Sequence[str] | None) -> int:
    import importlib

    args = list(sys.argv[1:] if argv is None else argv)
    name = SUBCOMMANDS.get(args[0], "run") if args else "run"
    if name != "run":
        args = args[1:]
    module = importlib.import_module(f"redfirst.mutations.commands.{name}")
    code: int = module.main(args)
    return code


if __name__ == "__main__":
    sys.exit(main())
