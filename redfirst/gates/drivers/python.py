"""Driver `python`: `run: module:function`, called in a child process.

The function records what it observed through redfirst.gates.evidence; the child records
what the function returned, and a bare boolean is an ERROR: "returned True" is
exactly the unexamined claim a gate exists to replace.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst.gates.drivers import NOT_FOUND, Driver, Invocation
from redfirst.gates.model import Gate
from redfirst.gates.parsers._common import tail
from redfirst.verdict import Cause, Outcome, error, no_decision

KIND = "python-driver"
CANNOT_LOAD = 126     # the child could not import `module:function` (it says why on stderr)


class PythonDriver(Driver):
    name = "python"
    default_format = "none"
    option_keys: frozenset[str] = frozenset()
    counts_format = None
    runner = None

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        return Invocation(argv=(sys.executable, "-m", "redfirst.gates.drivers.python_child", str(gate.driver.run)),
                          cwd=root / gate.driver.cwd)

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        calls = [o for o in observations if o.get("observation") == KIND]
        if not calls:
            return no_decision(Cause.EVIDENCE, f"{gate.driver.run}: the child recorded no call of the function")
        returned = calls[-1].get("returned")
        if returned == "bool":
            return error(Cause.CONFIG, f"{gate.driver.run} returned a bare boolean; record observations through "
                                       "redfirst.gates.evidence (counter, tensor) and return None")
        return None

    def reports_reads(self) -> bool:
        return True     # the child calls the function under redfirst.gates.read_hook

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        if code == CANNOT_LOAD:
            # The child's own status: the target did not import (its stderr says why).
            said = [ln for ln in stderr.splitlines() if ln.startswith("gates: ")]
            return error(Cause.CONFIG, said[-1][len("gates: "):] if said else
                         f"{gate.driver.run} could not be loaded (exit {CANNOT_LOAD}): {tail(stderr)}")
        if code in NOT_FOUND:
            return error(Cause.CONFIG, f"{NOT_FOUND[code]} (exit {code}): {tail(stderr)}")
        return None


DRIVER = PythonDriver()
