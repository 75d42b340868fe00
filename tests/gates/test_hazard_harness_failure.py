"""A hazard the harness fails to inject is a harness failure (ERROR), never the step failing
eagerly: that would grade RED and `mutate hazards` would call the hazard KILLED."""

from __future__ import annotations

from typing import Any

import pytest

from gates.cuda import hazards
from gates.cuda.arm import Plan, run_arm
from gates.cuda.buffers import DeviceView
from gates.cuda.hazards import HazardFailure


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
    """Fake of gates.cuda.buffers.DeviceBuffer whose allocation fails, as cudaMalloc does when
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


def test_the_childs_harness_failure_record_is_an_error_never_a_kill() -> None:
    from pathlib import Path

    from gates.config import Project
    from gates.drivers.cuda_graph import grade
    from gates.loader import gate_from_document
    from gates.runner import GateResult
    from gates.verdict import MutationOutcome, Verdict
    from mutations.hazards import outcome_of

    doc = ("gate: g\nclaim: c\nkind: G1\nrequires: {device: cuda}\ndriver:\n  type: cuda-graph\n"
           "  run: 'steps:build'\n  variants: [v]\n  shapes: [[16]]\n")
    gate = gate_from_document(doc, Path("gates/g.yaml"), Project(Path("."), None))
    outcome = grade(gate, [{"observation": "cuda-graph", "error": "harness failure: cannot inject hazard x"}])
    assert outcome.verdict is Verdict.ERROR
    assert outcome_of(GateResult("g", outcome.verdict, outcome.cause, outcome.reason)) is MutationOutcome.ERROR
