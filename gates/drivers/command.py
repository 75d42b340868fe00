"""Driver `command`: any program, its output read by the gate's `format`."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gates.drivers import Invocation
from gates.model import Gate
from gates.verdict import Outcome


class CommandDriver:
    name = "command"
    default_format = "none"
    option_keys = frozenset({"junit"})

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


DRIVER = CommandDriver()
