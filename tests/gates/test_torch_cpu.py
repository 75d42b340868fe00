"""Issue #15 on a machine without a GPU or torch: grading of torch-native and hazard evidence,
the `capture:` key, and torch gates that cannot run here are NO_DECISION, never GREEN.

Observations are built with real host comparisons (redfirst.gates.cuda.comparator.compare_host) in the
record shape the device child writes; torch is not installed here, and must stay so (CI)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from redfirst.gates.cuda import comparator
from redfirst.gates.cuda.observation import KIND, Compared, Observation
from redfirst.gates.drivers.cuda_graph import DRIVER, grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

REPO = Path(__file__).resolve().parents[2]
GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
H200 = {"name": "NVIDIA H200", "compute_capability": "9.0", "driver_api": "13.0", "runtime": "13.0"}


def gate(capture: str = "stream", hazard: str | None = None) -> Gate:
    options = [("capture", capture), ("repeat_eager", 2), ("replays", 2), ("shapes", ((4,),)),
               ("variants", ("mlp",)), ("warmup", 1)]
    if hazard is not None:
        options.append(("hazard", hazard))
    return Gate(id="g", source=Source(Path("g.yaml"), 1),
                driver=DriverSpec(type="cuda-graph", run="m:build", options=tuple(sorted(options))))


def arm(capture: str = "stream", hazard: str | None = None, frameworks: dict[str, str] | None = None,
        stale: bool = False) -> dict[str, Any]:
    x = np.arange(4, dtype=np.float32)
    comps = [Compared("eager", 1, False, "out", comparator.compare_host(x, x, "float32").as_record())]
    for k in range(3):
        ref = x * (k + 1)
        cand = x.copy() if stale and k else ref
        comps.append(Compared("replay", k, k > 0, "out", comparator.compare_host(ref, cand, "float32").as_record()))
    obs = Observation(variant="mlp", shape=(4,), applicable=True, eager_passed=True, graph_required=True,
                      replays_completed=2, replays_passed=2, failure_class=None, comparisons=tuple(comps),
                      device=H200, capture=capture, hazard=hazard,
                      frameworks={"torch": "2.11.0+cu130"} if frameworks is None else frameworks)
    return {"observation": KIND, **obs.fields()}


def test_torch_is_not_installed_here() -> None:
    # the CPU side (grading, regrading exported records) must not need torch
    assert importlib.util.find_spec("torch") is None


def test_green_names_the_capture_mode_and_torch_version() -> None:
    outcome = grade(gate("torch"), [arm("torch")])
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "captured by torch.cuda.CUDAGraph" in outcome.reason and "torch 2.11.0+cu130" in outcome.reason
    assert "captured by stream capture" in grade(gate(), [arm()]).reason


def test_capture_option_reaches_the_child() -> None:
    inv = DRIVER.invocation(gate("torch"), Path("."), Path("ev"))
    assert inv.argv[inv.argv.index("--capture") + 1] == "torch" and "--hazard" not in inv.argv
    inv = DRIVER.invocation(gate(hazard="stale-input"), Path("."), Path("ev"))
    assert inv.argv[inv.argv.index("--hazard") + 1] == "stale-input"


def test_hazard_evidence_is_never_the_gates_own_verdict() -> None:
    survived = arm(hazard="host-scalar-frozen")
    outcome = grade(gate(), [survived])
    assert outcome.verdict is Verdict.NO_DECISION and "not this gate's evidence" in outcome.reason
    assert grade(gate(hazard="host-scalar-frozen"), [survived]).verdict is Verdict.GREEN
    assert grade(gate(hazard="outputs-not-written"), [arm()]).verdict is Verdict.NO_DECISION


def test_hazard_run_reasons_name_the_hazard() -> None:
    outcome = grade(gate(hazard="stale-input"), [arm(hazard="stale-input", stale=True)])
    assert outcome.verdict is Verdict.RED and outcome.reason.startswith("hazard stale-input: ")


def test_unscoped_hazard_is_no_decision() -> None:
    record = {"observation": KIND, "unscoped": "hazard stale-input: needs a torch-native step"}
    outcome = grade(gate(hazard="stale-input"), [record])
    assert outcome.verdict is Verdict.NO_DECISION and "does not apply" in outcome.reason


@pytest.mark.parametrize("bad", [{"capture": "cudagraph"}, {"hazard": 3}, {"frameworks": ["torch"]}])
def test_malformed_capture_fields_are_no_decision(bad: dict[str, Any]) -> None:
    record = {**arm(), **bad}
    outcome = grade(gate(), [record])
    assert outcome.verdict is Verdict.NO_DECISION and "malformed" in outcome.reason


def test_records_without_the_new_fields_still_grade() -> None:
    # records exported before issue #15 carry no capture/hazard/frameworks
    record = {k: v for k, v in arm(frameworks={}).items() if k not in ("capture", "hazard", "frameworks")}
    assert grade(gate(), [record]).verdict is Verdict.GREEN


GATE_YAML = """gate: t
kind: G1
requires: {{device: cuda}}
driver: {{type: {driver}, run: "m:build", {extra}}}
"""


@pytest.mark.parametrize("driver,extra,ok,message", [
    ("cuda-graph", "variants: [a], shapes: [[1]], capture: torch", True, ""),
    ("cuda-graph", "variants: [a], shapes: [[1]], capture: stream", True, ""),
    ("cuda-graph", "variants: [a], shapes: [[1]], capture: graph", False, "capture"),
    ("cuda-graph", "variants: [a], shapes: [[1]], hazard: stale-input", False, "hazard"),
    ("python", "capture: torch", False, "capture"),
])
def test_capture_key_in_gate_files(tmp_path: Path, driver: str, extra: str, ok: bool, message: str) -> None:
    (tmp_path / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "t.yaml").write_text(GATE_YAML.format(driver=driver, extra=extra))
    p = subprocess.run([*GATES, "check", "--root", str(tmp_path)], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    if ok:
        assert p.returncode == 0, p.stdout + p.stderr
    else:
        assert p.returncode == 2, p.stdout + p.stderr
        assert "t.yaml:" in p.stderr and message in p.stderr, p.stderr
        assert "Traceback" not in p.stderr


def test_mutate_help_and_completion_name_hazards() -> None:
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--help"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0 and "  hazards " in p.stdout
    p = subprocess.run([*GATES, "completion", "bash"], capture_output=True, text=True, timeout=60)
    assert "hazards" in p.stdout
