"""A hazard the harness fails to inject is a harness failure (ERROR), never the step failing
eagerly: that would grade RED and `mutate hazards` would call the hazard KILLED."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates.cuda import hazards
from redfirst.gates.cuda.arm import Plan, run_arm
from redfirst.gates.cuda.buffers import DeviceView
from redfirst.gates.cuda.hazards import HazardFailure
from redfirst.verdict import Verdict


class FakeStep:
    """Stands for a user step on a device (none here): four methods, one output view."""

    def __init__(self) -> None:
        self.out = DeviceView(0x1000, 64, "float32", (16,))

    def inputs(self, seed: int, stream: int) -> None:
        pass

    def __call__(self, stream: int) -> None:
        pass

    def outputs(self) -> dict[str, DeviceView]:
        return {"out": self.out}


class FailingAllocation:
    """Fake of redfirst.gates.cuda.buffers.DeviceBuffer whose allocation fails, as cudaMalloc does when
    the device is out of memory: the hazard wrapper's own buffers cannot be made."""

    @classmethod
    def like(cls, view: Any) -> Any:
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")


def test_a_hazard_wrapper_that_cannot_be_built_raises_a_harness_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hazards, "DeviceBuffer", FailingAllocation)
    with pytest.raises(HazardFailure, match="out of memory"):
        run_arm(lambda variant, shape: FakeStep(), "v", (16,), Plan(), 0, None,  # type: ignore[arg-type]
                {"name": "fake"}, hazard="fresh-allocation")


def test_without_a_hazard_the_same_failure_stays_the_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    # the user's step failing to build is the code under test failing: its eager failure
    def factory(variant: str, shape: tuple[int, ...]) -> Any:
        raise RuntimeError("cudaErrorMemoryAllocation: out of memory")

    obs = run_arm(factory, "v", (16,), Plan(), 0, None, {"name": "fake"})  # type: ignore[arg-type]
    assert obs.failure_class == "eager" and "out of memory" in (obs.failure or "")


def _gate() -> Any:
    from redfirst.gates.config import Project
    from redfirst.gates.loader import gate_from_document

    doc = ("gate: g\nclaim: c\nkind: G1\nrequires: {device: cuda}\ndriver:\n  type: cuda-graph\n"
           "  run: 'steps:build'\n  variants: [v]\n  shapes: [[16]]\n")
    return gate_from_document(doc, Path("gates/g.yaml"), Project(Path("."), None))


def test_the_childs_harness_failure_record_is_an_error_never_a_kill() -> None:

    from redfirst.gates.drivers.cuda_graph import grade
    from redfirst.gates.runner import GateResult
    from redfirst.mutations.hazards import outcome_of
    from redfirst.verdict import MutationOutcome

    gate = _gate()
    outcome = grade(gate, [{"observation": "cuda-graph", "error": "harness failure: cannot inject hazard x"}])
    assert outcome.verdict is Verdict.ERROR
    assert outcome_of(GateResult("g", outcome.verdict, outcome.cause, outcome.reason)) is MutationOutcome.ERROR


def test_a_graph_child_that_dies_with_a_traceback_is_an_error_not_a_red(tmp_path: Path) -> None:
    # the child exits 0 whenever it observed (the observations carry the verdict): any other status
    # is the harness itself failing, graded ERROR, so a hazard run never counts it as a kill
    from redfirst.gates.drivers.cuda_graph import DRIVER
    from redfirst.gates.grade import grade as grade_record
    from redfirst.gates.record import GradingContext, Record, Step
    from redfirst.process import run as run_process

    gate = _gate()
    folder = tmp_path / "run"
    (folder / "evidence").mkdir(parents=True)
    argv = [sys.executable, "-c", "raise RuntimeError('harness bug')"]
    exited = run_process(argv, cwd=tmp_path, env=dict(os.environ), stdout=folder / "stdout",
                         stderr=folder / "stderr", timeout=60)
    record = Record(gate_id="g", gate_file="gates/g.yaml", gate_document=gate.document, root=str(tmp_path),
                    cwd=".", env={}, source=None, context=GradingContext(), build=None, main=Step(argv, exited),
                    enumerate=None, started_utc="", finished_utc="", redfirst="0")
    outcome = grade_record(record, folder, gate).outcome
    assert exited.returncode == 1 and outcome.verdict is Verdict.ERROR, outcome
    assert "harness" in outcome.reason and "harness bug" in outcome.reason
    assert DRIVER.exit_problem(gate, 0, "") is None
