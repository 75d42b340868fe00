"""A `mutate hazards` run's record, kept in the project's store beside the gate's own runs, says
it is a hazard run: `gates regrade` reproduces its verdict (DESIGN rule 4) and `gates list`
never shows it as the gate's own run."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from redfirst.gates import api
from redfirst.gates.drivers.cuda_graph import with_hazard

REPO = Path(__file__).resolve().parents[2]
GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def test_a_hazard_runs_record_names_the_hazard_and_regrades_as_run(tmp_path: Path) -> None:
    root = tmp_path / "tg"
    shutil.copytree(REPO / "examples" / "torch-graph", root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__"))
    proj = api.project(root)
    gate = next(g for g in api.load_gates(root) if g.id == "tg-g1-lm-graph-safe")
    result = api.gate_runner(proj)(with_hazard(gate, "stale-input"))
    assert result.evidence_id is not None
    record = json.loads((proj.state_dir / "evidence" / result.evidence_id / "record.json").read_text())
    assert record["context"]["hazard"] == "stale-input"

    regraded = subprocess.run([*GATES, "regrade", result.evidence_id, "--root", str(root), "--json"],
                              capture_output=True, text=True, timeout=60, cwd=root)
    item = json.loads(regraded.stdout)["items"][0]
    assert item["verdict"] == result.verdict.value and item["reason"] == result.reason, item

    listed = subprocess.run([*GATES, "list", "--root", str(root), "--json"], capture_output=True, text=True,
                            timeout=60, cwd=root)
    ids = [i["id"] for i in json.loads(listed.stdout)["items"]]
    assert ids == ["tg-g1-lm-graph-safe (hazard stale-input)"], ids

    text = subprocess.run([*GATES, "list", "--root", str(root)], capture_output=True, text=True, timeout=60, cwd=root)
    assert "tg-g1-lm-graph-safe (hazard stale-input)" in text.stdout, text.stdout
