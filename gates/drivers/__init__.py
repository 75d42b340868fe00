"""Drivers: how a gate's program is started. One module per driver, one Protocol.

A driver only says what to run (`Invocation`); gates.process runs it and keeps the
raw output, and gates.grade decides. A driver with observations of its own (cuda-graph)
adds a grading step over them through `grade_observations`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from gates.model import Gate
from gates.verdict import Outcome

if TYPE_CHECKING:
    from gates.process import Exited

# Runs the invocation without starting `argv`, with the same effect: (cwd, env, stdout
# file, stderr file, timeout, called once while it runs or None) -> how it ended. Used
# where `argv` would only be a client handing the request to a process that is already
# running (pytest-warm).
InProcess = Callable[[Path, dict[str, str], Path, Path, float, "Callable[[], None] | None"], "Exited"]


@dataclass(frozen=True)
class Invocation:
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...] = ()   # added to the environment
    cwd: Path = Path(".")
    junit: Path | None = None               # where the program writes a JUnit report, if it does
    # The same run without a process of its own; `argv` stays what a person would run.
    # Not used where a lease runs the command on its box (srun).
    in_process: InProcess | None = None


class Driver(Protocol):
    # the value of `driver.type` that selects this driver
    name: str
    # the output format when the gate declares none
    default_format: str
    # keys this driver accepts under `driver:` besides the common ones
    option_keys: frozenset[str]

    # What to run for `gate`, with the evidence folder of this run.
    # `brief`: failures are expected (a mutated run): report each in one line where the
    # program can (pytest --tb=line); the counts and exit status are the same.
    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation: ...

    # A verdict from the driver's own structured observations (evidence.jsonl records with
    # an "observation" key), or None when they add nothing; runs at grading step 5.
    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None: ...

    # Optional, where a driver's observations name the device they ran on:
    # `grade_placement(context, observations) -> Outcome | None` checks them against the
    # record's lease context (the cuda-graph driver has it).


REGISTRY: dict[str, str] = {
    "command": "command",
    "pytest": "pytest",
    "python": "python",
    "cuda-graph": "cuda_graph",
    "pytest-warm": "pytest_warm",
}


def get(name: str) -> Driver:
    module = importlib.import_module(f"gates.drivers.{REGISTRY[name]}")
    driver: Driver = module.DRIVER
    return driver
