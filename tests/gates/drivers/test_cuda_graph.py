"""The cuda-graph driver's grading: crafted observations that must never grade GREEN.

Each record starts as the exact shape the device child writes, built from real host
comparisons (redfirst.gates.cuda.comparator.compare_host over real arrays), then one field is bent the
way a broken child, a step writing into evidence.jsonl or a hand-edited record could bend it.
The exported H200 RED record of the stale-value step is also forged (resealed as redfirst/gates/store.py
seals) to show that `gates regrade` cannot be talked into GREEN by dropping raw counts.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from redfirst.gates.cuda import comparator
from redfirst.gates.cuda.observation import KIND, Compared, Observation
from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.gates.record import RECORD_FILE, VERDICT_FILE, Record, manifest
from redfirst.verdict import Verdict

REPO = Path(__file__).resolve().parents[3]
STALE_RED = REPO / "docs" / "evidence" / "red" / "facb96d592844a1f436b76b99176c07cbfd94cc3a2241b3b049a73e4e39323f0"
H200 = {"name": "NVIDIA H200", "compute_capability": "9.0", "uuid": "GPU-1"}
X = np.arange(1, 5, dtype=np.float32)


def gate(variants: tuple[str, ...] = ("dense",), shapes: tuple[tuple[int, ...], ...] = ((4,),),
         replays: int = 3, repeat_eager: int = 2) -> Gate:
    return Gate(id="g", source=Source(Path("g.yaml"), 1), driver=DriverSpec(
        type="cuda-graph", run="steps:make_step",
        options=(("repeat_eager", repeat_eager), ("replays", replays), ("shapes", shapes),
                 ("variants", variants), ("warmup", 1))))


def cmp(phase: str, index: int, ref: np.ndarray, cand: np.ndarray, output: str = "y") -> Compared:
    raw = comparator.compare_host(ref, cand, "float32")
    return Compared(phase, index, phase == "replay" and index > 0, output, raw.as_record())


def arm(variant: str = "dense", shape: tuple[int, ...] = (4,), replays: int = 3, outputs: tuple[str, ...] = ("y",),
        stale: bool = False, fresh_inputs: bool = True, eager_runs: int = 1) -> dict[str, Any]:
    """An honest child's record: fresh inputs give new outputs; `stale` replays keep the captured ones."""
    comps = [cmp("eager", r, X, X, o) for r in range(1, eager_runs + 1) for o in outputs]
    for k in range(replays + 1):
        ref = X * (k + 1) if fresh_inputs else X
        comps += [cmp("replay", k, ref, X if stale else ref, o) for o in outputs]
    obs = Observation(variant=variant, shape=shape, applicable=True, eager_passed=True, graph_required=True,
                      replays_completed=replays, replays_passed=replays, failure_class=None,
                      comparisons=tuple(comps), device=H200)
    return {"observation": KIND, **obs.fields()}


def bend(record: dict[str, Any], fn: Callable[[dict[str, Any]], None], phase: str | None = None) -> dict[str, Any]:
    for c in record["comparisons"]:
        if phase is None or c["phase"] == phase:
            fn(c)
    return record


def not_green(g: Gate, records: list[dict[str, Any]]) -> str:
    outcome = grade(g, records)
    assert outcome.verdict is not Verdict.GREEN, outcome.reason
    return outcome.reason


def test_the_honest_record_is_green() -> None:
    # the baseline every bent record below starts from
    assert grade(gate(), [arm()]).verdict is Verdict.GREEN
    assert grade(gate(repeat_eager=3), [arm(eager_runs=2, outputs=("a", "b"))]).verdict is Verdict.GREEN


@pytest.mark.parametrize("bent", ["absent", "null", "fraction", "bool", "string"])
def test_a_stale_replay_without_an_integer_differing_count_is_not_green(bent: str) -> None:
    def fn(c: dict[str, Any]) -> None:
        if bent == "absent":
            c.pop("differing")
        else:
            c["differing"] = {"null": None, "fraction": 0.5, "bool": False, "string": "0"}[bent]
    assert grade(gate(), [arm(stale=True)]).verdict is Verdict.RED
    not_green(gate(), [bend(arm(stale=True), fn, "replay")])


def test_a_zero_differing_count_contradicted_by_hashes_or_first_index_is_not_green() -> None:
    def zero(c: dict[str, Any]) -> None:
        c["differing"] = 0
    not_green(gate(), [bend(arm(stale=True), zero, "replay")])

    def zero_and_no_index(c: dict[str, Any]) -> None:
        c.update(differing=0, first_index=None, reference_bits=None, candidate_bits=None)
    reason = not_green(gate(), [bend(arm(stale=True), zero_and_no_index, "replay")])
    assert "hash" in reason


def test_a_comparison_without_hashes_is_not_green() -> None:
    def fn(c: dict[str, Any]) -> None:
        c.pop("reference_hash64")
        c.pop("candidate_hash64")
    not_green(gate(), [bend(arm(), fn)])


@pytest.mark.parametrize("shape", ["4", [4.7], [True, True, True, True][:1], None])
def test_a_shape_that_is_not_a_list_of_integers_is_not_green(shape: Any) -> None:
    record = arm()
    record["shape"] = shape
    not_green(gate(shapes=((4,),)), [record])
    record = arm(shape=(1, 4))
    record["shape"] = "14"
    not_green(gate(shapes=((1, 4),)), [record])


def test_fresh_written_as_a_string_or_values_as_a_bool_is_not_green() -> None:
    def fresh(c: dict[str, Any]) -> None:
        c["fresh"] = "no"
    not_green(gate(), [bend(arm(), fresh, "replay")])

    def values(c: dict[str, Any]) -> None:
        c["values"] = True
    not_green(gate(), [bend(arm(), values)])


