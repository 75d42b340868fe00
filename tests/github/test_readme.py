"""README's two commands: they run as written on a machine whose python3 refuses `pip
install` outside a virtual environment (PEP 668: Debian 12, Ubuntu 24.04), and `.ci/run`
runs exactly the second one."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def readme_commands() -> list[str]:
    text = (REPO / "README.md").read_text()
    section = text.split("## Two commands on a fresh machine", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```bash\n(.*?)\n```", section, re.S)


def test_both_commands_install_into_a_venv_they_create_and_use():
    commands = readme_commands()
    assert len(commands) == 2, commands
    for command in commands:
        steps = [s.strip() for s in command.split("&&")]
        venv = steps.index("python3 -m venv .venv")
        assert steps[venv + 1] == ". .venv/bin/activate", command
        # every install and every run comes after the venv is active, by its python
        assert all("pip" not in s and "pytest" not in s for s in steps[:venv]), command
        assert all(not s.startswith("python3 ") for s in steps[venv + 1:]), command


def test_ci_run_runs_exactly_the_second_command():
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    assert readme_commands()[1] in lines


def tree_copy(dest: Path) -> Path:
    """This checkout's files as a fresh clone would have them (tracked and new, not ignored)."""
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=REPO, check=True,
                           capture_output=True, text=True).stdout.split("\0")
    for name in filter(None, files):
        if (REPO / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(REPO / name, dest / name)
    return dest


def test_the_first_command_installs_and_runs_the_seam_gates_in_a_fresh_venv(tmp_path):
    # The python3 on PATH is this interpreter's: a venv made from it is a fresh one.
    tree = tree_copy(tmp_path / "clone")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").symlink_to(sys.executable)
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(tmp_path), "LANG": "C.UTF-8"}
    for key in ("PIP_FIND_LINKS", "PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "PIP_CERT", "PIP_CONFIG_FILE"):
        if key in os.environ:
            env[key] = os.environ[key]
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", readme_commands()[0]], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert (tree / ".venv" / "bin" / "gates").exists()
    assert "GREEN" in proc.stdout + proc.stderr
