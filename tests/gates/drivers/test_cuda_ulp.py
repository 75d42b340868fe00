"""Replay-0 differences explained (issue 38, 5): ULP distances on raw bits, and `max_ulp`.

The records are built as the device child builds them, from real host comparisons
(redfirst.gates.cuda.comparator.compare_host) with the largest ULP distance the child adds.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import numpy as np

from redfirst.gates.cuda.comparator import compare_host
from redfirst.gates.cuda.observation import KIND, Compared, Observation
from redfirst.gates.cuda.ulp import max_ulp, ulp_distance
from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": "9.0", "uuid": "GPU-1"}


def bits(x: float) -> int:
    return int(struct.unpack("<I", struct.pack("<f", x))[0])


def test_ulp_distance_is_counted_on_the_raw_bits() -> None:
    assert ulp_distance(0x3D1066CE, 0x3D1066CA, "float32") == 4          # the BERT value
    assert ulp_distance(bits(1.0), bits(float(np.nextafter(np.float32(1), np.float32(2)))), "float32") == 1
    assert ulp_distance(0x80000000, 0x00000000, "float32") == 0           # -0 and +0 are one number
    assert ulp_distance(0x80000001, 0x00000001, "float32") == 2           # across zero: -denormal, 0, +denormal
    assert ulp_distance(0x3F80, 0x3F83, "bfloat16") == 3
    assert ulp_distance(0xBC00, 0xBC01, "float16") == 1
    assert ulp_distance(0x7FC00000, 0x3F800000, "float32") is None       # a NaN is no distance


def test_max_ulp_reads_whole_buffers_in_their_dtype() -> None:
    ref = np.array([1.0, 2.0, -3.0, 0.5], dtype=np.float32)
    cand = ref.view(np.uint32).copy()
    cand[1] += 7
    cand[2] += 2
    assert max_ulp(ref.tobytes(), cand.tobytes(), "float32") == 7
    assert max_ulp(ref.tobytes(), ref.tobytes(), "float32") == 0
    nan = ref.copy()
    nan[0] = np.nan
    assert max_ulp(ref.tobytes(), nan.tobytes(), "float32") is None


def gate(max_ulp_option: int | None = None) -> Gate:
    options: list[tuple[str, Any]] = [("repeat_eager", 2), ("replays", 2), ("shapes", ((4,),)),
                                      ("variants", ("bert",)), ("warmup", 1)]
    if max_ulp_option is not None:
        options.append(("max_ulp", max_ulp_option))
    return Gate(id="bert", source=Source(Path("bert.yaml"), 1), driver=DriverSpec(
        type="cuda-graph", run="steps:bert", options=tuple(sorted(options))))


def compared(phase: str, index: int, ref: np.ndarray, cand: np.ndarray) -> Compared:
    raw = compare_host(ref, cand, "float32").as_record()
    if raw["differing"]:
        raw["max_ulp"] = max_ulp(ref.tobytes(), cand.tobytes(), "float32")
    return Compared(phase, index, phase == "replay" and index > 0, "last_hidden_state", raw)


def record(replay0_ulps: int, fresh_ulps: int = 0) -> dict[str, Any]:
    """Eager is deterministic; replay 0 differs from eager on the captured inputs by `replay0_ulps`."""
    x = np.array([0.125, 0.25, 0.5, 0.75], dtype=np.float32)
    comps = [compared("eager", 1, x, x)]
    for k in range(3):
        ref = x * (k + 1)
        cand = ref.view(np.uint32).copy()
        cand[1] += replay0_ulps if k == 0 else fresh_ulps
        comps.append(compared("replay", k, ref, cand.view(np.float32)))
    failed = next((c for c in comps if c.differing), None)
    obs = Observation(variant="bert", shape=(4,), applicable=True, eager_passed=True, graph_required=True,
                      replays_completed=2, replays_passed=2 if not fresh_ulps else 0,
                      failure_class="replay" if failed else None,
                      failure=f"replay {failed.index} output {failed.output}: 1 differing of 4" if failed else None,
                      comparisons=tuple(comps), device=H100)
    return {"observation": KIND, **obs.fields()}


def test_a_replay0_difference_states_its_ulp_distance_and_the_kernel_selection_reason() -> None:
    outcome = grade(gate(), [record(4)])
    assert outcome.verdict is Verdict.RED
    assert outcome.reason == (
        "bert [4]: replay 0 (the captured inputs) output last_hidden_state: 4 values, 1 differing; first at index 1: "
        "reference 0x3e800000 candidate 0x3e800004; largest distance 4 ULP: the captured kernels compute differently "
        "from eager on the same inputs (kernel selection under capture), not a stale capture")


def test_max_ulp_accepts_replay0_within_n_ulp_and_says_so_never_bit_exact() -> None:
    outcome = grade(gate(max_ulp_option=4), [record(4)])
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "replay 0 within 4 ULP of eager (largest 4 ULP; not bit-exact)" in outcome.reason
    over = grade(gate(max_ulp_option=3), [record(4)])
    assert over.verdict is Verdict.RED and "largest distance 4 ULP" in over.reason


def test_max_ulp_never_applies_to_fresh_replays() -> None:
    outcome = grade(gate(max_ulp_option=8), [record(1, fresh_ulps=1)])
    assert outcome.verdict is Verdict.RED
    assert outcome.reason.startswith("bert [4]: replay 1 (fresh inputs) output last_hidden_state"), outcome.reason
    assert "kernel selection" not in outcome.reason


def test_a_largest_distance_below_the_first_differences_own_is_not_believed() -> None:
    rec = record(6)
    for c in rec["comparisons"]:
        if c["phase"] == "replay" and c["index"] == 0:
            c["max_ulp"] = 2            # the first difference's raw bits say 6
    assert grade(gate(max_ulp_option=4), [rec]).verdict is Verdict.RED
