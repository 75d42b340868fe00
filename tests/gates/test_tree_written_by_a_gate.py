"""Gates that share files under `gates run --jobs`. A gate whose run rewrites a file git tracks changes the tree the other gates read: their GREEN
rests on a tree other than the one `gates run` was asked to grade (and, with --jobs, on which gate
ran first). `gates run` compares the tracked files before and after its runs
(redfirst.gates.runner.run_all), and no GREEN stands over a tree a run changed. Gates naming one
JUnit report path never run at once: another gate's report is never this one's evidence
(round 6 of issue 33)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=root, check=True,
                   capture_output=True)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_gate_that_rewrites_a_tracked_file_another_gate_reads_leaves_no_green(tmp_path: Path, jobs: str) -> None:
    root = tmp_path / "proj"
    for rel, text in {
        "data/n.txt": "2\n",
        # a test that regenerates a golden file in place
        "tests/a/test_a.py": "def test_a():\n    open('data/n.txt', 'w').write('3\\n')\n",
        "tests/b/test_b.py": "def test_b():\n    assert open('data/n.txt').read().strip() == '3'\n",
        "gates/a.yaml": "gate: a\ndriver:\n  type: pytest\n  run: [tests/a]\n",
        "gates/b.yaml": "gate: b\ndriver:\n  type: pytest\n  run: [tests/b]\n",
        ".gitignore": "__pycache__/\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "b reads what a writes")
    ran = subprocess.run([*GATES, "run", "--json", "--jobs", jobs, "--root", str(root)], cwd=root,
                         capture_output=True, text=True, timeout=300)
    doc = json.loads(ran.stdout)
    verdicts = {i["id"]: i["verdict"] for i in doc["items"]}
    assert "GREEN" not in verdicts.values() and ran.returncode != 0, ran.stdout + ran.stderr
    # a (GREEN on its own) names what changed; b read 2 or 3 as the order fell: never GREEN either way
    a = next(i for i in doc["items"] if i["id"] == "a")
    assert a["verdict"] == "NO_DECISION" and "data/n.txt" in a["reason"], a


WRITES = ('sleep 0.3\nprintf \'<testsuites><testsuite name="a" tests="1" failures="0" errors="0" skipped="0">'
          '<testcase classname="a" name="t1" time="0.1"/></testsuite></testsuites>\' > out.xml\n')


def test_a_junit_report_another_gate_wrote_meanwhile_is_not_this_gates(tmp_path: Path) -> None:
    # two gates name one report path; under --jobs 2, `b` writes nothing and exits 0 while `a`
    # writes its passing report: b's run saw the file change, but it is a's evidence
    root = tmp_path / "proj"
    for rel, text in {
        "a.sh": WRITES,
        "b.sh": "sleep 1.5\nexit 0\n",
        "gates/a.yaml": "gate: a\ndriver:\n  type: command\n  run: [sh, a.sh]\n  format: junit\n  junit: out.xml\n",
        "gates/b.yaml": "gate: b\ndriver:\n  type: command\n  run: [sh, b.sh]\n  format: junit\n  junit: out.xml\n",
        ".gitignore": "out.xml\n",
    }.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "two gates, one report path")
    ran = subprocess.run([*GATES, "run", "--json", "--jobs", "2", "--root", str(root)], cwd=root,
                         capture_output=True, text=True, timeout=300)
    verdicts = {i["id"]: (i["verdict"], i["reason"]) for i in json.loads(ran.stdout)["items"]}
    assert verdicts["a"][0] == "GREEN", verdicts
    assert verdicts["b"][0] == "NO_DECISION" and "out.xml was not written by this run" in verdicts["b"][1], verdicts
