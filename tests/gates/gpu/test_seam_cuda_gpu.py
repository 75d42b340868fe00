"""The seam example on a real device: its CUDA gates GREEN through `gates run`, and each seam
mutation turns them RED (KILLED) there too. Runs on a copy of the example in a tmp folder."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytestmark = pytest.mark.gpu
EXAMPLE = Path(__file__).resolve().parents[3] / "examples" / "seam"
CUDA_GATES = ("seam-g1-replay-cuda", "seam-g2-reachability-cuda", "seam-g3-counts-cuda", "seam-g1-graph-cuda")
EDITS = {
    "delete-production-call-site": ("seam/model.py", "            attn = graph_break(rt, self.attention[i], qkv)\n",
                                    "            attn = self.attention[i](qkv)\n",
                                    ("seam-g1-replay-cuda", "seam-g2-reachability-cuda", "seam-g3-counts-cuda")),
    "segments-then-breaks": ("seam/capture.py", "        return interleave(self.segments, self.breaks)\n",
                             "        return [*self.segments, *self.breaks]\n", ("seam-g1-replay-cuda",)),
    "drop-writeback": ("seam/capture.py", "        self.backend.copy_into(brk.dst, fresh)  # writeback: later "
                       "segments read brk.dst, not the fresh buffer\n", "", ("seam-g1-replay-cuda",)),
}


def copy_example(tmp_path: Path) -> Path:
    root = tmp_path / "seam"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".redfirst", "__pycache__", ".mypy_cache"))
    return root


def run_function(root: Path, tmp_path: Path, name: str) -> tuple[dict[str, float], dict[str, list[np.ndarray]]]:
    """One gate function of seam.cuda_gates in a child process; its counters and tensors."""
    ev = tmp_path / name
    p = subprocess.run([sys.executable, "-c", f"from seam.cuda_gates import {name}; {name}()"], cwd=root,
                       env={**os.environ, "GATES_EVIDENCE": str(ev),
                            "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))},
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    counters: dict[str, float] = {}
    tensors: dict[str, list[np.ndarray]] = {}
    for line in (ev / "evidence.jsonl").read_text().splitlines():
        r = json.loads(line)
        if "counter" in r:
            counters[r["counter"]] = r["value"]
        elif "tensor" in r:
            tensors.setdefault(r["tensor"], []).append(np.fromfile(ev / r["file"], dtype=r["dtype"]))
    return counters, tensors


def test_cuda_backend_replays_equal_eager_bit_for_bit(tmp_path: Path) -> None:
    from redfirst.gates.cuda.comparator import compare_host

    counters, tensors = run_function(copy_example(tmp_path), tmp_path, "g1_replay")
    assert counters["replays"] == 4
    pairs = list(zip(tensors["logits.eager"], tensors["logits.graph"], strict=True))
    assert len(pairs) == 4
    for eager, graph in pairs:
        raw = compare_host(eager, graph, "float32")
        assert (raw.values, raw.differing) == (512, 0)
        assert not np.isnan(graph).any()


def test_cuda_backend_counts_segments_and_breaks(tmp_path: Path) -> None:
    root = copy_example(tmp_path)
    layers = json.loads((EXAMPLE / "config.json").read_text())["num_layers"]
    g2, _ = run_function(root, tmp_path, "g2_reachability")
    assert (g2["segments_captured"], g2["breaks_captured"]) == (layers + 1, layers)
    g3, _ = run_function(root, tmp_path, "g3_counts")
    assert (g3["segments"], g3["breaks"]) == (layers + 1, layers)


def test_dropped_writeback_differs_on_cuda_from_the_second_replay(tmp_path: Path) -> None:
    from redfirst.gates.cuda.comparator import compare_host

    root = copy_example(tmp_path)
    file, anchor, replace, _ = EDITS["drop-writeback"]
    path = root / file
    path.write_text(path.read_text().replace(anchor, replace, 1))
    _, tensors = run_function(root, tmp_path, "g1_replay")
    differing = [compare_host(e, g, "float32").differing
                 for e, g in zip(tensors["logits.eager"], tensors["logits.graph"], strict=True)]
    assert differing[0] == 0 and all(d > 0 for d in differing[1:]), differing


def gates_run(root: Path, *ids: str) -> tuple[int, dict[str, dict]]:
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "--root", str(root), "--json", *ids],
                       capture_output=True, text=True, timeout=600, cwd=root)
    try:
        doc = json.loads(p.stdout)
    except json.JSONDecodeError:
        pytest.fail(f"gates run printed no JSON (exit {p.returncode}): {p.stderr[-2000:]}")
    return p.returncode, {i["id"]: i for i in doc["items"]}


def test_every_cuda_gate_of_the_seam_is_green_on_the_device(tmp_path: Path) -> None:
    code, items = gates_run(copy_example(tmp_path), *CUDA_GATES)
    assert {k: v["verdict"] for k, v in items.items()} == dict.fromkeys(CUDA_GATES, "GREEN"), items
    assert code == 0


@pytest.mark.parametrize("edit", sorted(EDITS))
def test_seam_mutation_is_killed_on_the_device(tmp_path: Path, edit: str) -> None:
    root = copy_example(tmp_path)
    file, anchor, replace, red = EDITS[edit]
    path = root / file
    text = path.read_text()
    assert text.count(anchor) == 1
    path.write_text(text.replace(anchor, replace))
    code, items = gates_run(root, *red)
    assert {k: v["verdict"] for k, v in items.items()} == dict.fromkeys(red, "RED"), items
    assert code == 1
