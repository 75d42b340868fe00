"""A declared box proves nothing about this machine (issue 34.4): a gate's requirements are judged by what is
detected where its command runs, and a local backend's declared box runs its commands here."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from redfirst.leases import detect

FLEET = """\
leases:
  boxes:
    thor: {gpus: 2, labels: {gpu_model: h200, sm: "9.0", cuda: "12.6", rack: r7}}
"""

GATE = """\
gate: leased
claim: leased run
driver:
  type: command
  run: [sh, -c, "echo ok"]
exit_only: "a leasing test only needs the command to start"
requires: {requires}
"""


def _gates(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    exe = shutil.which("gates") or str(Path(sys.executable).with_name("gates"))
    return subprocess.run([exe, *args], cwd=root, capture_output=True, text=True, timeout=300)


def _repo(root: Path, requires: str) -> Path:
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "redfirst.yaml").write_text(FLEET)
    (root / "gates").mkdir()
    (root / "gates" / "leased.yaml").write_text(GATE.format(requires=requires))
    return root


def _item(out: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert "Traceback" not in out.stderr, out.stderr
    item: dict[str, object] = json.loads(out.stdout)["items"][0]
    return item


@pytest.mark.parametrize(("requires", "named"), [
    ("{device: cuda}", "GPU"),
    ("{gpus: 1}", "GPU"),
    ("{select: gpu_model=h200}", "gpu_model=h200"),
    ("{select: sm>=9.0}", "sm>=9.0"),
])
def test_a_declared_box_whose_command_runs_here_never_satisfies_a_hardware_requirement(
        repo: Path, lease_db: Path, requires: str, named: str) -> None:
    # Whatever this machine has, box thor's GPUs and labels are only declared: its command runs here with none of them.
    root = _repo(repo, requires)
    out = _gates(root, "run", "--lease", "thor", "--lease-wait", "10", "--json")
    item = _item(out)
    assert out.returncode == 3 and item["verdict"] == "NO_DECISION", out.stdout + out.stderr
    reason = str(item["reason"])
    assert named in reason and "thor" in reason and "declared" in reason, reason


def test_a_cuda_gate_on_a_machine_without_gpus_is_no_decision_with_or_without_a_lease(
        repo: Path, lease_db: Path) -> None:
    if detect.local_gpus()[0]:
        pytest.skip("this machine has a GPU: the local box can serve the gate")
    root = _repo(repo, "{device: cuda}")
    plain = _item(_gates(root, "run", "--json"))
    leased = _item(_gates(root, "run", "--lease", "thor", "--lease-wait", "10", "--json"))
    assert plain["verdict"] == leased["verdict"] == "NO_DECISION", (plain, leased)


def test_a_declared_label_nothing_detects_still_places_the_lease(repo: Path, lease_db: Path) -> None:
    # `rack` is no hardware fact: detection knows nothing of it, so the declaration is all there is to place by.
    root = _repo(repo, "{select: rack=r7}")
    out = _gates(root, "run", "--lease", "thor", "--lease-wait", "10", "--json")
    item = _item(out)
    assert out.returncode == 0 and item["verdict"] == "GREEN", out.stdout + out.stderr
    record = json.loads(next((root / ".redfirst").rglob("record.json")).read_text())
    assert record["context"]["box"] == "thor" and record["context"]["gpus"] == []
