"""examples/torch-graph where there is no GPU and no torch: its gates are NO_DECISION, never GREEN;
`mutate hazards` decides nothing (DISCARDED); and its exported H200 records regrade as filed."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst.gates.runner import GateResult
from redfirst.mutations.hazards import HazardResult, exit_of, outcome_of
from redfirst.verdict import Cause, MutationOutcome, Verdict

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "torch-graph"
EVIDENCE = REPO / "docs" / "evidence" / "torch"
GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]
CUDA_GRAPH = ("tg-g1-lm-graph-safe", "tg-g1-lm-graph-safe-stream", "tg-g1-lm-host-temperature")


@pytest.fixture
def example(tmp_path: Path) -> Path:
    root = tmp_path / "tg"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__", ".mypy_cache"))
    return root


def _has_device() -> bool:
    try:
        from redfirst.gates.cuda import rt

        rt.device()
    except Exception:
        return False
    return True


no_gpu = pytest.mark.skipif(_has_device(), reason="a CUDA device is present; the GPU run covers this")


@no_gpu
def test_example_gates_are_no_decision_never_green_and_name_torch_where_installed(example: Path,
                                                                                tmp_path: Path) -> None:
    # a torch distribution's metadata only (no module): the record names the version it could import
    info = tmp_path / "site" / "torch-2.11.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch\nVersion: 2.11.0\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), *sys.path])}
    p = subprocess.run([*GATES, "run", "--root", str(example), "--json"], capture_output=True, text=True,
                       timeout=120, cwd=example, env=env)
    doc = json.loads(p.stdout)
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert set(verdicts) == {*CUDA_GRAPH, "tg-g1-breakable"}
    assert set(verdicts.values()) == {"NO_DECISION"} and p.returncode == 3
    # the reason says what is missing, in the words of the driver, before why no box served the gate
    reasons = {i["id"]: i["reason"] for i in doc["items"]}
    assert all(reasons[g].startswith("cuda-graph cannot produce capture evidence here: ") for g in CUDA_GRAPH), reasons
    assert reasons["tg-g1-breakable"].startswith("box local lacks label gpus>=1"), reasons   # a python driver
    for item in doc["items"]:
        record = json.loads((example / ".redfirst" / "evidence" / item["evidence"] / "record.json").read_text())
        assert record["context"]["frameworks"] == {"torch": "2.11.0"}


@no_gpu
def test_the_torch_factorys_child_says_it_cannot_produce_capture_evidence(example: Path, tmp_path: Path) -> None:
    from redfirst.gates.api import load_gates
    from redfirst.gates.drivers.cuda_graph import DRIVER, grade

    gate = next(g for g in load_gates(example) if g.id == "tg-g1-lm-graph-safe")
    inv = DRIVER.invocation(gate, example, tmp_path)
    assert inv.argv[inv.argv.index("--capture") + 1] == "torch"
    p = subprocess.run(inv.argv, cwd=inv.cwd, env={**os.environ, **dict(inv.env)}, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    records = [json.loads(line) for line in (tmp_path / "evidence.jsonl").read_text().splitlines()]
    outcome = grade(gate, records)
    assert outcome.verdict is Verdict.NO_DECISION and "cannot produce capture evidence" in outcome.reason


@no_gpu
def test_mutate_hazards_without_a_device_discards_every_hazard(example: Path) -> None:
    p = subprocess.run([*MUTATE, "hazards", "tg-g1-lm-graph-safe", "--root", str(example), "--json"],
                       capture_output=True, text=True, timeout=120, cwd=example)
    doc = json.loads(p.stdout)
    assert p.returncode == 3 and doc["exit"] == 3
    assert [i["hazard"] for i in doc["items"]] == ["host-scalar-frozen", "fresh-allocation", "outputs-not-written",
                                                   "skipped-warmup", "stale-input"]
    assert {i["verdict"] for i in doc["items"]} == {"DISCARDED"}
    assert all("not GREEN" in i["reason"] for i in doc["items"])


@pytest.mark.parametrize("args,message", [
    (["hazards", "no-such-gate"], "no gate 'no-such-gate'"),
    (["hazards", "tg-g1-breakable"], "hazards are for cuda-graph gates"),
    (["hazards", "tg-g1-lm-graph-safe", "--hazard", "cosmic-ray"], "invalid choice"),
])
def test_mutate_hazards_usage_errors_exit_2(example: Path, args: list[str], message: str) -> None:
    p = subprocess.run([*MUTATE, *args, "--root", str(example)], capture_output=True, text=True, timeout=60,
                       cwd=example)
    assert p.returncode == 2 and message in p.stderr, p.stderr
    assert "Traceback" not in p.stderr


def _result(verdict: Verdict, reason: str = "r") -> GateResult:
    return GateResult("g", verdict, Cause.ASSERTION if verdict is Verdict.RED else None, reason)


def test_hazard_outcomes_and_exit_codes() -> None:
    assert outcome_of(_result(Verdict.RED)) is MutationOutcome.KILLED
    assert outcome_of(_result(Verdict.GREEN)) is MutationOutcome.SURVIVED
    assert outcome_of(_result(Verdict.NO_DECISION, "the hazard does not apply to this step: x")) is \
        MutationOutcome.UNSCOPED
    assert outcome_of(_result(Verdict.NO_DECISION)) is MutationOutcome.DISCARDED
    assert outcome_of(_result(Verdict.ERROR)) is MutationOutcome.ERROR

    def of(*outcomes: MutationOutcome) -> int:
        return exit_of([HazardResult("g", "h", o, "") for o in outcomes])

    assert of(MutationOutcome.KILLED, MutationOutcome.UNSCOPED) == 0
    assert of(MutationOutcome.KILLED, MutationOutcome.SURVIVED) == 1
    assert of(MutationOutcome.KILLED, MutationOutcome.DISCARDED) == 3
    assert of(MutationOutcome.SURVIVED, MutationOutcome.ERROR) == 2
    assert of(MutationOutcome.UNSCOPED) == 3


def _regrade(folder: Path) -> tuple[str, str, dict]:
    p = subprocess.run([*GATES, "regrade", str(folder)], capture_output=True, text=True, timeout=60, cwd=REPO)
    first = p.stdout.splitlines()[0]
    context = json.loads((folder / "record.json").read_text())["context"]
    return first, str(p.returncode), context


def _records(kind: str) -> list[Path]:
    return sorted(p.parent for p in (EVIDENCE / kind).glob("*/*/record.json"))


def test_exported_torch_records_regrade_green_here() -> None:
    folders = _records("green")
    assert {f.parent.name for f in folders} == {"tg-g1-lm-graph-safe", "tg-g1-lm-graph-safe-stream", "tg-g1-breakable"}
    for folder in folders:
        first, code, context = _regrade(folder)
        assert code == "0" and ": GREEN" in first, first
        assert context["gpus"][0]["name"] == "NVIDIA H200" and context["frameworks"]["torch"].startswith("2.11")
        if folder.parent.name != "tg-g1-breakable":
            assert "torch 2.11" in first and "on NVIDIA H200" in first


def test_exported_torch_red_records_regrade_red_with_the_first_index_and_both_bit_patterns() -> None:
    folders = _records("red")
    assert {f.parent.name for f in folders} == {"tg-g1-lm-host-temperature", "tg-g1-breakable-tg-drop-writeback"}
    for folder in folders:
        first, code, context = _regrade(folder)
        assert code == "1" and ": RED (assertion)" in first, first
        assert "first at index 0" in first and "reference 0x" in first and "candidate 0x" in first
        assert context["frameworks"]["torch"].startswith("2.11")
