"""Gate files as pytest items: collected only from configured gate folders and only from YAML
with a top-level `gate:`; RED, NO_DECISION and ERROR never pass or skip; works under xdist."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

GATES_YAML = """
- gate: green
  driver: {type: command, run: "echo '2 passed, 0 failed'", format: plain}
- gate: red
  driver: {type: command, run: "echo '1 passed, 1 failed'", format: plain}
- gate: undecided
  driver: {type: command, run: "echo '0 passed, 0 failed'", format: plain}
"""


def make(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "checks").mkdir(parents=True)
    (root / "other").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [checks]}\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "checks" / "g.yaml").write_text(textwrap.dedent(GATES_YAML))
    (root / "checks" / "not-a-gate.yaml").write_text("name: some other config\n")
    # A gate document outside the configured folders is not collected.
    (root / "other" / "stray.yaml").write_text("gate: stray\ndriver: {type: command, run: 'false', format: plain}\n")
    return root


def results(junit: Path) -> dict[str, str]:
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = child.tag
        out[case.get("name", "")] = outcome
    return out


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["serial", "xdist"])
def test_gate_items_fail_unless_green(tmp_path: Path, workers: list[str]) -> None:
    root = make(tmp_path)
    junit = tmp_path / "junit.xml"
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", str(root), f"--junitxml={junit}", "-p",
                           "no:cacheprovider", *workers], capture_output=True, text=True, cwd=root)
    assert proc.returncode == 1, proc.stdout
    assert results(junit) == {"green": "passed", "red": "failure", "undecided": "failure"}
    assert "NO_DECISION" in proc.stdout and "stray" not in proc.stdout


def test_broken_gate_file_in_a_gate_folder_is_an_error_not_ignored(tmp_path: Path) -> None:
    root = make(tmp_path)
    (root / "checks" / "bad.yaml").write_text("gate: bad\ndriver: {type: command, run: x, format: plain, tmeout: 3}\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", str(root / "checks"), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode != 0 and "bad.yaml:2" in proc.stdout and "tmeout" in proc.stdout


def test_a_list_with_one_misspelled_gate_key_and_duplicate_ids_across_files_fail(tmp_path: Path) -> None:
    root = make(tmp_path)
    (root / "checks" / "list.yaml").write_text(
        "- gate: l1\n  driver: {type: command, run: \"echo '0 passed, 1 failed'\", format: plain}\n"
        "- gaet: l2\n  driver: {type: command, run: x, format: plain}\n")
    (root / "checks" / "dup.yaml").write_text(
        "gate: green\ndriver: {type: command, run: \"echo '1 passed, 0 failed'\", format: plain}\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", str(root / "checks"), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode != 0
    assert "gaet" in proc.stdout and "also declared" in proc.stdout


HOLD_MUTATED = """
import sys
from pathlib import Path
from redfirst.mutations.workspaces.in_place import InPlace
space = InPlace(Path(sys.argv[1]))
with space.mutated("calc.py", b"def add(a, b):\\n    return a - b\\n", "m"):
    print("mutated", flush=True)
    sys.stdin.readline()
"""


def _calc_project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "checks").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [checks]}\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    (root / "checks" / "g.yaml").write_text(
        "gate: adds\ndriver: {type: command, run: \"python3 -c 'import calc; assert calc.add(1, 2) == 3' && "
        "echo '1 passed, 0 failed'\", format: plain}\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    return root


def _hold(root: Path) -> subprocess.Popen[str]:
    holder = subprocess.Popen([sys.executable, "-c", HOLD_MUTATED, str(root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout is not None and holder.stdout.readline() == "mutated\n"
    return holder


def test_a_gate_item_restores_a_tree_a_killed_in_place_run_left_mutated(tmp_path: Path) -> None:
    # issue 33: `gates run` restored a killed in-place run's tree first; `pytest <gate folder>` graded it mutated
    root = _calc_project(tmp_path)
    original = (root / "calc.py").read_bytes()
    holder = _hold(root)
    holder.kill()
    holder.wait()
    assert (root / "calc.py").read_bytes() != original
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", "checks", "-p", "no:cacheprovider", "-v"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode == 0 and "checks/g.yaml::adds PASSED" in proc.stdout, proc.stdout + proc.stderr
    assert (root / "calc.py").read_bytes() == original


def test_a_gate_item_refuses_a_tree_a_live_in_place_run_holds_mutated(tmp_path: Path) -> None:
    root = _calc_project(tmp_path)
    holder = _hold(root)
    try:
        proc = subprocess.run([sys.executable, "-P", "-m", "pytest", "checks", "-p", "no:cacheprovider"],
                              capture_output=True, text=True, cwd=root)
    finally:
        holder.communicate("\n", timeout=60)
    assert proc.returncode != 0 and "passed" not in proc.stdout.splitlines()[-1], proc.stdout
    assert "in place right now" in proc.stdout, proc.stdout


def test_a_project_configuration_that_cannot_load_fails_the_gate_files_it_would_collect(tmp_path: Path) -> None:
    """redfirst.yaml beside a [tool.redfirst] table is an error (projectconfig.choose); under pytest
    the gate files must fail with it, never vanish so that the rest of the suite passes alone."""
    root = make(tmp_path)
    (root / "test_ok.py").write_text("def test_ok():\n    pass\n")
    (root / "pyproject.toml").write_text("[tool.redfirst]\ngates = {paths = ['other']}\n")
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", str(root), "-p", "no:cacheprovider"],
                          capture_output=True, text=True, cwd=root)
    assert proc.returncode != 0, proc.stdout
    assert "redfirst is configured twice" in proc.stdout and "g.yaml" in proc.stdout, proc.stdout
    assert "not-a-gate.yaml" not in proc.stdout


def test_a_gate_item_after_one_that_rewrote_a_tracked_file_is_not_green(tmp_path: Path) -> None:
    # as `gates run` (runner.run_all): the second item reads the file the first one rewrote
    root = tmp_path / "proj"
    (root / "checks").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [checks]}\n")
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "n.txt").write_text("2\n")
    (root / "checks" / "g.yaml").write_text(textwrap.dedent("""
        - gate: a
          driver: {type: command, run: "echo 3 > n.txt; echo '1 passed, 0 failed'", format: plain}
        - gate: b
          driver: {type: command, run: "grep -qx 3 n.txt && echo '1 passed, 0 failed'", format: plain}
    """))
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)
    junit = tmp_path / "junit.xml"
    proc = subprocess.run([sys.executable, "-P", "-m", "pytest", str(root / "checks"), f"--junitxml={junit}", "-p",
                           "no:cacheprovider"], capture_output=True, text=True, cwd=root)
    assert results(junit) == {"a": "failure", "b": "failure"}, proc.stdout
    assert "rewrote tracked files (n.txt)" in proc.stdout, proc.stdout
