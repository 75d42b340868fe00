"""Issue #15 on a real device: torch, CuPy and Triton factories in both import orders; the
torch-native step captured on the raw stream and through torch.cuda.CUDAGraph; graph hazards."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst.gates.drivers.cuda_graph import DRIVER, grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent
FIRST = "import sys, {fw}; from redfirst.gates.cuda.graph_child import main; sys.exit(main(sys.argv[1:]))"


def _gate(run: str, variants: list[str], shapes: list[list[int]], capture: str = "stream",
          hazard: str | None = None) -> Gate:
    options = [("capture", capture), ("replays", 4), ("repeat_eager", 2),
               ("shapes", tuple(tuple(s) for s in shapes)), ("variants", tuple(variants)), ("warmup", 2)]
    if hazard:
        options.append(("hazard", hazard))
    return Gate(id="t", source=Source(HERE / "g.yaml", 1),
                driver=DriverSpec(type="cuda-graph", run=run, options=tuple(sorted(options))))


def _observe(tmp_path: Path, gate: Gate, first: str | None = None) -> list[dict]:
    inv = DRIVER.invocation(gate, HERE, tmp_path)
    argv = list(inv.argv)
    if first:  # the framework imported before redfirst initialises anything
        argv = [sys.executable, "-c", FIRST.format(fw=first), *argv[3:]]
    p = subprocess.run(argv, cwd=HERE, env={**os.environ, **dict(inv.env)}, capture_output=True, text=True,
                       timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    lines = (tmp_path / "evidence.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines if '"observation"' in line]


@pytest.mark.parametrize("framework", ["torch", "cupy", "triton"])
@pytest.mark.parametrize("order", ["after-redfirst", "before-redfirst"])
def test_framework_factories_load_and_are_green_in_both_import_orders(tmp_path: Path, framework: str,
                                                                      order: str) -> None:
    gate = _gate("steps_frameworks:make_step", [framework], [[1000], [4096]])
    obs = _observe(tmp_path, gate, first=framework if order == "before-redfirst" else None)
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert all(framework in o["frameworks"] for o in obs)


def test_torch_imports_in_the_process_that_compiled_the_comparator() -> None:
    script = ("from redfirst.gates.cuda import comparator; comparator.get(); assert ' '.encode() == b' ', ' '.encode(); "
              "import torch; print(torch.__version__)")
    p = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]


SAFE = [("mlp", [[1, 16], [4, 16]]), ("encoder", [[1, 16], [4, 16]])]


@pytest.mark.parametrize("variant,shapes", SAFE)
def test_native_modules_are_green_in_both_capture_modes_with_one_observation_format(
        tmp_path: Path, variant: str, shapes: list[list[int]]) -> None:
    seen = {}
    for mode in ("stream", "torch"):
        gate = _gate("steps_native:build", [variant], shapes, capture=mode)
        (tmp_path / mode).mkdir()
        obs = _observe(tmp_path / mode, gate)
        outcome = grade(gate, obs)
        assert outcome.verdict is Verdict.GREEN, f"{mode}: {outcome.reason}"
        assert all(o["capture"] == mode for o in obs)
        seen[mode] = obs
    for a, b in zip(seen["stream"], seen["torch"], strict=True):
        assert set(a) == set(b)
        assert [(c["phase"], c["index"], c["output"], c["values"]) for c in a["comparisons"]] == \
               [(c["phase"], c["index"], c["output"], c["values"]) for c in b["comparisons"]]
        # the same inputs give the same eager reference bits in both modes
        assert [c["reference_hash64"] for c in a["comparisons"]] == [c["reference_hash64"] for c in b["comparisons"]]


@pytest.mark.parametrize("mode", ["stream", "torch"])
def test_float_scalar_step_is_red_at_the_first_fresh_replay_in_both_modes(tmp_path: Path, mode: str) -> None:
    gate = _gate("steps_native:build", ["float-scalar"], [[4, 16]], capture=mode)
    obs = _observe(tmp_path, gate)
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.RED and "replay 1 (fresh inputs)" in outcome.reason, outcome.reason
    assert "first at index 0: reference 0x" in outcome.reason


HAZARDS = ["host-scalar-frozen", "fresh-allocation", "outputs-not-written", "skipped-warmup", "stale-input"]


@pytest.mark.parametrize("hazard", HAZARDS)
@pytest.mark.parametrize("mode", ["stream", "torch"])
def test_each_hazard_turns_the_native_gate_red(tmp_path: Path, hazard: str, mode: str) -> None:
    gate = _gate("steps_native:build", ["mlp"], [[4, 16]], capture=mode, hazard=hazard)
    obs = _observe(tmp_path, gate)
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.RED, f"{hazard}: {outcome.verdict} {outcome.reason}"
    assert outcome.reason.startswith(f"hazard {hazard}: ")
    assert all(o["hazard"] == hazard for o in obs)


def test_stale_input_is_unscoped_for_a_four_method_step_and_hazard_evidence_is_never_the_gates(
        tmp_path: Path) -> None:
    gate = _gate("steps:make_step", ["correct"], [[256]], hazard="stale-input")
    outcome = grade(gate, _observe(tmp_path, gate))
    assert outcome.verdict is Verdict.NO_DECISION and "does not apply" in outcome.reason
    hazard = _gate("steps:make_step", ["correct"], [[256]], hazard="outputs-not-written")
    (tmp_path / "h").mkdir()
    obs = _observe(tmp_path / "h", hazard)
    assert grade(hazard, obs).verdict is Verdict.RED
    plain = _gate("steps:make_step", ["correct"], [[256]])
    assert grade(plain, obs).verdict is Verdict.NO_DECISION
