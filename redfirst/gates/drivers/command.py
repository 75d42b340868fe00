"""Driver `command`: any program, its output read by the gate's `format`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.drivers import NOT_FOUND, Driver, Invocation
from redfirst.gates.model import Gate
from redfirst.gates.parsers._common import tail
from redfirst.verdict import Cause, Outcome, error


class CommandDriver(Driver):
    name = "command"
    default_format = "none"
    option_keys = frozenset({"junit"})
    counts_format = None
    runner = None

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        run = gate.driver.run
        junit = gate.driver.option("junit")
        return Invocation(
            argv=(run,) if isinstance(run, str) else tuple(run),
            cwd=root / gate.driver.cwd,
            junit=(root / gate.driver.cwd / junit) if junit else None,
        )

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return None

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        if code in NOT_FOUND:
            return error(Cause.CONFIG, f"{NOT_FOUND[code]} (exit {code}): {tail(stderr)}")
        return None


DRIVER = CommandDriver()
