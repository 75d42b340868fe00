"""examples/tensor-parallel on CPU (issue 38): its simulated rank gates under the real `gates` and
`mutate` commands, each rank a real process, and every verdict re-derived by `gates regrade` from
the records alone. Runs on a copy of the example, so no state lands in the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tensor-parallel"


def cli(*argv: str, tool: str = "gates") -> tuple[int, dict[str, Any]]:
    proc = subprocess.run([sys.executable, "-m", f"redfirst.{tool}.cli", *argv, "--json"], capture_output=True,
                          text=True, timeout=180, check=False)
    try:
        return proc.returncode, json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"{tool} {argv[0]} printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")


@pytest.fixture(scope="module")
def ran(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int, dict[str, dict[str, Any]]]:
    root = tmp_path_factory.mktemp("tp") / "tensor-parallel"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__"))
    code, report = cli("run", "--root", str(root), "--device", "cpu")
    return root, code, {item["id"]: item for item in report["items"]}


def test_the_simulated_gates_run_on_cpu_green_and_red_by_design(ran: tuple[Path, int, dict[str, Any]]) -> None:
    _, code, items = ran
    assert {g: i["verdict"] for g, i in items.items()} == {
        "tp-mlp-sim": "GREEN", "tp-order-sim": "RED", "tp-host-scalar-sim": "RED"}, items
    assert code == 1
    assert items["tp-mlp-sim"]["counts"]["observed"].startswith("2 ranks (world size 2, tp size 2, backend sim), each GREEN")
    assert ("order-fault [4, 16]: rank 1 issued other collectives than rank 0 during eager: collective 0: all_reduce "
            "of 4 float32 into output ssq where rank 0 issued all_reduce of 64 float32 into output y") in \
        items["tp-order-sim"]["reason"]
    assert items["tp-host-scalar-sim"]["reason"].startswith(
        "rank 1: host-scalar [4, 16]: replay 1 (fresh inputs) output y")


def test_regrade_re_derives_every_verdict_from_the_records(ran: tuple[Path, int, dict[str, Any]]) -> None:
    root, _, items = ran
    for gate, item in items.items():
        _, again = cli("regrade", "--root", str(root), item["evidence"])
        regraded = again["items"][0]
        assert (regraded["verdict"], regraded["reason"]) == (item["verdict"], item["reason"]), gate


def test_mutate_hazards_injects_the_collective_hazards_and_the_gate_catches_each(
        ran: tuple[Path, int, dict[str, Any]]) -> None:
    root, _, _ = ran
    code, report = cli("hazards", "--root", str(root), "tp-mlp-sim", tool="mutations")
    outcomes = {i["hazard"]: (i["verdict"], i["reason"]) for i in report["items"]}
    assert {h: v for h, (v, _) in outcomes.items()} == {
        "collective-order": "KILLED", "rank-host-branch": "KILLED", "group-in-step": "KILLED"}, outcomes
    assert code == 0
    assert "rank 1 issued other collectives than rank 0" in outcomes["collective-order"][1]
    assert "GroupInCapture: a process group was created or destroyed inside the captured callable" in \
        outcomes["group-in-step"][1]
    assert outcomes["rank-host-branch"][1].startswith("rank 1: hazard rank-host-branch: graph-safe [4, 16]: replay 1")