def test_an_eager_comparison_with_a_dtype_or_shape_mismatch_is_not_green() -> None:
    def fn(c: dict[str, Any]) -> None:
        c["mismatch"] = "shape mismatch: reference [4], candidate [2, 2]"
    not_green(gate(), [bend(arm(), fn, "eager")])


def test_repeat_eager_counts_eager_runs_not_comparisons() -> None:
    # repeat_eager 3 asks for eager runs 1 and 2 compared with run 0; two outputs of run 1 are not that
    reason = not_green(gate(repeat_eager=3), [arm(outputs=("a", "b"))])
    assert "eager" in reason


def test_an_output_compared_eagerly_but_never_at_replay_is_not_green() -> None:
    record = arm(outputs=("a", "b"))
    record["comparisons"] = [c for c in record["comparisons"] if c["phase"] == "eager" or c["output"] == "a"]
    not_green(gate(), [record])


def test_an_output_compared_at_replay_but_never_eagerly_is_not_green() -> None:
    record = arm(outputs=("a", "b"))
    record["comparisons"] = [c for c in record["comparisons"] if c["phase"] == "replay" or c["output"] == "a"]
    not_green(gate(), [record])


def test_replays_whose_fresh_inputs_left_every_output_as_captured_are_not_green() -> None:
    # a step whose inputs(seed) ignores the seed: replays equal the captured run and cannot show a stale capture
    reason = not_green(gate(), [arm(fresh_inputs=False)])
    assert "fresh" in reason


def test_an_observed_arm_the_gate_does_not_declare_is_not_green() -> None:
    not_green(gate(), [arm(), arm(variant="moe", stale=True)])
    not_green(gate(), [arm(), arm(shape=(8,))])


def test_arms_without_a_device_identity_or_from_two_devices_are_not_green() -> None:
    record = arm()
    record["device"] = {}
    not_green(gate(), [record])
    other = arm(variant="moe")
    other["device"] = {"name": "NVIDIA A100", "compute_capability": "8.0", "uuid": "GPU-2"}
    not_green(gate(variants=("dense", "moe")), [arm(), other])


def test_a_failure_the_child_reported_is_not_green_even_without_a_failure_class() -> None:
    record = arm()
    record["failure"] = "replay 2: cudaErrorIllegalAddress"
    not_green(gate(), [record])


def _reseal(folder: Path) -> Path:
    """Forge: reseal an edited record the way redfirst/gates/store.py seals one (review only)."""
    record = Record.from_json(json.loads((folder / RECORD_FILE).read_text()))
    for name in (RECORD_FILE, VERDICT_FILE):
        (folder / name).unlink(missing_ok=True)
    sealed = dataclasses.replace(record, files=manifest(folder))
    (folder / RECORD_FILE).write_text(json.dumps(sealed.to_json(), indent=1, sort_keys=True) + "\n")
    return folder.rename(folder.parent / sealed.id)


def test_a_forged_h200_stale_record_without_differing_counts_does_not_regrade_green(tmp_path: Path) -> None:
    folder = tmp_path / STALE_RED.name
    shutil.copytree(STALE_RED, folder)
    ev = folder / "evidence" / "evidence.jsonl"
    lines = [json.loads(line) for line in ev.read_text().splitlines()]
    for line in lines:
        for c in line.get("comparisons", []):
            c.pop("differing")
        if "failure_class" in line:
            line.update(failure_class=None, failure=None)
    ev.write_text("".join(json.dumps(line) + "\n" for line in lines))
    forged = _reseal(folder)
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "regrade", str(forged)], capture_output=True,
                       text=True, timeout=120, cwd=tmp_path)
    first = p.stdout.splitlines()[0] if p.stdout else p.stderr
    assert p.returncode != 0 and "GREEN" not in first, first


def test_arms_from_a_device_the_lease_did_not_grant_are_not_green() -> None:
    from redfirst.gates.drivers.cuda_graph import lease_mismatch

    lease = {"gpus": [{"name": "NVIDIA H200", "slot": "gpu0", "sm": "9.0", "uuid": None}]}
    assert lease_mismatch(lease, [arm()]) is None
    assert lease_mismatch({}, [arm()]) is None  # no lease: the arms' own identity is all there is
    other = arm()
    other["device"] = {"name": "NVIDIA A100-SXM4-80GB", "compute_capability": "8.0", "uuid": "GPU-2"}
    found = lease_mismatch(lease, [other])
    assert found is not None and found.verdict is Verdict.NO_DECISION and "lease granted NVIDIA H200" in found.reason
    pinned = {"gpus": [{"name": "NVIDIA H200", "uuid": "GPU-9"}]}
    assert lease_mismatch(pinned, [arm()]) is not None  # same model, another board


def test_a_forged_record_whose_arms_name_another_device_than_its_lease_does_not_regrade_green(
        tmp_path: Path) -> None:
    source = REPO / "docs" / "evidence" / "records" / \
        "358b12429210cddfd7540f9d360b0fc980030879244e022a0d401b8d32c8c940"
    folder = tmp_path / source.name
    shutil.copytree(source, folder)
    ev = folder / "evidence" / "evidence.jsonl"
    lines = [json.loads(line) for line in ev.read_text().splitlines()]
    for line in lines:
        if "device" in line:
            line["device"] = {**line["device"], "name": "NVIDIA A100-SXM4-80GB", "uuid": "GPU-other"}
    ev.write_text("".join(json.dumps(line) + "\n" for line in lines))
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "regrade", str(_reseal(folder))],
                       capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert "GREEN" not in (p.stdout.splitlines() or [""])[0], p.stdout
