"""The CUDA side of gates where there is no GPU: NO_DECISION, never GREEN; section 6's grading
rules over raw observations; the host comparator as the device comparator's twin; and the
exported H200 records regraded here.

The observations graded below are built from real host comparisons (redfirst.gates.cuda.comparator.
compare_host over real arrays), in the exact record shape the device child writes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from redfirst.gates import compare
from redfirst.gates.cuda import comparator
from redfirst.gates.cuda.observation import KIND, Compared, Observation
from redfirst.gates.drivers.cuda_graph import DRIVER, grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Cause, Verdict

REPO = Path(__file__).resolve().parents[2]
EVIDENCE = REPO / "docs" / "evidence"
GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
H200 = {"name": "NVIDIA H200", "compute_capability": "9.0", "driver_api": "13.0", "runtime": "13.0"}


def _has_device() -> bool:
    try:
        from redfirst.gates.cuda import rt

        rt.device()
    except Exception:
        return False
    return True


no_gpu = pytest.mark.skipif(_has_device(), reason="a CUDA device is present; the GPU tests cover this machine")


def gate(variants: tuple[str, ...] = ("dense",), shapes: tuple[tuple[int, ...], ...] = ((4,),),
         replays: int = 3) -> Gate:
    return Gate(id="g", source=Source(Path("g.yaml"), 1), driver=DriverSpec(
        type="cuda-graph", run="steps:make_step",
        options=(("repeat_eager", 2), ("replays", replays), ("shapes", shapes), ("variants", variants),
                 ("warmup", 1))))


def compared(phase: str, index: int, ref: np.ndarray, cand: np.ndarray, output: str = "y") -> Compared:
    raw = comparator.compare_host(ref, cand, "float32")
    return Compared(phase, index, phase == "replay" and index > 0, output, raw.as_record())


def arm(variant: str = "dense", shape: tuple[int, ...] = (4,), replays: int = 3, stale_from: int | None = None,
        eager_differs: bool = False, **fields: Any) -> dict[str, Any]:
    """One observation record as the child writes it, with real host comparisons."""
    x = np.arange(4, dtype=np.float32)
    comps = [compared("eager", 1, x, x + 1 if eager_differs else x)]
    for k in range(replays + 1):
        ref = x * (k + 1)  # fresh inputs, fresh outputs; a stale replay keeps the captured output
        cand = x.copy() if stale_from is not None and k >= stale_from else ref.copy()
        comps.append(compared("replay", k, ref, cand))
    completed = replays
    obs = Observation(variant=variant, shape=shape, applicable=True, eager_passed=not eager_differs,
                      graph_required=True, replays_completed=completed, replays_passed=completed,
                      failure_class=None, comparisons=tuple(comps), device=H200)
    data = {"observation": KIND, **obs.fields()}
    data.update(fields)
    return data


def test_all_arms_replayed_bit_exact_is_green_with_counts() -> None:
    outcome = grade(gate(), [arm()])
    assert outcome.verdict is Verdict.GREEN
    assert "dense [4]: 12 values, 0 differing, 3 replays" in outcome.reason and "NVIDIA H200" in outcome.reason


def test_stale_replay_is_red_with_first_index_and_both_bit_patterns() -> None:
    outcome = grade(gate(), [arm(stale_from=1, failure_class="replay")])
    assert outcome.verdict is Verdict.RED and outcome.cause is Cause.ASSERTION
    assert "replay 1 (fresh inputs) output y: 4 values, 3 differing; first at index 1" in outcome.reason
    assert "reference 0x40000000 candidate 0x3f800000" in outcome.reason


def test_tampered_aggregates_change_nothing() -> None:
    # the child's replays_passed/eager_passed say all is well; the raw comparisons say otherwise
    record = arm(stale_from=2, replays_passed=3, failure_class=None)
    assert grade(gate(), [record]).verdict is Verdict.RED


def test_declared_variant_not_observed_is_no_decision() -> None:
    outcome = grade(gate(variants=("dense", "moe")), [arm()])
    assert outcome.verdict is Verdict.NO_DECISION and "moe [4]: declared but not observed" in outcome.reason


def test_declared_shape_not_observed_is_no_decision() -> None:
    outcome = grade(gate(shapes=((4,), (8,))), [arm()])
    assert outcome.verdict is Verdict.NO_DECISION and "dense [8]" in outcome.reason


def test_no_observation_at_all_is_no_decision() -> None:
    assert grade(gate(), []).verdict is Verdict.NO_DECISION


def test_eager_not_deterministic_is_no_decision() -> None:
    outcome = grade(gate(), [arm(eager_differs=True)])
    assert outcome.verdict is Verdict.NO_DECISION and "eager not deterministic" in outcome.reason


def test_fewer_replays_than_declared_is_red() -> None:
    outcome = grade(gate(replays=4), [arm(replays=3)])
    assert outcome.verdict is Verdict.RED and "3 of 4 replays with fresh inputs completed" in outcome.reason


def test_capture_failure_is_red() -> None:
    record = arm(replays=0, failure_class="capture", failure="cudaErrorStreamCaptureUnsupported")
    record["comparisons"] = [c for c in record["comparisons"] if c["phase"] == "eager"]
    outcome = grade(gate(), [record])
    assert outcome.verdict is Verdict.RED and "capture failed: cudaErrorStreamCaptureUnsupported" in outcome.reason


def test_eager_failure_is_red() -> None:
    outcome = grade(gate(), [arm(failure_class="eager", failure="ValueError: boom", comparisons=[])])
    assert outcome.verdict is Verdict.RED and "failed eagerly" in outcome.reason


def test_applicability_disagreement_is_red() -> None:
    assert grade(gate(), [arm(applicable=False)]).verdict is Verdict.RED
    assert grade(gate(), [arm(applicable_at_capture=False)]).verdict is Verdict.RED


def test_not_applicable_and_not_required_is_not_green() -> None:
    outcome = grade(gate(), [arm(applicable=False, graph_required=False, comparisons=[])])
    assert outcome.verdict is Verdict.NO_DECISION


def test_zero_values_compared_is_no_decision() -> None:
    empty = np.zeros(0, dtype=np.float32)
    record = arm()
    record["comparisons"] = [c.as_record() for c in (
        compared("eager", 1, empty, empty), *(compared("replay", k, empty, empty) for k in range(4)))]
    outcome = grade(gate(), [record])
    assert outcome.verdict is Verdict.NO_DECISION and "compared 0 values" in outcome.reason


def test_one_red_arm_outranks_a_missing_one() -> None:
    outcome = grade(gate(variants=("dense", "moe")), [arm(stale_from=1)])
    assert outcome.verdict is Verdict.RED


def test_unavailable_is_no_decision_and_error_is_error() -> None:
    outcome = grade(gate(), [{"observation": KIND, "unavailable": "no CUDA device"}])
    assert outcome.verdict is Verdict.NO_DECISION and outcome.cause is Cause.ENVIRONMENT
    assert "cannot produce capture evidence: no CUDA device" in outcome.reason
    outcome = grade(gate(), [{"observation": KIND, "error": "cannot load factory 'x:y'"}])
    assert outcome.verdict is Verdict.ERROR


def test_malformed_observation_is_no_decision() -> None:
    record = arm()
    record["applicable"] = "yes"
    assert grade(gate(), [record]).verdict is Verdict.NO_DECISION


def test_duplicate_observation_is_no_decision() -> None:
    assert grade(gate(), [arm(), arm()]).verdict is Verdict.NO_DECISION


@no_gpu
def test_child_without_device_records_unavailable_and_grades_no_decision(tmp_path: Path) -> None:
    g = gate()
    inv = DRIVER.invocation(g, tmp_path, tmp_path / "ev")
    assert inv.argv[1:4] == ("-m", "redfirst.gates.cuda.graph_child", "--run")
    p = subprocess.run(inv.argv, cwd=tmp_path, env={**os.environ, **dict(inv.env)}, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in (tmp_path / "ev" / "evidence.jsonl").read_text().splitlines()]
    assert [r["observation"] for r in records] == [KIND] and "unavailable" in records[0]
    outcome = grade(g, records)
    assert outcome.verdict is Verdict.NO_DECISION and "cannot produce capture evidence" in outcome.reason


@no_gpu
@pytest.mark.parametrize("what", ["rebegin", "device"])
def test_probe_without_device_exits_3(what: str) -> None:
    p = subprocess.run([*GATES, "probe", what], capture_output=True, text=True, timeout=60, cwd=REPO)
    assert p.returncode == 3, p.stdout + p.stderr
    assert "NO_DECISION" in p.stdout


def test_probe_usage_error_exits_2() -> None:
    p = subprocess.run([sys.executable, "-m", "redfirst.gates.cuda.probe", "sideways"], capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 2


@no_gpu
def test_seam_cuda_gates_are_no_decision_never_green(tmp_path: Path) -> None:
    root = tmp_path / "seam"
    shutil.copytree(REPO / "examples" / "seam", root, ignore=shutil.ignore_patterns(".redfirst", ".mypy_cache",
                                                                                   "__pycache__"))
    p = subprocess.run([*GATES, "run", "--root", str(root), "--json", "-k", "cuda"], capture_output=True,
                       text=True, timeout=120, cwd=root)
    doc = json.loads(p.stdout)
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert set(verdicts) >= {"seam-g1-replay-cuda", "seam-g2-reachability-cuda", "seam-g3-counts-cuda",
                             "seam-g1-graph-cuda"}
    assert set(verdicts.values()) == {"NO_DECISION"}
    assert p.returncode == 3


@pytest.mark.parametrize("dtype", ["uint8", "int16", "bfloat16", "float16", "float32", "int64", "float64"])
def test_host_comparator_report_is_the_compare_module_report(dtype: str) -> None:
    from redfirst.gates import dtypes

    dt = dtypes.lookup(dtype)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, 1001 * dt.itemsize, dtype=np.uint8).view(dt.bits)
    b = a.copy()
    b[[3, 700]] ^= dt.bits.type(1)
    raw = comparator.compare_host(a, b, dtype)
    assert raw.report() == compare.bit_exact(a, b, dtype, dtype, a.shape, b.shape)
    assert (raw.differing, raw.first_index) == (2, 3)
    assert comparator.RawComparison.from_record(json.loads(json.dumps(raw.as_record()))) == raw


def _reference_hash64(data: bytes) -> str:
    # the definition in redfirst/gates/cuda/comparator.py's docstring, one word at a time
    mask = (1 << 64) - 1

    def fmix(x: int) -> int:
        x ^= x >> 32
        x = (x * comparator.MIX) & mask
        return x ^ (x >> 32)

    padded = data + b"\0" * (-len(data) % 8)
    total = 0
    for i in range(len(padded) // 8):
        w = int.from_bytes(padded[8 * i: 8 * i + 8], "little")
        total = (total + fmix(w ^ ((i * comparator.PHI) & mask))) & mask
    return f"0x{fmix(total ^ len(data)):016x}"


@pytest.mark.parametrize("nbytes", [0, 1, 7, 8, 9, 16, 1000, 4099])
def test_host_hash64_follows_its_definition(nbytes: int) -> None:
    data = np.random.default_rng(nbytes).integers(0, 256, nbytes, dtype=np.uint8)
    assert comparator.host_hash64(data) == _reference_hash64(data.tobytes())
    assert comparator.host_hash64(data, block_words=3) == comparator.host_hash64(data)


def test_hash64_tells_buffers_apart() -> None:
    a = np.zeros(64, dtype=np.uint8)
    b = a.copy()
    b[63] = 1
    assert comparator.host_hash64(a) != comparator.host_hash64(b)
    assert comparator.host_hash64(a) != comparator.host_hash64(a[:63])  # length is hashed too


def _exported(kind: str) -> list[Path]:
    return sorted(p.parent for p in (EVIDENCE / kind).glob("*/record.json"))


def _regrade(folder: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, "regrade", str(folder)], capture_output=True, text=True, timeout=120, cwd=folder)


def _on_h200(folder: Path) -> bool:
    # the lease granted an H200, and every cuda-graph arm names that device (not just the text anywhere)
    context = json.loads((folder / "record.json").read_text())["context"]
    leased = [g.get("name") for g in context.get("gpus") or ()]
    arms = [json.loads(line) for f in folder.rglob("evidence.jsonl") for line in f.read_text().splitlines()]
    devices = [a["device"].get("name") for a in arms if a.get("observation") == KIND and "device" in a]
    return leased == ["NVIDIA H200"] and all(d == "NVIDIA H200" for d in devices)


def test_exported_h200_records_regrade_green_here() -> None:
    records = _exported("records")
    assert len(records) >= 4, f"expected the exported GREEN H200 records under {EVIDENCE / 'records'}"
    ids = set()
    for folder in records:
        p = _regrade(folder)
        first = p.stdout.splitlines()[0] if p.stdout else ""
        assert p.returncode == 0 and ": GREEN" in first, f"{folder.name}: {p.stdout}{p.stderr}"
        assert _on_h200(folder), f"{folder.name}: no H200 device identity in the record"
        ids.add(first.split(":", 1)[0])
    assert {"seam-g1-replay-cuda", "seam-g2-reachability-cuda", "seam-g3-counts-cuda", "seam-g1-graph-cuda"} <= ids


def test_exported_h200_red_records_regrade_red_here() -> None:
    records = _exported("red")
    assert records, f"expected the exported RED H200 records under {EVIDENCE / 'red'}"
    reasons = {}
    for folder in records:
        p = _regrade(folder)
        first = p.stdout.splitlines()[0] if p.stdout else ""
        assert p.returncode == 1 and ": RED" in first, f"{folder.name}: {p.stdout}{p.stderr}"
        assert _on_h200(folder)
        reasons[first.split(":", 1)[0]] = first
    # the stale host value: RED at a replay on fresh inputs, never at eager or capture
    assert "replay 1 (fresh inputs)" in reasons["affine-stale-cuda"]
