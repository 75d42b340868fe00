"""Messages that teach (issue 35, item 2): an unknown key of a gate or mutation file is named at
its line with the key it likely misspells and the allowed keys, at the top level as in a nested
mapping, never as the whole document "not valid under any of the given schemas". Real `gates
check` and `mutate` runs on files the tests write."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.gates.conftest import write_project

GATE_KEYS = "assert, build, build_dir, build_timeout, claim, driver, exit_only, gate, kind, requires, values"


def check(root: Path, module: str = "redfirst.gates.cli", *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-P", "-m", module, *args, "--root", str(root)], capture_output=True,
                          text=True, timeout=120)


@pytest.mark.parametrize(("text", "line", "message"), [
    ("gate: g\ndrvier: {type: command, run: 'true'}\n", 2,
     f"unknown key 'drvier' at the top level; did you mean 'driver'? (allowed: {GATE_KEYS})"),
    ("- gate: g\n  driver: {type: command, run: 'true'}\n  asserts: {exit: 0}\n", 3,
     f"unknown key 'asserts' in [0]; did you mean 'assert'? (allowed: {GATE_KEYS})"),
    ("gate: g\ndriver: {type: command, run: 'true', format: plain}\nassert:\n  cases: {mn: 1}\n", 4,
     "unknown key 'mn' in assert.cases; did you mean 'min'? (allowed: equals, max, min)"),
    ("gate: g\ndriver: {type: command, run: 'true', format: plain}\nassert:\n  cases: {at_least: 1}\n", 4,
     "unknown key 'at_least' in assert.cases (allowed: equals, max, min)"),
])
def test_an_unknown_gate_key_is_named_with_its_likely_spelling(tmp_path: Path, text: str, line: int, message: str):
    root = write_project(tmp_path / "proj", {"t.yaml": text}, value_check=False)
    proc = check(root, "redfirst.gates.cli", "check")
    assert proc.returncode == 2
    assert proc.stderr.splitlines()[0] == f"ERROR: {root / 'gates' / 't.yaml'}:{line}: {message}", proc.stderr
    assert "is not valid under any of the given schemas" not in proc.stderr
    assert "is a required property" not in proc.stderr     # `drvier` is the one mistake, not a missing `driver`
    assert "Traceback" not in proc.stderr


def test_an_unknown_mutation_key_is_named_with_its_likely_spelling(tmp_path: Path):
    root = write_project(tmp_path / "proj", {})
    (root / "mutations").mkdir()
    (root / "mutations" / "m.yaml").write_text("mutation: m\nfiel: value.txt\nanchor: good\nreplace: bad\n"
                                               "expect: {rde: [value-check]}\n")
    proc = check(root, "redfirst.mutations.cli")
    assert proc.returncode == 2
    found = [line for line in proc.stderr.splitlines() if "m.yaml" in line]
    assert any(line.endswith("m.yaml:2: unknown key 'fiel' at the top level; did you mean 'file'? (allowed: anchor, "
                             "build, expect, file, mode, mutation, occurrence, replace, why)") for line in found), found
    assert any(line.endswith("m.yaml:5: unknown key 'rde' in expect; did you mean 'red'? (allowed: build, green, "
                             "red)") for line in found), found
    assert not any("required property" in line for line in found), found
