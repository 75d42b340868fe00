"""The read set a run keeps in its record (`reads.json`, gates.reads): the files under the
root that the gate's program read, or UNKNOWN with the reason. Real `gates run` processes
over a real git project in a tmp folder; the pytest, pytest-warm and python drivers report
through gates.read_hook, any other driver and a run that starts a process are UNKNOWN."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from gates.store import verify

GATES = [sys.executable, "-P", "-m", "gates.cli"]

HELPER = "SCALE = 2\n\n\ndef double(x):\n    return x * SCALE\n"
CONFTEST = "import pytest\n\n\n@pytest.fixture\ndef factor():\n    return 2\n"
TEST_READS = """\
import os
from pathlib import Path

from helpers.util import double


def test_double(factor):
    expected = int((Path(__file__).parent / "data" / "expected.txt").read_text())
    assert double(3) == expected == 3 * factor
    assert "GATES_READS" not in os.environ    # a program the test starts never reports into the run's file
"""


def _git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=root, check=True,
                   capture_output=True)


def _write(root: Path, rel: str, text: str) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text))


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    _write(root, "redfirst.yaml", "gates: {paths: [gates]}\n")
    _write(root, "README.md", "a project\n")
    _write(root, "helpers/__init__.py", "")
    _write(root, "helpers/util.py", HELPER)
    _write(root, "helpers/unrelated.py", "X = 1\n")
    _write(root, "tests/conftest.py", CONFTEST)
    _write(root, "tests/data/expected.txt", "6\n")
    _write(root, "tests/test_reads.py", TEST_READS)
    _write(root, ".gitignore", "__pycache__/\n")
    _git(root, "init", "-q", "-b", "main")
    _git(root, "add", "-A")
    _git(root, "commit", "-qm", "seed")
    return root


def _run(root: Path, gate_yaml: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the gate's --json item, its record's read set)."""
    _write(root, "gates/g.yaml", gate_yaml)
    proc = subprocess.run([*GATES, "run", "--json", "-q", "--root", str(root)], capture_output=True, text=True,
                          timeout=120, cwd=root)
    (item,) = json.loads(proc.stdout)["items"]
    folder = root / ".redfirst" / "evidence" / item["evidence"]
    verify(folder)      # sealed with the raw files
    return item, json.loads((folder / "reads.json").read_text())


NAMED = {"tests/test_reads.py", "tests/conftest.py", "helpers/__init__.py", "helpers/util.py",
         "tests/data/expected.txt"}


@pytest.mark.parametrize("driver", ["pytest", "pytest-warm"])
def test_a_pytest_run_keeps_the_test_its_conftest_helper_and_data_file_it_read(proj: Path, driver: str):
    item, reads = _run(proj, f"gate: g\ndriver: {{type: {driver}, run: [tests/test_reads.py]}}\n")
    assert item["verdict"] == "GREEN", item
    assert "unknown" not in reads, reads
    assert set(reads["paths"]) >= NAMED, reads
    # what no gate read is not in it; nor bytecode, nor the state folder
    assert not {"README.md", "helpers/unrelated.py"} & set(reads["paths"])
    assert not [p for p in reads["paths"] if "__pycache__" in p or p.startswith(".redfirst")]


def test_a_python_driver_run_keeps_the_module_and_the_file_it_read(proj: Path):
    _write(proj, "helpers/check.py", """\
        from pathlib import Path

        from gates import evidence

        from helpers.util import double


        def check():
            evidence.counter("doubled", double(int(Path("tests/data/expected.txt").read_text())))
        """)
    item, reads = _run(proj, "gate: g\ndriver: {type: python, run: 'helpers.check:check'}\n"
                             "assert: {counters: {doubled: {equals: 12}}}\n")
    assert item["verdict"] == "GREEN", item
    assert {"helpers/check.py", "helpers/util.py", "tests/data/expected.txt"} <= set(reads["paths"]), reads


@pytest.mark.parametrize("start", [
    "subprocess.run([sys.executable, '-c', 'pass'], check=True)",
    "os.system('true')",
    "multiprocessing.get_context('spawn').Process(target=print).start()",
])
def test_a_run_that_starts_a_process_has_an_unknown_read_set(proj: Path, start: str):
    _write(proj, "tests/test_spawn.py", f"""\
        import multiprocessing
        import os
        import subprocess
        import sys


        def test_spawns():
            {start}
        """)
    item, reads = _run(proj, "gate: g\ndriver: {type: pytest, run: [tests/test_spawn.py]}\n")
    assert item["verdict"] == "GREEN", item
    assert "started a process" in reads.get("unknown", ""), reads


def test_a_command_gate_has_an_unknown_read_set(proj: Path):
    item, reads = _run(proj, "gate: g\ndriver: {type: command, run: \"grep -qx 6 tests/data/expected.txt && "
                             "echo '1 passed, 0 failed'\", format: plain}\n")
    assert item["verdict"] == "GREEN", item
    assert reads == {"version": 1, "unknown": "driver command does not report what its program reads"}
