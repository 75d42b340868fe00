"""The device run of issue 38, regraded here without a GPU: docs/evidence/collective/ holds what
tests/gates/gpu/test_collective_gpu.py exported (REDFIRST_EVIDENCE_OUT) on the device machine:
`gates export` folders of the tensor-parallel example's NCCL gates, the hazards report, and the
raw observations of the HF BERT gate. Every verdict must come out of the records again."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

EVIDENCE = Path(__file__).resolve().parents[2] / "docs" / "evidence" / "collective"
HOW = ("run tests/gates/gpu/test_collective_gpu.py on the device machine with REDFIRST_EVIDENCE_OUT set and commit "
       "what it wrote to docs/evidence/collective/")


def _regrade(folder: Path) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "regrade", str(folder)],
                       capture_output=True, text=True, timeout=120, cwd=folder)
    return p.returncode, p.stdout.splitlines()[0] if p.stdout else p.stderr


def _record(verdict: str, gate: str) -> Path:
    found = sorted((EVIDENCE / verdict / gate).glob("*/record.json"))
    assert found, f"no exported {verdict.upper()} record of {gate} under {EVIDENCE}: {HOW}"
    return found[0].parent


def test_the_nccl_tp_gate_regrades_green_at_world_size_1() -> None:
    code, first = _regrade(_record("green", "tp-mlp-cuda"))
    assert code == 0 and first.startswith("tp-mlp-cuda: GREEN"), first
    record = _record("green", "tp-mlp-cuda")
    arms = [json.loads(line) for f in record.rglob("evidence.jsonl") for line in f.read_text().splitlines()]
    status = next(a for a in arms if a.get("observation") == "cuda-graph-rank")
    assert (status["world_size"], status["backend"], status["exit"]) == (1, "nccl", 0)


def test_the_nccl_host_scalar_gate_regrades_red_at_replay() -> None:
    code, first = _regrade(_record("red", "tp-host-scalar-cuda"))
    assert code == 1 and "rank 0: host-scalar [4, 256]: replay 1 (fresh inputs)" in first, first


def test_the_collective_hazards_report_is_filed() -> None:
    path = EVIDENCE / "hazards.json"
    assert path.is_file(), f"no {path}: {HOW}"
    outcomes = {i["hazard"]: i["verdict"] for i in json.loads(path.read_text())["items"]}
    assert outcomes == {"collective-order": "UNSCOPED", "rank-host-branch": "KILLED", "group-in-step": "KILLED"}


def _bert_gate(max_ulp: int | None = None) -> Gate:
    options: list[tuple[str, Any]] = [("capture", "torch"), ("replays", 4), ("repeat_eager", 2),
                                      ("shapes", ((1, 64),)), ("variants", ("bert",)), ("warmup", 2)]
    if max_ulp is not None:
        options.append(("max_ulp", max_ulp))
    return Gate(id="bert", source=Source(Path("g.yaml"), 1),
                driver=DriverSpec(type="cuda-graph", run="steps_bert:build", options=tuple(sorted(options))))


def test_hf_bert_regrades_red_at_replay0_and_green_within_the_distance_its_red_names() -> None:
    # On the H100 the captured kernels differed from eager on every replay, the fresh ones too; each
    # differing fresh replay equals bit for bit a capture made on its own inputs (kernel selection, not
    # staleness), so max_ulp set to the distance the RED names covers them all.
    path = EVIDENCE / "bert" / "evidence.jsonl"
    assert path.is_file(), f"no {path}: {HOW}"
    observations = [json.loads(line) for line in path.read_text().splitlines() if '"observation"' in line]
    red = grade(_bert_gate(), observations)
    found = re.search(r"replay 0 \(the captured inputs\) .*largest distance (\d+) ULP \((\d+) ULP over every replay a "
                      r"capture of its own inputs reproduces\): the captured kernels compute differently from eager "
                      r"on the same inputs \(kernel selection under capture\)", red.reason)
    assert red.verdict is Verdict.RED and found, red.reason
    replay0, needed = int(found.group(1)), int(found.group(2))
    assert needed > replay0
    within = grade(_bert_gate(max_ulp=needed), observations)
    assert within.verdict is Verdict.GREEN, within.reason
    assert f"replays within {needed} ULP of eager" in within.reason and "not bit-exact" in within.reason
    # replay 0's distance alone covers replay 0 only: the fresh replays stay RED, said to be kernel selection
    at0 = grade(_bert_gate(max_ulp=replay0), observations)
    assert at0.verdict is Verdict.RED and re.search(r"replay [1-9]\d* \(fresh inputs\)", at0.reason), at0.reason
    assert "equal bit for bit to a capture made on these inputs" in at0.reason, at0.reason
    below = grade(_bert_gate(max_ulp=replay0 - 1), observations)
    assert below.verdict is Verdict.RED and "replay 0 (the captured inputs)" in below.reason, below.reason
