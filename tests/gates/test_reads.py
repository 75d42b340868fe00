"""The read set a run keeps in its record (`reads.json`, redfirst.gates.reads): the files under the
root that the gate's program read, or UNKNOWN with the reason. Real `gates run` processes
over a real git project in a tmp folder; the pytest, pytest-warm and python drivers report
through redfirst.gates.read_hook, any other driver and a run that starts a process are UNKNOWN."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates.store import verify

GATES = [sys.executable, "-P", "-m", "redfirst.gates.cli"]

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


def warm_with_hook(tmp_path: Path, test: str) -> str:
    """A pytest-warm gate whose warm process installs the read hook before it imports the code
    under test, as its server's warm-up is to (a preloaded module outside the root does it here)."""
    (tmp_path / "hook").mkdir(exist_ok=True)
    (tmp_path / "hook" / "redfirst_warm_hook.py").write_text("from redfirst.gates import read_hook\n\nread_hook.install()\n")
    return (f"gate: g\ndriver: {{type: pytest-warm, run: [{test}], preload: [redfirst_warm_hook], "
            f"env: {{PYTHONPATH: {str(tmp_path / 'hook')!r}}}}}\n")


@pytest.mark.parametrize("driver", ["pytest", "pytest-warm"])
def test_a_pytest_run_keeps_the_test_its_conftest_helper_and_data_file_it_read(proj: Path, driver: str,
                                                                               tmp_path: Path):
    gate = (warm_with_hook(tmp_path, "tests/test_reads.py") if driver == "pytest-warm"
            else "gate: g\ndriver: {type: pytest, run: [tests/test_reads.py]}\n")
    item, reads = _run(proj, gate)
    assert item["verdict"] == "GREEN", item
    assert "unknown" not in reads, reads
    assert set(reads["paths"]) >= NAMED, reads
    # what no gate read is not in it; nor bytecode, nor the state folder
    assert not {"README.md", "helpers/unrelated.py"} & set(reads["paths"])
    assert not [p for p in reads["paths"] if "__pycache__" in p or p.startswith(".redfirst")]


