"""`mutate sweep` (mutmut 3 as a subprocess, over the change) and `mutate promote`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
from mutate_helpers import git, mutate, write

MUL = '''

def mul(a, b):
    log.info("mul %s %s", a, b)
    if a == 0:
        raise ValueError("a is zero")
    return a * b
'''


def require_mutmut() -> None:
    # The installed distribution's metadata, as `pip show mutmut` reads it, without a pip process
    # (about a CPU second each, for every sweep test).
    try:
        version = metadata.version("mutmut")
    except metadata.PackageNotFoundError:
        version = ""
    if not version.startswith("3."):
        message = "mutmut 3 is not installed (pip install mutmut==3.8.1)"
        pytest.fail(message) if os.environ.get("CI") else pytest.skip(message)


def test_sweep_keeps_one_survivor_per_changed_line_and_promote_writes_only_a_kill(repo: Path):
    require_mutmut()
    write(repo, "calc/__init__.py", "import logging\n\nlog = logging.getLogger(__name__)\n\n\n"
          + (repo / "calc/__init__.py").read_text())
    git(repo, "commit", "-q", "-am", "logging")
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text() + MUL)
    write(repo, "tests/test_mul.py", "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    write(repo, "gates/mul.yaml", "gate: mul\ndriver: {type: pytest, run: [tests/test_mul.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mul")
    user_config = "[tool:pytest]\naddopts = -q\n\n[mutmut]\nsource_paths = nowhere\n"
    write(repo, "setup.cfg", user_config)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "a user's own mutmut config")
    before = git(repo, "status", "--porcelain")

    proc = mutate(repo, "sweep", "--since", "HEAD~2", "--json")
    assert proc.returncode == 1, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["files"] == ["calc/__init__.py"]
    lines = [s["line"] for s in doc["survivors"]]
    assert len(lines) == len(set(lines)), "more than one survivor on a line"
    changed = set(range(20, 27))
    assert set(lines) <= changed, f"a survivor off the change: {lines}"
    texts = [" ".join(s["removed"]) for s in doc["survivors"]]
    assert not any("log.info" in t for t in texts), "a logging call was reported"
    assert not any(s["added"] == ['        raise ValueError("XXa is zeroXX")'] for s in doc["survivors"])
    zero = next(s for s in doc["survivors"] if s["removed"] == ["    if a == 0:"])
    assert zero["tests"] == ["tests/test_mul.py::test_mul"]
    # mutmut ran in a scratch copy: the user's tree and config are untouched.
    assert (repo / "setup.cfg").read_text() == user_config
    assert not (repo / "mutants").exists()
    assert git(repo, "status", "--porcelain") == before

    survived = mutate(repo, "promote", zero["key"])
    assert survived.returncode == 1 and "not written: SURVIVED" in survived.stdout
    assert not (repo / "mutations").exists()
    write(repo, "tests/test_mul.py", (repo / "tests/test_mul.py").read_text()
          + "\n\ndef test_mul_refuses_zero():\n    import pytest\n    with pytest.raises(ValueError):\n"
            "        mul(0, 1)\n")
    killed = mutate(repo, "promote", zero["key"])
    assert killed.returncode == 0, killed.stdout + killed.stderr
    files = list((repo / "mutations").glob("*.yaml"))
    assert len(files) == 1
    text = files[0].read_text()
    assert "anchor: |2\n      if a == 0:\n" in text and "red:\n  - mul\n" in text and "- add" in text
    again = mutate(repo, str(files[0]))
    assert again.returncode == 0, again.stdout + again.stderr


def test_sweep_without_mutmut_is_a_clear_usage_error(repo: Path):
    # Fake, named as such: package metadata that cannot find mutmut (it is installed here).
    env = {**os.environ}
    proc = subprocess.run([sys.executable, "-c", "import sys; from importlib import metadata\n"
                           "metadata.version = lambda n: (_ for _ in ()).throw(metadata.PackageNotFoundError(n))\n"
                           "from redfirst.mutations.cli import main; sys.exit(main(['sweep', '--root', sys.argv[1]]))",
                           str(repo)], capture_output=True, text=True, env=env)
    assert proc.returncode == 2
    assert "mutmut is not installed: pip install mutmut==3.8.1" in proc.stderr
    assert "Traceback" not in proc.stderr


def add_mul(repo: Path, extra_test: str = "") -> None:
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text()
          + "\n\ndef mul(a, b):\n    if a == 0:\n        return 0\n    return a * b\n")
    write(repo, "tests/test_mul.py", "from calc import mul\n\n\ndef test_mul():\n    assert mul(2, 3) == 6\n")
    write(repo, "gates/mul.yaml", "gate: mul\ndriver: {type: pytest, run: [tests/test_mul.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mul")


def test_an_unrelated_failing_test_aborts_mutmut_and_the_sweep_is_an_error_not_zero_survivors(repo: Path):
    require_mutmut()
    add_mul(repo)
    # A gate whose test fails on the untouched tree: mutmut's stats run fails and it stops.
    write(repo, "tests/test_broken.py", "def test_broken():\n    assert False\n")
    write(repo, "gates/broken.yaml", "gate: broken\ndriver: {type: pytest, run: [tests/test_broken.py]}\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "an unrelated failing test")
    proc = mutate(repo, "sweep", "--since", "HEAD~2")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "0 survivor" not in proc.stdout
    assert "mutmut run aborted" in proc.stderr and "failed to collect stats" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_mutants_mutmut_did_not_decide_are_no_decision_with_counts(repo: Path):
    require_mutmut()
    # Every mutant of `spin` but the killed ones loops for ever: mutmut times them out, no verdict.
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text()
          + "\n\ndef spin(n):\n    while n != 0:\n        n = n - 1\n    return n\n")
    write(repo, "tests/test_spin.py", "from calc import spin\n\n\ndef test_spin():\n    assert spin(3) == 0\n")
    write(repo, "gates/spin.yaml", "gate: spin\ndriver: {type: pytest, run: [tests/test_spin.py]}\n")
    # mutmut's own knobs, which the sweep keeps (the user's settings): a looping mutant is stopped after
    # about 2 CPU seconds instead of the default (estimate + 1 s) x 15 x 2, some 30
    write(repo, "setup.cfg", "[mutmut]\ntimeout_multiplier = 1\ntimeout_constant = 0.1\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "spin")
    proc = mutate(repo, "sweep", "--since", "HEAD~1", "--json")
    doc = json.loads(proc.stdout)
    assert doc["undecided"].get("timeout", 0) >= 1, doc
    assert proc.returncode in (1, 3), proc.stderr
    if not doc["survivors"]:
        assert proc.returncode == 3


def test_a_mutant_that_made_pytest_fail_internally_is_undecided_not_killed():
    # helper-13: mutmut counts pytest's exit 3 (INTERNALERROR: a hook or plugin raised) as killed;
    # the sweep took that over, so a mutant no test caught read as a kill and hid a survivor
    from redfirst.mutations import mutmut

    assert 3 not in mutmut.KILLED and 3 not in mutmut.NOT_KILLED
    assert mutmut.undecided_status(3) == "pytest internal error"
    assert 1 in mutmut.KILLED
