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


def recaptured(rec: dict[str, Any], k: int, stale_ulps: int = 0) -> dict[str, Any]:
    """`rec` with the child's "recapture" comparison of fresh replay k: its output (the reference)
    against a capture made on its own inputs, replayed once; `stale_ulps` apart where the first
    capture is stale."""
    replay = next(c for c in rec["comparisons"] if c["phase"] == "replay" and c["index"] == k)
    x = np.array([0.125, 0.25, 0.5, 0.75], dtype=np.float32) * (k + 1)
    out = x.view(np.uint32).copy()
    out[1] += int(replay["max_ulp"] or 0)        # what replay k gave (its candidate)
    again = out.copy()
    again[2] += stale_ulps
    comp = compared("recapture", k, out.view(np.float32), again.view(np.float32))
    assert comp.raw["reference_hash64"] == replay["candidate_hash64"]
    rec["comparisons"].append({**comp.as_record(), "fresh": True})
    return rec


def test_max_ulp_covers_a_fresh_replay_only_where_a_capture_of_its_own_inputs_gives_it_bit_for_bit() -> None:
    rec = record(4, fresh_ulps=6)
    for k in (1, 2):
        recaptured(rec, k)
    outcome = grade(gate(max_ulp_option=6), [rec])
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "within 6 ULP of eager (largest 6 ULP; not bit-exact" in outcome.reason
    assert "each fresh replay equal bit for bit to a capture of its own inputs" in outcome.reason
    assert "0 differing" not in outcome.reason
    # the allowance is the gate's: one ULP less and the fresh replays are RED, with the reason
    over = grade(gate(max_ulp_option=5), [rec])
    assert over.verdict is Verdict.RED
    assert "replay 1 (fresh inputs)" in over.reason and "equal bit for bit to a capture made on these inputs" \
        in over.reason and "kernel selection under capture" in over.reason


def test_a_fresh_replay_a_capture_of_its_own_inputs_does_not_reproduce_is_stale_whatever_max_ulp_says() -> None:
    rec = record(4, fresh_ulps=6)
    recaptured(rec, 1, stale_ulps=1)
    recaptured(rec, 2)
    outcome = grade(gate(max_ulp_option=100), [rec])
    assert outcome.verdict is Verdict.RED
    assert outcome.reason.startswith("bert [4]: replay 1 (fresh inputs)"), outcome.reason
    assert "differs from a capture made on these inputs" in outcome.reason and "stale capture" in outcome.reason


def test_a_recapture_of_another_output_proves_nothing() -> None:
    rec = recaptured(record(4, fresh_ulps=6), 1)
    recaptured(rec, 2)
    for c in rec["comparisons"]:
        if c["phase"] == "recapture" and c["index"] == 1:
            other = compare_host(np.ones(4, np.float32), np.ones(4, np.float32), "float32").as_record()
            c.update({k: other[k] for k in ("reference_hash64", "candidate_hash64")})   # not replay 1's output
    assert grade(gate(max_ulp_option=6), [rec]).verdict is Verdict.RED


def test_a_replay0_red_names_the_distance_max_ulp_needs_over_every_replay_a_recapture_reproduces() -> None:
    rec = record(4, fresh_ulps=6)
    for k in (1, 2):
        recaptured(rec, k)
    outcome = grade(gate(), [rec])
    assert outcome.verdict is Verdict.RED
    assert "largest distance 4 ULP" in outcome.reason
    assert "6 ULP over every replay a capture of its own inputs reproduces" in outcome.reason, outcome.reason
    assert grade(gate(max_ulp_option=6), [rec]).verdict is Verdict.GREEN


def test_a_comparison_recorded_twice_is_not_evidence() -> None:
    # a stale recapture of replay 1 followed by one that reproduces it: either could be believed
    rec = record(4, fresh_ulps=6)
    recaptured(rec, 1, stale_ulps=1)
    recaptured(rec, 1)
    recaptured(rec, 2)
    outcome = grade(gate(max_ulp_option=6), [rec])
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "recapture 1 output last_hidden_state compared twice" in outcome.reason, outcome.reason
    # a replay counted twice would count its values twice
    rec = recaptured(recaptured(record(4, fresh_ulps=6), 1), 2)
    rec["comparisons"].append(dict(next(c for c in rec["comparisons"] if c["phase"] == "replay" and c["index"] == 1)))
    outcome = grade(gate(max_ulp_option=6), [rec])
    assert outcome.verdict is Verdict.NO_DECISION and "replay 1 output last_hidden_state compared twice" \
        in outcome.reason, outcome.reason
