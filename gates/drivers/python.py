"""Driver `python`: `run: module:function`, called in a child process.

The function records what it observed through gates.evidence; the child records
what the function returned, and a bare boolean is an ERROR: "returned True" is
exactly the unexamined claim a gate exists to replace.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from gates.drivers import Invocation
from gates.model import Gate
from gates.verdict import Cause, Outcome, error, no_decision

KIND = "python-driver"
CANNOT_LOAD = 126     # the child could not import `module:function` (it says why on stderr)


class PythonDriver:
    name = "python"
    default_format = "none"
    option_keys: frozenset[str] = frozenset()

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        return Invocation(argv=(sys.executable, "-m", "gates.drivers.python_child", str(gate.driver.run)),
                          cwd=root / gate.driver.cwd)

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        calls = [o for o in observations if o.get("observation") == KIND]
        if not calls:
            return no_decision(Cause.EVIDENCE, f"{gate.driver.run}: the child recorded no call of the function")
        returned = calls[-1].get("returned")
        if returned == "bool":
            return error(Cause.CONFIG, f"{gate.driver.run} returned a bare boolean; record observations through "
                                       "gates.evidence (counter, tensor) and return None")
        return None


DRIVER = PythonDriver()