def test_a_python_driver_run_keeps_the_module_and_the_file_it_read(proj: Path):
    _write(proj, "helpers/check.py", """\
        from pathlib import Path

        from redfirst.gates import evidence

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


AT_IMPORT = "from pathlib import Path\n\nLIMIT = int(Path(__file__).with_name('limit.txt').read_text())\n"


def test_a_warm_process_that_installs_the_hook_first_sees_a_file_read_at_import(proj: Path, tmp_path: Path):
    _write(proj, "helpers/limits.py", AT_IMPORT)
    _write(proj, "helpers/limit.txt", "3\n")
    _write(proj, "tests/test_limit.py", "from helpers.limits import LIMIT\n\n\ndef test_limit():\n"
                                        "    assert LIMIT == 3\n")
    item, reads = _run(proj, warm_with_hook(tmp_path, "tests/test_limit.py"))
    assert item["verdict"] == "GREEN", item
    assert {"helpers/limits.py", "helpers/limit.txt"} <= set(reads.get("paths", [])), reads


def test_a_file_read_at_import_in_a_warm_process_is_seen_or_the_read_set_is_unknown(proj: Path):
    # Without the hook in the warm process before it imports the code under test, what a
    # module read at import there is not seen: never a read set that leaves it out.
    _write(proj, "helpers/limits.py", AT_IMPORT)
    _write(proj, "helpers/limit.txt", "3\n")
    _write(proj, "tests/test_limit.py", "from helpers.limits import LIMIT\n\n\ndef test_limit():\n"
                                        "    assert LIMIT == 3\n")
    item, reads = _run(proj, "gate: g\ndriver: {type: pytest-warm, run: [tests/test_limit.py]}\n")
    assert item["verdict"] == "GREEN", item
    assert "helpers/limit.txt" in reads.get("paths", []) or "imported before the read hook" in reads["unknown"]


def _report(tmp_path: Path, **fields: Any) -> Path:
    """A report as redfirst.gates.read_hook writes it (the program side is covered by the runs above)."""
    report = tmp_path / "report"
    report.write_text(json.dumps({"opened": [], "written": [], "spawned": [], "imported_unseen": [], **fields}))
    return report


def test_a_virtual_environment_under_the_root_is_installed_packages_not_the_tree(tmp_path: Path):
    from redfirst.gates.reads import observed

    root = tmp_path / "proj"
    venv = root / ".venv"
    pytest_init = str(venv / "lib/python3.11/site-packages/_pytest/__init__.py")
    report = _report(tmp_path, opened=[pytest_init, str(root / "pkg/mod.py")], imported_unseen=[pytest_init],
                     installed=[str(venv), str(venv / "lib/python3.11/site-packages")])
    assert observed(report, root, [root / ".redfirst"]).paths == {"pkg/mod.py"}
    # an interpreter whose prefix is the root itself (a venv made in place): the tree is not skipped
    report = _report(tmp_path, opened=[str(root / "pkg/mod.py")], imported_unseen=[str(root / "pkg/early.py")],
                     installed=[str(root), "/usr"])
    assert "pkg/early.py was imported before the read hook" in (observed(report, root, []).unknown or "")


def test_a_sqlite_database_a_test_opens_is_in_the_read_set(proj: Path):
    # sqlite3 opens its file in C: the audit event is sqlite3.connect, not open.
    _write(proj, "tests/test_db.py", "import sqlite3\n\n\ndef test_db():\n"
                                     "    sqlite3.connect('tests/data/rows.db').execute('select 1').fetchall()\n")
    item, reads = _run(proj, "gate: g\ndriver: {type: pytest, run: [tests/test_db.py]}\n")
    assert item["verdict"] == "GREEN", item
    assert "tests/data/rows.db" in reads["paths"], reads


def test_a_primed_process_s_fork_reports_what_it_read_before_and_after_priming(tmp_path: Path):
    # A warm process primes what it read; each fork's report is that plus what the fork added
    # (a file opened, a module imported), and only that when it added nothing.
    import json
    import subprocess
    import sys

    (tmp_path / "before.txt").write_text("b")
    (tmp_path / "after.txt").write_text("a")
    (tmp_path / "rf_after_mod.py").write_text("X = 1\n")
    script = f"""
import json, os, sys
sys.path.insert(0, {str(tmp_path)!r})
from redfirst.gates import read_hook
read_hook.install()
open({str(tmp_path / 'before.txt')!r}).read()
read_hook.prime()
for name, extra in (("none", False), ("some", True)):
    pid = os.fork()
    if pid == 0:
        os.environ[read_hook.ENV] = {str(tmp_path)!r} + "/" + name + ".json"
        read_hook.start()
        if extra:
            open({str(tmp_path / 'after.txt')!r}).read()
            import rf_after_mod
        read_hook.report()
        os._exit(0)
    os.waitpid(pid, 0)
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    none = json.loads((tmp_path / "none.json").read_text())["opened"]
    some = json.loads((tmp_path / "some.json").read_text())["opened"]
    assert str(tmp_path / "before.txt") in none and str(tmp_path / "after.txt") not in none
    assert {str(tmp_path / "after.txt"), str(tmp_path / "rf_after_mod.py")} <= set(some)
    mine = {str(tmp_path / n) for n in ("before.txt", "after.txt", "rf_after_mod.py")}
    assert set(none) & mine == {str(tmp_path / "before.txt")} and set(some) & mine == mine
    assert some == sorted(some) and none == sorted(none)


def test_a_fork_s_report_names_none_of_the_hook_s_own_lookups(tmp_path: Path):
    # The report looks for child processes itself (/proc/self/task, the resource module): that is
    # not what the run read. A fork that read nothing after priming reports exactly the primed set.
    import json
    import subprocess
    import sys

    script = f"""
import json, os, sys
from redfirst.gates import read_hook
read_hook.install()
read_hook.prime()
primed = list(read_hook._state["primed"][3])
pid = os.fork()
if pid == 0:
    os.environ[read_hook.ENV] = {str(tmp_path)!r} + "/fork.json"
    read_hook.start()
    read_hook.report()
    os._exit(0)
os.waitpid(pid, 0)
print(json.dumps(primed))
"""
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    opened = json.loads((tmp_path / "fork.json").read_text())["opened"]
    assert [p for p in opened if p.startswith("/proc/") or "resource" in os.path.basename(p)] == []
    assert opened == json.loads(proc.stdout)


def test_redfirsts_own_folders_follow_the_settings_of_each_call(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    # worked out once per setting, not once per process: a cache home set after the first read
    # report must still be left out of the next one's reads outside the tree
    from redfirst.gates import reads

    for name in ("one", "two"):
        monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / name))
        own = reads._redfirsts_own()
        assert os.path.join(str(tmp_path / name / "redfirst" / "pycache"), "") in own, own
        assert not any(str(tmp_path / other) in o for o in own for other in {"one", "two"} - {name}), own
