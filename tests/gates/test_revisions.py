"""Every revision argument (`mutate run --changed-since`, `mutate sweep --since`, `gates red-first
--base`, `checkers run --base`) is resolved with `git rev-parse --verify` and passed after
`--end-of-options`: an argument that reads as a git option is refused, never run.

Real CLI subprocesses in real tmp git repositories.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
MUTATE = [sys.executable, "-P", "-m", "redfirst.mutations.cli"]
CHECKERS = [sys.executable, "-P", "-m", "redfirst.checkers.cli"]


def repo(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True)
    (root / "mutations").mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\nmutations: {paths: [mutations]}\n")
    (root / "gates" / "g.yaml").write_text(
        'gate: g\ndriver: {type: command, run: "echo 1 passed, 0 failed", format: plain}\n')
    (root / "mutations" / "m.yaml").write_text(
        'mutation: m\nfile: calc.py\nanchor: "a + b"\nreplace: "a - b"\nexpect: {red: [g]}\n')
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=root, check=True)
    (root / "calc.py").write_text("def add(a, b):\n    return a + b\n\n\nZERO = 0\n")
    subprocess.run([*git, "commit", "-qam", "two"], cwd=root, check=True)
    return root


COMMANDS = {
    "mutate run --changed-since": lambda rev, root: [*MUTATE, f"--changed-since={rev}", "--root", str(root)],
    "mutate sweep --since": lambda rev, root: [*MUTATE, "sweep", f"--since={rev}", "--root", str(root)],
    "gates red-first --base": lambda rev, root: [*GATES, "red-first", "g", f"--base={rev}", "--root", str(root)],
    "checkers run --base": lambda rev, root: [*CHECKERS, "run", f"--base={rev}", "--root", str(root)],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_revision_that_reads_as_a_git_option_never_reaches_git(tmp_path: Path, command: str) -> None:
    root = repo(tmp_path)
    victim = tmp_path / "victim.txt"
    victim.write_text("the user's data\n")
    proc = subprocess.run(COMMANDS[command](f"--output={victim}", root), capture_output=True, text=True,
                          timeout=120, cwd=root)
    assert victim.read_text() == "the user's data\n", f"{command} let git write {victim}"
    both = proc.stdout + proc.stderr
    assert "Traceback" not in both, both
    assert proc.returncode in (2, 3), both
    assert "--output=" in both, both  # the message names the argument it refused


@pytest.mark.parametrize("command", ["mutate run --changed-since", "mutate sweep --since"])
def test_an_unknown_revision_is_a_usage_error_naming_it(tmp_path: Path, command: str) -> None:
    root = repo(tmp_path)
    proc = subprocess.run(COMMANDS[command]("no-such-branch", root), capture_output=True, text=True, timeout=120,
                          cwd=root)
    assert proc.returncode == 2 and "no-such-branch" in proc.stderr and "Traceback" not in proc.stderr, \
        proc.stdout + proc.stderr


def test_a_real_revision_still_selects_what_changed(tmp_path: Path) -> None:
    root = repo(tmp_path)
    since_head = subprocess.run(COMMANDS["mutate run --changed-since"]("HEAD", root), capture_output=True,
                                text=True, timeout=120, cwd=root)
    assert since_head.returncode == 3, since_head.stdout + since_head.stderr  # nothing changed: nothing selected
    # calc.py changed in the last commit: its mutation runs (and survives: the gate checks nothing of it).
    since_parent = subprocess.run(COMMANDS["mutate run --changed-since"]("HEAD~1", root), capture_output=True,
                                  text=True, timeout=120, cwd=root)
    assert since_parent.returncode == 1 and "SURVIVED" in since_parent.stdout, \
        since_parent.stdout + since_parent.stderr
