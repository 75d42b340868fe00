"""A run in `in-place` mode killed with SIGKILL at any moment leaves nothing behind that
the next `mutate` run does not repair: tree, index, HEAD, refs, stash, worktrees."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from mutate_helpers import git, mutate, write

MUTATIONS = """\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "    return a + b\\n"
  replace: "    return a - b\\n"
  mode: in-place
  expect: {red: [add-warm], green: [sub-warm]}
"""


def snapshot(root: Path) -> dict[str, str]:
    tracked = git(root, "ls-files", "-z").split("\0")
    contents = hashlib.sha256()
    for rel in sorted(p for p in tracked if p):
        contents.update(rel.encode() + b"\0" + (root / rel).read_bytes())
    return {
        "status": git(root, "status", "--porcelain=v1", "--untracked-files=all"),
        "contents": contents.hexdigest(),
        "index": git(root, "ls-files", "-s"),
        "head": git(root, "rev-parse", "HEAD") + git(root, "symbolic-ref", "-q", "HEAD"),
        "refs": git(root, "for-each-ref"),
        "stash": git(root, "stash", "list"),
        "worktrees": git(root, "worktree", "list", "--porcelain"),
    }


def test_sigkill_at_ten_moments_is_repaired_by_the_next_run(repo: Path):
    write(repo, "mutations/inplace.yaml", MUTATIONS)
    # Warm gates keep the whole run short, so ten kills spread over it stay cheap.
    for name in ("add", "sub"):
        write(repo, f"gates/{name}-warm.yaml", f"gate: {name}-warm\ndriver: {{type: pytest-warm, "
                                               f"run: [tests/test_{name}.py], preload: [calc]}}\n")
    git(repo, "add", "gates")
    git(repo, "commit", "-q", "-m", "warm gates")
    write(repo, "tests/test_add.py", (repo / "tests/test_add.py").read_text() + "\n# an uncommitted edit\n")
    write(repo, "tests/test_sub.py", (repo / "tests/test_sub.py").read_text() + "\n# stashed\n")
    git(repo, "stash", "push", "-q", "--", "tests/test_sub.py")
    target = repo / "calc/__init__.py"
    original = target.read_bytes()
    before = snapshot(repo)

    start = time.monotonic()
    full = mutate(repo)
    whole_run = time.monotonic() - start
    assert full.returncode == 0, full.stdout + full.stderr
    assert snapshot(repo) == before

    killed_while_mutated = 0
    for i in range(1, 11):
        proc = subprocess.Popen(["mutate", "--root", str(repo), "--no-cache"], cwd=repo,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        if i % 3 == 0:
            # Every third kill waits for the mutated file, so some land inside the edit
            # whatever the machine's load does to the timing of the others.
            deadline = time.monotonic() + 3 * whole_run
            while target.read_bytes() == original and time.monotonic() < deadline:
                time.sleep(0.002)
            time.sleep(0.05 * (i % 3))
        else:
            time.sleep(whole_run * i / 11)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        if target.read_bytes() != original:
            killed_while_mutated += 1
        # The next run repairs before anything else; `mutate check` is such a run.
        repaired = mutate(repo, "check")
        assert repaired.returncode == 0, repaired.stderr
        assert target.read_bytes() == original
        assert snapshot(repo) == before, f"kill {i} at {whole_run * i / 11:.2f}s left a change"
    assert killed_while_mutated >= 3, f"only {killed_while_mutated} kills landed while the file was mutated"
    assert killed_while_mutated < 10, "every kill landed inside the edit: the moments are not spread"
    final = mutate(repo, "--no-cache")
    assert final.returncode == 0, final.stdout + final.stderr
    assert snapshot(repo) == before
    assert not list((repo / ".redfirst" / "journal").glob("*.entry.json"))
    assert os.environ.get("XDG_CACHE_HOME", "").startswith(str(repo.parent))


def test_an_edit_made_after_a_killed_in_place_run_is_kept_and_the_run_stops(repo: Path):
    write(repo, "mutations/inplace.yaml", MUTATIONS.replace("add-warm", "add").replace("sub-warm", "sub"))
    target = repo / "calc/__init__.py"
    original = target.read_bytes()
    proc = subprocess.Popen(["mutate", "--root", str(repo), "--no-cache"], cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    # Killed while the file holds the mutation: the journal names it.
    while target.read_bytes() == original and proc.poll() is None:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    mutated = target.read_bytes()
    assert mutated != original, "the run ended before it mutated the file"
    edited = mutated + b"\n\ndef mul(a, b):\n    return a * b\n"
    target.write_bytes(edited)
    stopped = mutate(repo, "check")
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert target.read_bytes() == edited
    kept = [p for p in (repo / ".redfirst" / "kept").rglob("*") if p.is_file()]
    assert [p.read_bytes() for p in kept] == [original]
    assert str(kept[0]) in stopped.stderr and "calc/__init__.py" in stopped.stderr


def kill_while_mutated(repo: Path) -> bytes:
    """Start an in-place run and SIGKILL it while calc/__init__.py holds the mutation."""
    write(repo, "mutations/inplace.yaml", MUTATIONS.replace("add-warm", "add").replace("sub-warm", "sub"))
    target = repo / "calc/__init__.py"
    original = target.read_bytes()
    proc = subprocess.Popen(["mutate", "--root", str(repo), "--no-cache"], cwd=repo,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    while target.read_bytes() == original and proc.poll() is None:
        time.sleep(0.002)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert target.read_bytes() != original, "the run ended before it mutated the file"
    return original


def gates_run(repo: Path, *ids: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["gates", "run", "--json", "-q", "--root", str(repo), *ids], cwd=repo,
                          capture_output=True, text=True, timeout=300)


def test_gates_run_restores_a_tree_a_killed_in_place_run_left_mutated(repo: Path):
    original = kill_while_mutated(repo)
    proc = gates_run(repo, "add")
    # Graded on the user's code: the mutation (a - b) would make `add` RED.
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "GREEN"
    assert (repo / "calc/__init__.py").read_bytes() == original
    assert "restored" in proc.stderr and "calc/__init__.py" in proc.stderr


def test_gates_run_refuses_a_tree_a_live_in_place_run_holds_mutated(repo: Path):
    holder = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from redfirst.mutations.workspaces.in_place import InPlace
        space = InPlace(Path({str(repo)!r}))
        with space.mutated("calc/__init__.py", b"def add(a, b):\\n    return a - b\\n", "m"):
            print("mutated", flush=True)
            sys.stdin.readline()
    """)
    proc = subprocess.Popen([sys.executable, "-c", holder], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "mutated\n"
        refused = gates_run(repo, "add")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert str(repo / ".redfirst" / "journal") in refused.stderr
    finally:
        proc.communicate("\n", timeout=60)
    assert proc.returncode == 0
    assert gates_run(repo, "add").returncode == 0
