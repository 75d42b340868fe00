"""Small rules of issue #16, each through the real `gates` / `mutate` commands on real
projects in tmp folders (real git, real child processes)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd,
                          check=True, capture_output=True, text=True).stdout


def project(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / ".gitignore").write_text(".redfirst/\n")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "seed")
    return root


def run(cmd: list[str], root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*cmd, *args], cwd=root, capture_output=True, text=True, timeout=300)


def test_a_python_gate_in_a_src_layout_says_module_not_found_with_a_hint(tmp_path: Path):
    root = project(tmp_path, {
        "src/mypkg/__init__.py": "",
        "src/mypkg/checks.py": "from redfirst.gates import evidence\n\n\ndef g():\n    evidence.counter('n', 1)\n",
        "gates/g.yaml": "gate: src-layout\ndriver: {type: python, run: 'mypkg.checks:g'}\n"
                        "assert: {counters: {n: {min: 1}}}\n"})
    proc = run(GATES, root, "run", "--json", "-q", "--root", str(root))
    item = json.loads(proc.stdout)["items"][0]
    assert proc.returncode == 2 and item["verdict"] == "ERROR", proc.stdout
    assert "not executable" not in item["reason"]
    assert "module not found: mypkg" in item["reason"], item["reason"]
    assert "PYTHONPATH" in item["reason"] and "pip install -e" in item["reason"], item["reason"]


def test_an_untracked_file_the_gate_reads_makes_the_record_dirty(tmp_path: Path):
    root = project(tmp_path, {
        "gates/g.yaml": "gate: reads\ndriver: {type: command, run: \"cat data.txt; echo '1 passed, 0 failed'\", "
                        "format: plain}\n"})
    (root / "data.txt").write_text("untracked input\n")
    proc = run(GATES, root, "run", "-q", "--root", str(root))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    records = list((root / ".redfirst").rglob("record.json"))
    assert len(records) == 1
    assert json.loads(records[0].read_text())["source"]["dirty"] is True
    # the evidence store (here not even ignored) is not what makes a tree dirty
    (root / ".gitignore").write_text("")
    git(root, "add", "data.txt", ".gitignore")
    git(root, "commit", "-qm", "data")
    run(GATES, root, "run", "-q", "--root", str(root))
    sources = sorted(json.loads(p.read_text())["source"]["dirty"] for p in (root / ".redfirst").rglob("record.json"))
    assert sources == [False, True]


def test_stderr_progress_ends_with_the_final_verdict_after_require_proven(tmp_path: Path):
    root = project(tmp_path, {
        "gates/g.yaml": "gate: lone\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n"})
    proc = run(GATES, root, "run", "--require-proven", "--root", str(root))
    assert proc.returncode == 3
    last = proc.stderr.strip().splitlines()[-1]
    assert "NO_DECISION" in last and "GREEN" not in last, proc.stderr


def test_gates_check_with_no_gate_files_is_exit_3(tmp_path: Path):
    root = project(tmp_path, {"README": "nothing to gate\n"})
    (root / "gates").mkdir()
    proc = run(GATES, root, "check", "--root", str(root))
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "no gate" in (proc.stdout + proc.stderr).lower()


def test_an_ambiguous_anchor_lists_every_occurrence(tmp_path: Path):
    lines = "".join(f"x = {n}  # tick\n" for n in range(8))
    root = project(tmp_path, {
        "mod.txt": lines,
        "gates/g.yaml": "gate: g\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n"})
    proc = run(MUTATE, root, "--root", str(root), "--file", "mod.txt", "--anchor", "# tick", "--replace", "# tock",
               "--gate", "g", "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    reason = json.dumps(json.loads(proc.stdout))
    assert "8 occurrences" in reason and "lines 1, 2, 3, 4, 5, 6, 7, 8" in reason, reason
