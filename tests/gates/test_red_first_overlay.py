"""`gates red-first`: the base run reads HEAD's test side whatever the gate names, and a change that
touched only that test side proves nothing (issue 33.2: "the base run uses HEAD's test files however
`run:` names them")."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]
GATE = "gate: add\ndriver: {type: pytest, run: [tests/test_add.py], timeout: 60}\n"
TEST = "from calc import add\n\ndef test_add(expected):\n    assert add(2, 3) == expected\n"
FIXTURE = "import pytest\n\n@pytest.fixture\ndef expected():\n    return {}\n"


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def write(root: Path, name: str, text: str, mode: int = 0o644) -> None:
    path = root / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))
    path.chmod(mode)


def commit(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)
    return git(root, "rev-parse", "HEAD")


def project(tmp_path: Path, need_tool: object, files: dict[str, str],
            executable: tuple[str, ...] = ()) -> tuple[Path, str]:
    """A repository whose first commit holds `files` (and calc.add, correct); returns it and that commit."""
    need_tool("git")  # type: ignore[operator]
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.email", "t@example.com")
    git(root, "config", "user.name", "t")
    write(root, ".gitignore", "__pycache__/\n.redfirst/\n")
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b\n")
    for name, text in files.items():
        write(root, name, text, 0o755 if name in executable else 0o644)
    return root, commit(root, "base")


def red_first(root: Path, gate: str, base: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*GATES, "red-first", gate, "--base", base, "--root", str(root)],
                          capture_output=True, text=True, cwd=root)


def unproven(root: Path) -> bool:
    out = subprocess.run([*GATES, "proofs", "--root", str(root)], capture_output=True, text=True, cwd=root).stdout
    return "UNPROVEN" in out


# Where the wrong `expected` fixture lives at the base; HEAD fixes only that file (calc/ is unchanged).
@pytest.mark.parametrize("fixture_file", ["tests/conftest.py", "conftest.py", "tests/helpers/fixtures.py"])
def test_a_commit_that_fixes_only_the_test_side_is_not_proven(
        tmp_path: Path, need_tool: object, fixture_file: str) -> None:
    # adversarial finding (red-first-base-helpers): only the named test file came from HEAD; the
    # conftest (or a helper it imports) stayed the base's, so fixing a fixture read as "proven".
    files = {fixture_file: FIXTURE.format(6), "tests/test_add.py": TEST, "gates/add.yaml": GATE}
    if fixture_file.startswith("tests/helpers/"):
        files["tests/conftest.py"] = "from helpers.fixtures import expected  # noqa: F401\n"
        files["tests/helpers/__init__.py"] = ""
        files["pytest.ini"] = "[pytest]\npythonpath = tests\n"
    root, base = project(tmp_path, need_tool, files)
    write(root, fixture_file, FIXTURE.format(5))
    commit(root, "fix the fixture")
    assert git(root, "diff", "--stat", base, "HEAD", "--", "calc") == ""
    proc = red_first(root, "add", base)
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "NO_DECISION" in proc.stderr and "nothing to prove" in proc.stderr, proc.stderr
    assert "proven" not in proc.stdout
    assert unproven(root)


def test_a_test_side_change_with_a_source_change_outside_it_still_proves(tmp_path: Path, need_tool: object) -> None:
    # The overlay takes the whole test folder; a real fix in calc/ is still proven from HEAD's tests.
    root, base = project(tmp_path, need_tool, {"tests/conftest.py": FIXTURE.format(5)})
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b + 0\n\ndef sub(a, b):\n    return a - b\n")
    write(root, "tests/conftest.py", FIXTURE.format(-1))
    write(root, "tests/test_add.py", "from calc import sub\n\ndef test_sub(expected):\n    assert sub(2, 3) == expected\n")
    write(root, "gates/add.yaml", GATE)
    commit(root, "sub, its test and fixture")
    proc = red_first(root, "add", base)
    # At the base calc has no `sub`: an ImportError, not a red; the conftest is HEAD's (a -1 fixture).
    assert proc.returncode == 3 and "not a red" in proc.stdout, proc.stdout + proc.stderr


def test_only_a_source_change_is_proven_with_heads_whole_test_folder(tmp_path: Path, need_tool: object) -> None:
    root, base = project(tmp_path, need_tool, {"calc/__init__.py": "def add(a, b):\n    return a - b\n"})
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/conftest.py", FIXTURE.format(5))
    write(root, "tests/test_add.py", TEST)
    write(root, "gates/add.yaml", GATE)
    commit(root, "fix add, with its gate")
    proc = red_first(root, "add", base)
    assert proc.returncode == 0 and "proven" in proc.stdout, proc.stdout + proc.stderr
    assert not unproven(root)


def test_a_file_head_deleted_from_the_test_folder_is_gone_at_the_base(tmp_path: Path, need_tool: object) -> None:
    # At the base tests/conftest.py overrides the root fixture with a wrong one; HEAD deletes it and
    # edits a README. Laid over without the deletion, the base run read the stale override: "proven".
    root, base = project(tmp_path, need_tool, {"conftest.py": FIXTURE.format(5), "tests/conftest.py": FIXTURE.format(6),
                                               "tests/test_add.py": TEST, "gates/add.yaml": GATE,
                                               "README.md": "calc\n"})
    git(root, "rm", "-q", "tests/conftest.py")
    write(root, "README.md", "calc: adds\n")
    commit(root, "drop the wrong override")
    proc = red_first(root, "add", base)
    assert proc.returncode == 1 and "add at base: GREEN" in proc.stdout, proc.stdout + proc.stderr
    assert unproven(root)


CHECK = "import sys\nsys.path[:0] = ['checks', '.']\nfrom expect import WANT\nfrom calc import add\n" \
        "print('1..1')\nprint('ok 1' if add(2, 3) == WANT else 'not ok 1')\n"


RUN_SH = f"#!/bin/sh\nexec {sys.executable} checks/check.py\n"
CMD_GATE = "gate: add\ndriver: {type: command, run: [./checks/run.sh], format: tap}\n"


def test_a_command_gates_script_folder_comes_from_head(tmp_path: Path, need_tool: object) -> None:
    # `run: [./checks/run.sh]`: the script's folder (its helper checks/expect.py) is HEAD's at the base.
    # HEAD fixes only the expected sum in that helper: no source changed, nothing is proven.
    root, base = project(tmp_path, need_tool, {"checks/run.sh": RUN_SH, "checks/check.py": CHECK,
                                               "checks/expect.py": "WANT = 6\n", "gates/add.yaml": CMD_GATE},
                         executable=("checks/run.sh",))
    write(root, "checks/expect.py", "WANT = 5\n")
    commit(root, "fix the expected sum")
    proc = red_first(root, "add", base)
    assert proc.returncode == 3 and "nothing to prove" in proc.stderr, proc.stdout + proc.stderr
    assert unproven(root)


def test_a_script_new_at_head_keeps_its_exec_bit_at_the_base(tmp_path: Path, need_tool: object) -> None:
    root, base = project(tmp_path, need_tool, {"calc/__init__.py": "def add(a, b):\n    return a + b + 1\n"})
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b\n")
    write(root, "checks/run.sh", RUN_SH, 0o755)
    write(root, "checks/check.py", CHECK)
    write(root, "checks/expect.py", "WANT = 5\n")
    write(root, "gates/add.yaml", CMD_GATE)
    commit(root, "fix add, with its check")
    proc = red_first(root, "add", base)
    assert proc.returncode == 0 and "proven" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("config, text", [
    ("pytest.ini", "[pytest]\ntestpaths = tests\n"),
    ("pyproject.toml", "[tool.pytest.ini_options]\ntestpaths = ['tests']\n"),
    ("setup.cfg", "[tool:pytest]\ntestpaths =\n    tests\n"),
])
def test_a_pytest_gate_naming_no_path_takes_its_testpaths_from_head(
        tmp_path: Path, need_tool: object, config: str, text: str) -> None:
    # `run: [-q]`: pytest collects the configured testpaths; their folder is the test side too.
    files = {config: text, "tests/conftest.py": FIXTURE.format(6), "tests/test_add.py": TEST,
             "gates/add.yaml": "gate: add\ndriver: {type: pytest, run: [-q], timeout: 60}\n"}
    root, base = project(tmp_path, need_tool, files)
    write(root, "tests/conftest.py", FIXTURE.format(5))
    commit(root, "fix the fixture")
    proc = red_first(root, "add", base)
    assert proc.returncode == 3 and "nothing to prove" in proc.stderr, proc.stdout + proc.stderr
    assert unproven(root)


def test_a_pytest_gate_with_no_testpaths_takes_the_folders_of_its_test_files_from_head(
        tmp_path: Path, need_tool: object) -> None:
    files = {"tests/unit/conftest.py": FIXTURE.format(6), "tests/unit/test_add.py": TEST,
             "gates/add.yaml": "gate: add\ndriver: {type: pytest, run: [-q], timeout: 60}\n"}
    root, base = project(tmp_path, need_tool, files)
    write(root, "tests/unit/conftest.py", FIXTURE.format(5))
    commit(root, "fix the fixture")
    proc = red_first(root, "add", base)
    assert proc.returncode == 3 and "nothing to prove" in proc.stderr, proc.stdout + proc.stderr
