"""Set-up shared by the report-surface tests (HTML, progress, --json truth, API): a real git
project in a tmp folder whose gates are plain shell commands."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

# A gate GREEN while value.txt says `good` and RED (an assertion, exit 1) once a mutation changes it.
VALUE_CHECK = ("gate: value-check\ndriver: {type: command, run: \"grep -qx good value.txt && "
               "echo '1 passed, 0 failed' || { echo '0 passed, 1 failed'; exit 1; }\", format: plain}\n")


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@example.invalid", *args], cwd=cwd, check=True,
                   capture_output=True)


def write_project(root: Path, gate_files: dict[str, str], value_check: bool = True) -> Path:
    """`root` as a committed git project: redfirst.yaml, value.txt = good, the `value-check`
    gate in gates/g.yaml (unless `value_check` is False) and the `gates/<name>` files given."""
    (root / "gates").mkdir(parents=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "value.txt").write_text("good\n")
    for name, text in (({"g.yaml": VALUE_CHECK} if value_check else {}) | gate_files).items():
        (root / "gates" / name).write_text(text)
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "seed"]):
        git(root, *args)
    return root


@pytest.fixture
def make_project(tmp_path: Path) -> Callable[..., Path]:
    """`make_project({name: text}, value_check=True)`: the project under tmp_path/proj."""
    return lambda gate_files=None, value_check=True: write_project(tmp_path / "proj", gate_files or {}, value_check)
