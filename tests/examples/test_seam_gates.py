"""The seam example under the real `gates` command: GREEN as shipped, and each of the four
source edits of MUTATION_POINTS.md turns its gates RED while its controls stay GREEN.
Runs on a copy of the example in a temporary folder, so no state lands in the repository."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "seam"
GATES = ("seam-g1-replay", "seam-g2-reachability", "seam-g3-counts", "seam-unit")


@dataclass(frozen=True)
class Edit:
    name: str
    file: str
    line: int
    anchor: str
    replace: str
    red: tuple[str, ...]
    green: tuple[str, ...]


EDITS = (
    Edit("delete-production-call-site", "seam/model.py", 110,
         "            attn = graph_break(rt, self.attention[i], qkv)\n",
         "            attn = self.attention[i](qkv)\n",
         red=("seam-g2-reachability", "seam-g1-replay", "seam-g3-counts"), green=("seam-unit",)),
    Edit("segments-then-breaks", "seam/capture.py", 125,
         "        return interleave(self.segments, self.breaks)\n",
         "        return [*self.segments, *self.breaks]\n",
         red=("seam-g1-replay", "seam-unit"), green=("seam-g2-reachability", "seam-g3-counts")),
    Edit("drop-writeback", "seam/capture.py", 129,
         "        self.backend.copy_into(brk.dst, fresh)  # writeback: later segments read brk.dst, not the fresh buffer\n",
         "",
         red=("seam-g1-replay", "seam-unit"), green=("seam-g2-reachability", "seam-g3-counts")),
    Edit("refusal-over-fires", "seam/capture.py", 133,
         "        if any(brk.op is op for brk in self.breaks):\n",
         "        if self.breaks:\n",
         red=("seam-unit", "seam-g2-reachability", "seam-g1-replay", "seam-g3-counts"), green=()),
)


def copy_example(tmp_path: Path) -> Path:
    root = tmp_path / "seam"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__"))
    return root


def gates_run(root: Path) -> tuple[int, dict[str, dict]]:
    # the sim gates by id: the example's CUDA gates are NO_DECISION on a machine without a GPU
    proc = subprocess.run([sys.executable, "-m", "redfirst.gates.cli", "run", "--root", str(root), "--json", *GATES],
                          capture_output=True, text=True, timeout=120, check=False)
    try:
        report = json.loads(proc.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"gates run printed no JSON (exit {proc.returncode}): {proc.stderr[-2000:]}")
    return proc.returncode, {item["id"]: item for item in report["items"]}


def test_every_seam_gate_is_green_with_positive_counts(tmp_path):
    code, items = gates_run(copy_example(tmp_path))
    assert {gid: item["verdict"] for gid, item in items.items()} == dict.fromkeys(GATES, "GREEN"), items
    assert code == 0
    assert items["seam-unit"]["counts"]["cases"] >= 21
    g1 = items["seam-g1-replay"]["counts"]
    assert (g1["replays"], g1["values"], g1["differing"]) == (4, 4 * 512, 0)
    layers = json.loads((EXAMPLE / "config.json").read_text())["num_layers"]
    assert items["seam-g2-reachability"]["counts"]["segments_captured"] == layers + 1
    assert (items["seam-g3-counts"]["counts"]["segments"], items["seam-g3-counts"]["counts"]["breaks"]) == (
        layers + 1, layers)


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_each_mutation_point_turns_its_gates_red_and_keeps_its_controls_green(tmp_path, edit):
    root = copy_example(tmp_path)
    target = root / edit.file
    text = target.read_text()
    assert text.count(edit.anchor) == 1, f"anchor of {edit.name} must occur exactly once in {edit.file}"
    target.write_text(text.replace(edit.anchor, edit.replace))
    code, items = gates_run(root)
    assert code == 1
    for gid in edit.red:
        assert items[gid]["verdict"] == "RED", (gid, items[gid])
        assert items[gid]["cause"] in ("assertion", "exit"), (gid, items[gid])
    if "seam-unit" in edit.red:  # red from failing tests, not from pytest failing to start
        assert items["seam-unit"]["counts"]["failed"] >= 1, items["seam-unit"]
    for gid in edit.green:
        assert items[gid]["verdict"] == "GREEN", (gid, items[gid])


@pytest.mark.parametrize("edit", EDITS, ids=[e.name for e in EDITS])
def test_mutation_points_note_names_each_anchor_verbatim_at_its_line(edit):
    note = (EXAMPLE / "MUTATION_POINTS.md").read_text()
    assert edit.anchor.rstrip("\n") in note
    assert f"`{edit.file}`, line {edit.line}," in note
    assert (EXAMPLE / edit.file).read_text().splitlines()[edit.line - 1] + "\n" == edit.anchor
