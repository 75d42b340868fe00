"""Drivers: how a gate's program is started. One module per driver, one Protocol.

A driver only says what to run (`Invocation`); redfirst.process runs it and keeps the
raw output, and redfirst.gates.grade decides. A driver with observations of its own (cuda-graph)
adds a grading step over them through `grade_observations`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from redfirst.gates.model import Gate
from redfirst.verdict import Outcome

if TYPE_CHECKING:
    from redfirst.process import Exited

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
    # folders of this run's own (pytest's cache of a mutated run): removed once it is graded
    scratch: tuple[Path, ...] = ()


# Exit statuses of a program that never ran what it was given.
NOT_FOUND = {126: "command found but not executable", 127: "command not found"}


class Driver(Protocol):
    """A driver class subclasses this Protocol, so the methods with a body are its defaults."""

    # the value of `driver.type` that selects this driver
    name: str
    # the output format when the gate declares none
    default_format: str
    # keys this driver accepts under `driver:` besides the common ones
    option_keys: frozenset[str]
    # the parser that reads the counts whatever `format` says (pytest: its JUnit report), or
    # None: the gate's `format` does
    counts_format: str | None
    # the test runner this driver starts itself with `run:` as its targets (pytest): its exit
    # statuses mean what that format's parser says, and `format` may name it or `counts_format`;
    # None: the program is the user's, its exits read by the gate's `format`
    runner: str | None

    # What to run for `gate`, with the evidence folder of this run.
    # `brief`: failures are expected (a mutated run): report each in one line where the
    # program can (pytest --tb=short); the counts and exit status are the same.
    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation: ...

    # A verdict from the driver's own structured observations (evidence.jsonl records with
    # an "observation" key), or None when they add nothing; runs at grading step 5.
    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None: ...

    # What a gate of this driver cannot produce where no box serves it, said before the reason
    # (cuda-graph: "capture evidence"); None: the reason alone.
    unserved: str | None = None

    def grade_placement(self, context: Mapping[str, Any], observations: Sequence[dict[str, Any]]) -> Outcome | None:
        """Where a driver's observations name the device they ran on: a verdict when it is not one the
        record's lease granted (`context`: the lease's identity), else None."""
        return None

    def reports_reads(self) -> bool:
        """Whether the program reports the files it read (redfirst.gates.read_hook, to `$GATES_READS`): a
        driver that runs pytest loads the redfirst plugin, which does; any other program does not."""
        return self.runner == "pytest"

    def expect(self, gates: Sequence[Gate], root: Path) -> None:
        """These gates of this driver are about to run on `root`, one after another: a driver that
        keeps a process warm for them can make it ready for all at once. Nothing by default."""
        return None

    def ahead(self, inv: Invocation, gate: Gate, then: Gate, root: Path, brief: bool = False,
              edit: tuple[str, bytes] | None = None) -> Invocation:
        """`inv`, the run of `gate`, told that the caller runs `then` next on `root` (a guess: the
        caller may run something else), where `edit` (a file relative to the root, its bytes) is the
        file edited then, if known. A driver that keeps a process warm can make ready for it while
        `inv` runs. `inv` itself by default."""
        return inv

    def cold_start_s(self, gate: Gate, root: Path) -> float:
        """Seconds a run of this gate on `root` may pay beyond what its runs so far paid: a driver
        that keeps a process warm can fall back to a cold start (an edit it cannot patch in), which
        pays the imports the warm process paid once. A limit derived from those runs (a mutation's
        timeout) must hold it too. None by default."""
        return 0.0

    def cold(self, gate: Gate) -> Gate:
        """The gate as a run that shares nothing with earlier runs (a fresh interpreter): what a
        driver that keeps a process warm is checked against (redfirst.mutations.warmth). The
        gate itself by default."""
        return gate

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        """An exit status of the driver's own that says the gate's program never ran as given (not
        found, not loadable): its ERROR, read before the status the gate declares; else None."""
        return None


def runs_pytest(gate: Gate) -> bool:
    """Whether the gate's program is pytest: a driver that runs it, or a command whose output is
    pytest's (`format: pytest`)."""
    return get(gate.driver.type).runner == "pytest" or gate.driver.format == "pytest"


def runs_pytest_targets(gate: Gate) -> tuple[str, ...] | None:
    """The targets (paths, node ids) of a gate whose driver runs pytest on its `run:`; None for any other."""
    if get(gate.driver.type).runner != "pytest":
        return None
    return tuple(gate.driver.words())


def cold(gate: Gate) -> Gate:
    """The gate as its driver runs it cold (Driver.cold)."""
    return get(gate.driver.type).cold(gate)


def announce(gates: Sequence[Gate], root: Path) -> None:
    """Tell each driver which of these gates are about to run (Driver.expect)."""
    by_driver: dict[str, list[Gate]] = {}
    for gate in gates:
        by_driver.setdefault(gate.driver.type, []).append(gate)
    for name, mine in by_driver.items():
        get(name).expect(mine, root)


REGISTRY: dict[str, str] = {
    "command": "command",
    "pytest": "pytest",
    "python": "python",
    "cuda-graph": "cuda_graph",
    "pytest-warm": "pytest_warm",
}


def get(name: str) -> Driver:
    module = importlib.import_module(f"redfirst.gates.drivers.{REGISTRY[name]}")
    driver: Driver = module.DRIVER
    return driver
