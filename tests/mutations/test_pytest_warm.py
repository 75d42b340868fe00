"""Driver `pytest-warm`: pytest forked from a warm process, graded like driver `pytest`."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

from mutate_helpers import mutate, write

LOGGING_CALC = '''\
import os

# Every import of this module appends the importing process id: the test can tell the
# warm process's import from the forks' imports.
with open(os.environ["CALC_IMPORT_LOG"], "a") as log:
    log.write(f"{os.getpid()}\\n")
'''


def gates_json(root: Path, *ids: str) -> dict[str, dict]:
    proc = subprocess.run(["gates", "run", "--root", str(root), "--json", *ids], capture_output=True, text=True,
                          timeout=300)
    assert proc.stdout.strip(), proc.stderr
    return {i["id"]: i for i in json.loads(proc.stdout)["items"]}


def test_a_mutation_in_a_module_the_warm_process_imported_is_seen(repo: Path, monkeypatch):
    log = repo.parent / "imports.log"
    monkeypatch.setenv("CALC_IMPORT_LOG", str(log))
    write(repo, "calc/__init__.py", LOGGING_CALC + (repo / "calc/__init__.py").read_text())
    write(repo, "gates/add-warm.yaml", "gate: add-warm\ndriver:\n  type: pytest-warm\n  run: [tests/test_add.py]\n"
                                      "  preload: [calc]\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: calc/__init__.py\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [add-warm]}\n')
    proc = mutate(repo, "--json")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    pids = log.read_text().split()
    # The warm process imported calc; the baseline's fork kept that import (calc imports
    # nothing from the root and its bytes were unchanged); the mutated run's fork
    # imported calc again and so saw the mutation.
    assert len(pids) == 2, pids
    assert len(set(pids)) == 2


def test_a_crash_in_the_forked_child_is_red_cause_signal(repo: Path):
    write(repo, "tests/test_crash.py", "import os, signal\n\n\ndef test_passes_then_crashes():\n"
                                       "    print('1 passed')\n    os.kill(os.getpid(), signal.SIGSEGV)\n")
    for kind in ("pytest", "pytest-warm"):
        write(repo, f"gates/crash-{kind}.yaml", f"gate: crash-{kind}\ndriver: {{type: {kind}, run: [tests/test_crash.py]}}\n")
    items = gates_json(repo, "crash-pytest", "crash-pytest-warm")
    assert (items["crash-pytest-warm"]["verdict"], items["crash-pytest-warm"]["cause"]) == ("RED", "signal")
    assert items["crash-pytest-warm"]["reason"] == items["crash-pytest"]["reason"]


def test_warm_and_cold_pytest_grade_alike(repo: Path):
    write(repo, "tests/test_mixed.py", "import pytest\n\n\ndef test_ok():\n    assert 1\n\n\n"
                                       "def test_bad():\n    assert 0\n\n\n@pytest.mark.skip\ndef test_skip():\n    pass\n")
    write(repo, "tests/test_skips.py", "import pytest\n\n\n@pytest.mark.skip\ndef test_skip():\n    pass\n")
    ids = []
    for name in ("add", "mixed", "skips"):
        test = f"tests/test_{name}.py"
        for kind in ("pytest", "pytest-warm"):
            write(repo, f"gates/{name}-{kind}.yaml", f"gate: {name}-{kind}\ndriver: {{type: {kind}, run: [{test}]}}\n")
            ids.append(f"{name}-{kind}")
    items = gates_json(repo, *ids)
    for name in ("add", "mixed", "skips"):
        cold, warm = items[f"{name}-pytest"], items[f"{name}-pytest-warm"]
        assert (warm["verdict"], warm["cause"], warm["counts"]) == (cold["verdict"], cold["cause"], cold["counts"])
    assert [items[f"{n}-pytest-warm"]["verdict"] for n in ("add", "mixed", "skips")] == ["GREEN", "RED", "NO_DECISION"]


def test_a_timed_out_warm_run_is_red_and_its_fork_is_killed(repo: Path):
    pidfile = repo.parent / "child.pid"
    write(repo, "tests/test_slow.py", f"import os, time\n\n\ndef test_slow():\n"
                                      f"    open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n    time.sleep(120)\n")
    write(repo, "gates/slow.yaml", "gate: slow\ndriver: {type: pytest-warm, run: [tests/test_slow.py], timeout: 3}\n")
    items = gates_json(repo, "slow")
    assert (items["slow"]["verdict"], items["slow"]["cause"]) == ("RED", "timeout")
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and \
            b"Z" not in Path(f"/proc/{pid}/stat").read_bytes().split(b")")[-1][:3]:
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{pid}") or \
        b"Z" in Path(f"/proc/{pid}/stat").read_bytes().split(b")")[-1][:3], "the forked run outlived its timeout"


def test_an_unchanged_module_that_imports_the_mutated_one_is_not_kept_stale(repo: Path):
    write(repo, "calc/core.py", "def add(a, b):\n    return a + b\n")
    write(repo, "calc/api.py", "from calc.core import add\n\n\ndef total(xs):\n    return sum(xs) if False else "
                               "add(xs[0], xs[1])\n")
    write(repo, "tests/test_api.py", "from calc.api import total\n\n\ndef test_total():\n    assert total([2, 3]) == 5\n")
    write(repo, "gates/api-warm.yaml", "gate: api-warm\ndriver:\n  type: pytest-warm\n  run: [tests/test_api.py]\n"
                                       "  preload: [calc.api]\n")
    write(repo, "mutations/m.yaml", 'mutation: core\nfile: calc/core.py\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [api-warm]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


def test_a_mutated_submodule_is_seen_through_its_kept_parent_package(repo: Path):
    # pkg/__init__.py imports nothing from the root, so the fork keeps it; its attribute
    # `core` must not hand `from pkg import core` the warm process's unmutated module.
    write(repo, "pkg/__init__.py", '"""pkg"""\n')
    write(repo, "pkg/core.py", "def add(a, b):\n    return a + b\n")
    write(repo, "tests/test_core.py", "from pkg import core\n\n\ndef test_core():\n    assert core.add(2, 3) == 5\n")
    write(repo, "gates/core-warm.yaml", "gate: core-warm\ndriver: {type: pytest-warm, run: [tests/test_core.py]}\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: pkg/core.py\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [core-warm]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


def test_a_mutated_data_file_read_at_import_is_seen(repo: Path):
    # kern imports nothing from the root, so a fork could keep it; but it read k.cu at
    # import, and a mutation of k.cu must reach the test.
    write(repo, "kern/__init__.py", 'from pathlib import Path\n\nSRC = (Path(__file__).parent / "k.cu").read_text()\n')
    write(repo, "kern/k.cu", "scale = 2\n")
    write(repo, "tests/test_k.py", 'import kern\n\n\ndef test_k():\n    assert "scale = 2" in kern.SRC\n')
    write(repo, "gates/k-warm.yaml", "gate: k-warm\ndriver: {type: pytest-warm, run: [tests/test_k.py], preload: [kern]}\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: kern/k.cu\nanchor: "scale = 2"\n'
                                    'replace: "scale = 3"\nexpect: {red: [k-warm]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
