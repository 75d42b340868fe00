"""Cheap per mutation: once a mutation's outcome is decided by positive evidence (an
expected-red gate stayed GREEN: SURVIVED; every red gate killed and a control went RED:
UNSCOPED) its remaining gates are not run, and the report names them as not run."""

from __future__ import annotations

import json
from pathlib import Path

from mutate_helpers import gate, git, mutate, write


def _marker_gate(repo: Path, runs: Path) -> None:
    # Appends one line per run: the baseline's, then one more only if it ran under the mutation.
    write(repo, "gates/marker.yaml", 'gate: marker\nexit_only: "counts its own runs"\ndriver:\n  type: command\n'
          f'  run: [python3, -c, "open({str(runs)!r}, \'a\').write(\'ran\\\\n\')"]\n')


def test_a_survivor_stops_its_remaining_gates(repo: Path, tmp_path: Path):
    runs = tmp_path / "marker-runs"
    _marker_gate(repo, runs)
    write(repo, "mutations/m.yaml", 'mutation: clamp-lo\nfile: calc/__init__.py\nanchor: "return lo"\n'
          'replace: "return hi"\nexpect: {red: [clamp, marker]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "SURVIVED" and proc.returncode == 1, proc.stderr
    assert runs.read_text().splitlines() == ["ran"]            # the baseline only
    assert [g["gate"] for g in item["gates"]] == ["clamp"]
    assert "not run once decided: marker" in item["reason"]


def test_an_unscoped_mutation_stops_its_remaining_controls(repo: Path, tmp_path: Path):
    runs = tmp_path / "marker-runs"
    _marker_gate(repo, runs)
    write(repo, "tests/test_add2.py", "from calc import add\n\n\ndef test_add2():\n    assert add(1, 1) == 2\n")
    write(repo, "gates/add2.yaml", gate("add2", "tests/test_add2.py"))
    write(repo, "mutations/m.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [add], green: [add2, marker]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "UNSCOPED" and proc.returncode == 1, proc.stderr
    assert runs.read_text().splitlines() == ["ran"]
    assert [g["gate"] for g in item["controls"]] == ["add2"]
    assert "not run once decided: marker" in item["reason"]


def test_a_kill_still_runs_every_gate(repo: Path, tmp_path: Path):
    runs = tmp_path / "marker-runs"
    _marker_gate(repo, runs)
    write(repo, "mutations/m.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [add], green: [sub, marker]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    assert runs.read_text().splitlines() == ["ran", "ran"]
    assert [g["gate"] for g in item["controls"]] == ["sub", "marker"]


def test_pytest_stops_at_the_first_failure_under_a_mutation(repo: Path):
    # Three tests of add: a mutant fails all three; with -x pytest runs only the first.
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_one():\n    assert add(2, 3) == 5\n\n\n"
          "def test_two():\n    assert add(1, 1) == 2\n\n\ndef test_three():\n    assert add(0, 4) == 4\n")
    write(repo, "mutations/m.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [add]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    counts = item["gates"][0]["counts"]
    assert (counts["cases"], counts["failed"]) == (1, 1), counts


def test_a_gate_that_limits_failures_itself_keeps_its_own_limit(repo: Path):
    write(repo, "tests/test_add.py", "from calc import add\n\n\ndef test_one():\n    assert add(2, 3) == 5\n\n\n"
          "def test_two():\n    assert add(1, 1) == 2\n\n\ndef test_three():\n    assert add(0, 4) == 4\n")
    write(repo, "gates/add.yaml", "gate: add\ndriver:\n  type: pytest\n  run: [--maxfail=2, tests/test_add.py]\n"
          "  timeout: 60\n")
    write(repo, "mutations/m.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [add]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    assert item["gates"][0]["counts"]["failed"] == 2


def test_a_gate_that_declares_failures_runs_every_test_under_a_mutation(repo: Path):
    # One known failure is this gate's GREEN; a mutant adds a second one, after the first
    # failing test: pytest -x would stop at one failure and read the mutant as a survivor.
    write(repo, "tests/test_known.py", "from calc import add\n\n\ndef test_a():\n    assert add(2, 3) == 5\n\n\n"
          "def test_known_failure():\n    assert False\n\n\ndef test_c():\n    assert add(1, 1) == 2\n")
    write(repo, "gates/known.yaml", "gate: known\ndriver:\n  type: pytest\n  run: [tests/test_known.py]\n"
          "  timeout: 60\nassert: {exit: 1, failed: 1}\n")
    write(repo, "mutations/m.yaml", 'mutation: add-minus\nfile: calc/__init__.py\nanchor: "return a + b"\n'
          'replace: "return a - b"\nexpect: {red: [known]}\n')
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "m")
    proc = mutate(repo, "--json", "--no-cache")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stdout + proc.stderr
    assert item["gates"][0]["counts"]["failed"] == 3
