"""Hand-edited copies of the exported H200 torch record (docs/evidence/torch), re-sealed so the
hashes hold: `gates regrade` must not call them GREEN where the edit makes the evidence say
something other than what the gate claims."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates.record import Record
from redfirst.gates.store import manifest

REPO = Path(__file__).resolve().parents[2]
GREEN = next((REPO / "docs/evidence/torch/green/tg-g1-lm-graph-safe").glob("*/record.json")).parent


def _reseal(tmp_path: Path, edit: Callable[[dict[str, Any]], None], context: Callable[[dict[str, Any]], None]
            = lambda c: None) -> Path:
    """A copy of the GREEN record with each cuda-graph observation edited, hashes and id redone."""
    work = tmp_path / "work"
    shutil.copytree(GREEN, work)
    ev = work / "evidence" / "evidence.jsonl"
    lines = [json.loads(line) for line in ev.read_text().splitlines()]
    for line in lines:
        if line.get("observation") == "cuda-graph":
            edit(line)
    ev.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data = json.loads((work / "record.json").read_text())
    context(data["context"])
    data["files"] = manifest(work)
    (work / "record.json").write_text(json.dumps(data, indent=1))
    folder = tmp_path / "store" / Record.from_json(data).id
    folder.parent.mkdir()
    work.rename(folder)
    return folder


def _regrade(folder: Path) -> tuple[int, str]:
    p = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "regrade", str(folder)], capture_output=True,
                       text=True, timeout=60, cwd=REPO)
    return p.returncode, p.stdout.splitlines()[0] if p.stdout else p.stderr


def test_the_resealed_copy_unedited_still_regrades_green(tmp_path: Path) -> None:
    code, first = _regrade(_reseal(tmp_path, lambda o: None))
    assert code == 0 and ": GREEN" in first, first


def _drop_later_replays_and_copy_the_first(o: dict[str, Any]) -> None:
    first = [c for c in o["comparisons"] if c["phase"] == "replay" and c["index"] == 1]
    o["comparisons"] = [c for c in o["comparisons"] if not (c["phase"] == "replay" and c["index"] > 1)]
    o["comparisons"] += [dict(c, index=k) for k in (2, 3, 4) for c in first]


@pytest.mark.parametrize("edit,context,said", [
    # the gate declares `capture: torch`: stream-capture evidence is not of its claim
    (lambda o: o.update(capture="stream"), lambda c: None, "capture"),
    # torch capture with no torch named, or a torch the record's context did not see
    (lambda o: o.update(frameworks={}), lambda c: None, "torch"),
    (lambda o: o.update(frameworks={"torch": "1.0"}), lambda c: None, "torch"),
    # four "fresh" replays that are one replay four times: one fresh input, not four
    (_drop_later_replays_and_copy_the_first, lambda c: None, "replay"),
], ids=["stream-evidence-for-a-torch-gate", "torch-capture-naming-no-torch", "torch-version-not-the-contexts",
        "one-fresh-replay-copied-four-times"])
def test_an_edited_torch_record_is_never_green(tmp_path: Path, edit: Callable[[dict[str, Any]], None],
                                              context: Callable[[dict[str, Any]], None], said: str) -> None:
    code, first = _regrade(_reseal(tmp_path, edit, context))
    assert code == 3 and ": NO_DECISION (evidence)" in first and said in first, first
