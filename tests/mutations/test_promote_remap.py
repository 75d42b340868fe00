"""`mutate promote` of a survivor mutmut reported with no test reaching it: once a test
reaches it, promote maps the survivor's function to the tests that reach it now (mutmut's
own test map, for that one mutant), then runs and promotes it as any other survivor."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mutate_helpers import Snapshot, git, keep, make_repo, mutate, put_back, write
from test_sweep import require_mutmut

MUL = '''

def mul(a, b):
    if a == 0:
        raise ValueError("a is zero")
    return a * b
'''


Swept = tuple[Path, dict[str, Any]]


def _sweep_untested_mul(work: Path, monkeypatch: pytest.MonkeyPatch) -> Swept:
    repo = make_repo(work, monkeypatch)
    write(repo, "calc/__init__.py", (repo / "calc/__init__.py").read_text() + MUL)
    git(repo, "commit", "-q", "-am", "mul, untested")
    proc = mutate(repo, "sweep", "--since", "HEAD~1", "--json")
    return repo, json.loads(proc.stdout)


@pytest.fixture(scope="module")
def _swept_kept(tmp_path_factory: pytest.TempPathFactory) -> tuple[Snapshot, Swept]:
    require_mutmut()
    return keep(tmp_path_factory, _sweep_untested_mul)


@pytest.fixture
def swept(_swept_kept: tuple[Snapshot, Swept], monkeypatch: pytest.MonkeyPatch) -> Swept:
    """The repository (`repo`'s) with an untested `mul` committed, after `mutate sweep` of that
    commit, and the sweep's report: swept once per module and xdist worker (mutmut's whole run),
    put back for each test at the path it was swept at (the sweep's cache keys on it)."""
    kept, made = _swept_kept
    put_back(kept, monkeypatch)
    return made


def test_a_no_tests_survivor_is_remapped_and_promoted_once_a_test_reaches_it(swept: Swept):
    repo, doc = swept
    zero = next(s for s in doc["survivors"] if s["removed"] == ["    if a == 0:"])
    assert zero["status"] == "no tests" and zero["tests"] == [], zero

    write(repo, "tests/test_mul.py", "import pytest\n\nfrom calc import mul\n\n\ndef test_mul():\n"
          "    assert mul(2, 3) == 6\n\n\ndef test_mul_refuses_zero():\n    with pytest.raises(ValueError):\n"
          "        mul(0, 1)\n")
    write(repo, "gates/mul.yaml", "gate: mul\ndriver: {type: pytest, run: [tests/test_mul.py]}\n")
    killed = mutate(repo, "promote", zero["key"])
    assert killed.returncode == 0, killed.stdout + killed.stderr
    assert "tests/test_mul.py::test_mul" in killed.stderr      # what the re-map found, said
    (written,) = (repo / "mutations").glob("*.yaml")
    assert "red:\n  - mul\n" in written.read_text()


def test_a_no_tests_survivor_no_test_reaches_yet_is_a_clear_error(swept: Swept):
    repo, doc = swept
    zero = next(s for s in doc["survivors"] if s["removed"] == ["    if a == 0:"])
    proc = mutate(repo, "promote", zero["key"])
    assert proc.returncode == 2
    assert "no test reaches" in proc.stderr and "mul" in proc.stderr
    assert not (repo / "mutations").exists()
