"""The evidence store cannot be forged or pulled away: real `gates` processes over real
gate files in tmp folders.

A record that holds a symbolic link anywhere is tampering (regrade ERROR); `gates gc` removes
only run folders whose run has ended, never the folder of a run in progress.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def project(tmp_path: Path, gates_yaml: str) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gates_yaml))
    return root


def gates(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, *args, "--root", str(root)], capture_output=True, text=True, timeout=120,
                          cwd=root)


def run_json(root: Path) -> tuple[int, dict[str, dict[str, Any]]]:
    proc = gates(root, "run", "--json", "-q")
    doc = json.loads(proc.stdout)
    return proc.returncode, {item["id"]: item for item in doc["items"]}


def record_of(root: Path) -> Path:
    (folder,) = (root / ".redfirst" / "evidence").iterdir()
    return folder


WANTS_A_COUNTER = """
    gate: counted
    driver: {type: command, run: "echo '1 passed, 0 failed'", format: plain}
    assert: {counters: {c: {min: 1}}}
"""


def test_evidence_folder_swapped_for_a_link_to_forged_files_is_error_on_regrade(tmp_path: Path) -> None:
    root = project(tmp_path, WANTS_A_COUNTER)
    code, items = run_json(root)
    assert code == 3 and items["counted"]["verdict"] == "NO_DECISION"
    folder = record_of(root)
    forged = tmp_path / "forged"
    forged.mkdir()
    (forged / "evidence.jsonl").write_text('{"counter": "c", "value": 5}\n')
    (folder / "evidence").rmdir()
    (folder / "evidence").symlink_to(forged, target_is_directory=True)
    proc = gates(root, "regrade", folder.name)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "GREEN" not in proc.stdout and "symbolic link" in proc.stderr


@pytest.mark.parametrize("name", ["stdout", "evidence/evidence.jsonl"])
def test_any_raw_file_replaced_by_a_link_to_the_same_bytes_is_error(tmp_path: Path, name: str) -> None:
    root = project(tmp_path, """
        gate: counted
        driver:
          type: command
          run: "echo '1 passed, 0 failed'; echo '{\\"counter\\": \\"c\\", \\"value\\": 2}' >> $GATES_EVIDENCE/evidence.jsonl"
          format: plain
        assert: {counters: {c: {min: 1}}}
    """)
    code, _ = run_json(root)
    assert code == 0
    folder = record_of(root)
    copy = tmp_path / "copy"
    copy.write_bytes((folder / name).read_bytes())  # the same bytes: only the link is wrong
    (folder / name).unlink()
    (folder / name).symlink_to(copy)
    proc = gates(root, "regrade", folder.name)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stdout + proc.stderr


def test_a_record_folder_that_is_itself_a_link_is_error(tmp_path: Path) -> None:
    root = project(tmp_path, WANTS_A_COUNTER)
    run_json(root)
    folder = record_of(root)
    moved = tmp_path / folder.name
    folder.rename(moved)
    folder.symlink_to(moved, target_is_directory=True)
    proc = gates(root, "regrade", folder.name)
    assert proc.returncode == 2 and "symbolic link" in proc.stderr, proc.stdout + proc.stderr


def _wait_for(path: Path, proc: subprocess.Popen[str]) -> None:
    # A bound on waiting, not a timed assertion: the run signals when it is in progress.
    deadline = time.monotonic() + 60
    while not path.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the gate never started"
        time.sleep(0.02)


def test_gc_never_removes_the_folder_of_a_run_in_progress(tmp_path: Path) -> None:
    started, go = tmp_path / "started", tmp_path / "go"
    root = project(tmp_path, f"""
        gate: slow
        driver:
          type: command
          run: "echo '{{\\"counter\\": \\"c\\", \\"value\\": 1}}' > $GATES_EVIDENCE/evidence.jsonl; touch {started}; while [ ! -e {go} ]; do sleep 0.02; done; echo '1 passed, 0 failed'"
          format: plain
        assert: {{counters: {{c: {{min: 1}}}}}}
    """)
    # An abandoned run folder (its process died before sealing) is what gc must still clean.
    abandoned = root / ".redfirst" / "tmp" / ("0" * 32)
    abandoned.mkdir(parents=True)
    (abandoned / "stdout").write_text("left over\n")
    run = subprocess.Popen([*GATES, "run", "--json", "-q", "--root", str(root)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=root)
    try:
        _wait_for(started, run)
        proc = gates(root, "gc", "--max-mib", "0")
        assert proc.returncode == 0, proc.stderr
        assert not abandoned.exists()
        live = [p for p in (root / ".redfirst" / "tmp").iterdir() if p.is_dir()]
        assert len(live) == 1 and (live[0] / "evidence" / "evidence.jsonl").is_file()
    finally:
        go.touch()
        out, err = run.communicate(timeout=120)
    assert run.returncode == 0, err
    items = {i["id"]: i for i in json.loads(out)["items"]}
    assert items["slow"]["verdict"] == "GREEN"
    assert (root / ".redfirst" / "evidence" / items["slow"]["evidence"]).is_dir()
    # Once sealed, nothing of the run is left in tmp/.
    assert list((root / ".redfirst" / "tmp").iterdir()) == []


def test_gc_removes_the_folder_of_a_run_whose_process_was_killed(tmp_path: Path) -> None:
    started = tmp_path / "started"
    root = project(tmp_path, f"""
        gate: killed
        exit_only: "test"
        driver: {{type: command, run: "touch {started}; exec sleep 600"}}
    """)
    run = subprocess.Popen([*GATES, "run", "-q", "--root", str(root)], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, cwd=root, start_new_session=True)
    _wait_for(started, run)
    os.killpg(run.pid, 9)
    run.communicate(timeout=60)
    assert [p for p in (root / ".redfirst" / "tmp").iterdir() if p.is_dir()]
    proc = gates(root, "gc")
    assert proc.returncode == 0, proc.stderr
    tmp = root / ".redfirst" / "tmp"
    assert not tmp.exists() or list(tmp.iterdir()) == []
