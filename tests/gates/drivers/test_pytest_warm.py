"""Driver `pytest-warm`: pytest forked from a warm process, graded like driver `pytest`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
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


@pytest.mark.parametrize("anchor, replace, imports", [
    # a function body: the fork gives the warm process's function the new code in place
    ("return a + b", "return a - b", 1),
    # module-level code: the fork imports calc again
    ("def add(a, b):", "add_offset = 1\n\n\ndef add(a, b):", 2),
])
def test_a_mutation_in_a_module_the_warm_process_imported_is_seen(repo: Path, monkeypatch, anchor: str,
                                                                  replace: str, imports: int):
    log = repo.parent / "imports.log"
    monkeypatch.setenv("CALC_IMPORT_LOG", str(log))
    if imports == 2:
        write(repo, "tests/test_add.py", "import calc\n\n\ndef test_add():\n    assert not hasattr(calc, 'add_offset')\n")
    write(repo, "calc/__init__.py", LOGGING_CALC + (repo / "calc/__init__.py").read_text())
    write(repo, "gates/add-warm.yaml", "gate: add-warm\ndriver:\n  type: pytest-warm\n  run: [tests/test_add.py]\n"
                                      "  preload: [calc]\n")
    write(repo, "mutations/m.yaml", f"mutation: m\nfile: calc/__init__.py\nanchor: {json.dumps(anchor)}\n"
                                    f"replace: {json.dumps(replace)}\nexpect: {{red: [add-warm]}}\n")
    proc = mutate(repo, "--json")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "KILLED", proc.stderr
    pids = log.read_text().split()
    # The warm process imported calc; the baseline's fork kept that import (its bytes were
    # unchanged). The mutated run's fork saw the mutation either way: in place for a body
    # edit (no import), or by importing calc again. The gate's cold baseline (a fresh pytest,
    # redfirst.mutations.warmth) imported it once more.
    assert len(pids) == imports + 1, pids
    assert len(set(pids)) == imports + 1


# Each mutation is seen only if the fork does what a fresh import would: refuse the
# in-place patch where import-time state holds the old code (the first five), patch where
# every reference to the function must see the new body (the rest).
SCENARIOS = {
    "ran-at-import": ("def one():\n    return 1\n\n\nX = one()\n", "assert s.X == 1", "return 1", "return 2"),
    "parametrize": ("def values():\n    return [1, 2]\n", None, "return [1, 2]", "return [1, 3]"),
    "closure-at-import": ("def make():\n    def inner():\n        return 1\n    return inner\n\n\nH = make()\n",
                          "assert s.H() == 1", "        return 1", "        return 2"),
    "generator-at-import": ("def gen():\n    yield 1\n\n\nG = gen()\n", "assert next(s.G) == 1", "yield 1", "yield 2"),
    "super-cell": ("class B:\n    def m(self):\n        return 1\n\n\nclass D(B):\n    def m(self):\n"
                   "        return 2\n", "assert s.D().m() == 2", "        return 2", "        return super().m() + 2"),
    "wrapped": ("import functools\n\n\n@functools.lru_cache(maxsize=None)\ndef sq(x):\n    return x * x\n",
                "assert s.sq(3) == 9", "return x * x", "return x + x"),
    "bound-at-import": ("class C:\n    def m(self):\n        return 1\n\n\nM = C().m\n", "assert s.M() == 1",
                        "return 1", "return 0"),
    "from-import": ("def f():\n    return 1\n", "assert f() == 1", "return 1", "return 0"),
}


def test_the_warm_fork_sees_each_mutation_as_a_fresh_import_would(repo: Path):
    mutations = []
    for name, (source, check, anchor, replace) in SCENARIOS.items():
        mod = name.replace("-", "_")
        write(repo, f"scen/{mod}.py", source)
        if name == "parametrize":
            test = (f"import pytest\n\nfrom scen import {mod} as s\n\n\n@pytest.mark.parametrize('v', s.values())\n"
                    "def test_it(v):\n    assert v in (1, 2)\n")
        elif name == "from-import":
            test = f"from scen.{mod} import f\n\n\ndef test_it():\n    {check}\n"
        else:
            test = f"from scen import {mod} as s\n\n\ndef test_it():\n    {check}\n"
        write(repo, f"tests/test_{mod}.py", test)
        write(repo, f"gates/{name}.yaml", f"gate: {name}\ndriver: {{type: pytest-warm, run: [tests/test_{mod}.py]}}\n")
        mutations.append(f"- mutation: {name}\n  file: scen/{mod}.py\n  anchor: {json.dumps(anchor)}\n"
                         f"  replace: {json.dumps(replace)}\n  expect: {{red: [{name}]}}\n")
    write(repo, "scen/__init__.py", "")
    (repo / "mutations").mkdir(exist_ok=True)
    (repo / "mutations" / "scen.yaml").write_text("".join(mutations))
    proc = mutate(repo, "--json")
    outcomes = {i["id"]: i["verdict"] for i in json.loads(proc.stdout)["items"]}
    assert outcomes == dict.fromkeys(SCENARIOS, "KILLED"), proc.stderr


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


def _client(sock: Path, cwd: Path, tests: list[str]) -> int:
    from redfirst.gates.drivers.pytest_warm import CLIENT

    return subprocess.run([sys.executable, "-S", "-c", CLIENT, str(sock), *tests, "--", "-q", "-p", "no:cacheprovider",
                           *tests], cwd=cwd, capture_output=True, timeout=60).returncode


def test_the_warm_process_collects_a_new_test_file_itself_only_on_an_unchanged_tree(tmp_path: Path, monkeypatch):
    from redfirst.gates.drivers.pytest_warm import WarmProcesses

    log = tmp_path / "imports.log"
    monkeypatch.setenv("B_IMPORT_LOG", str(log))
    root = tmp_path / "proj"
    write(root, "helper.py", "def one():\n    return 1\n")
    write(root, "test_a.py", "from helper import one\n\n\ndef test_a():\n    assert one() == 1\n")
    write(root, "test_b.py", "import os\n\nwith open(os.environ['B_IMPORT_LOG'], 'a') as f:\n"
                             "    f.write(f'{os.getpid()}\\n')\n\n\ndef test_b():\n    assert True\n")
    warm = WarmProcesses()
    sock = warm.ready(root, root, (), ["test_a.py"])
    assert sock is not None
    server = next(w.proc.pid for w in warm.servers.values() if w.sock == sock)
    # The tree differs from the warm-up (a mutation could be applied): test_b.py is
    # imported by each fork, never by the warm process.
    write(root, "helper.py", "def one():\n    return 2\n")
    assert _client(sock, root, ["test_b.py"]) == 0
    assert _client(sock, root, ["test_b.py"]) == 0
    pids = log.read_text().split()
    assert len(pids) == 2 and str(server) not in pids
    # Back as it was (same bytes, new mtime): the warm process collects test_b.py once,
    # and later forks find it imported.
    write(root, "helper.py", "def one():\n    return 1\n")
    assert _client(sock, root, ["test_b.py"]) == 0
    assert _client(sock, root, ["test_b.py"]) == 0
    pids = log.read_text().split()
    assert pids[2:] == [str(server)], pids


def test_a_warm_process_that_dies_mid_run_is_error_never_red_or_green(repo: Path):
    # The test kills the warm process (its fork's parent), then the fork itself: no one
    # is left to say how the run ended, so nothing may be concluded from it (a fork
    # killed by a signal would otherwise be RED).
    write(repo, "tests/test_orphan.py", "import os, signal, time\n\n\ndef test_kills_both():\n"
                                        "    os.kill(os.getppid(), signal.SIGKILL)\n    time.sleep(0.2)\n"
                                        "    os.kill(os.getpid(), signal.SIGKILL)\n")
    # Here only the warm process dies; the fork ends and says so itself: its own evidence.
    write(repo, "tests/test_survivor.py", "import os, signal, time\n\n\ndef test_kills_the_warm_process():\n"
                                          "    os.kill(os.getppid(), signal.SIGKILL)\n    time.sleep(0.2)\n")
    write(repo, "gates/orphan.yaml", "gate: orphan\ndriver: {type: pytest-warm, run: [tests/test_orphan.py]}\n")
    write(repo, "gates/survivor.yaml", "gate: survivor\ndriver: {type: pytest-warm, run: [tests/test_survivor.py]}\n")
    items = gates_json(repo, "orphan", "survivor")
    assert items["orphan"]["verdict"] == "ERROR", items["orphan"]
    assert (items["orphan"]["cause"], items["orphan"]["counts"]["exit"]) == ("config", 3), items["orphan"]
    assert (items["survivor"]["verdict"], items["survivor"]["counts"]["passed"]) == ("GREEN", 1), items["survivor"]


def test_a_warm_run_leaves_nothing_running(repo: Path):
    # A test that starts a process in a session of its own and returns: neither the
    # fork's process group nor its parent holds it; the run's marker finds it.
    marker = f"redfirst-warm-left-{os.getpid()}-{time.monotonic_ns()}"
    # The second ignores SIGTERM: it needs the SIGKILL after the grace.
    write(repo, "tests/test_daemon.py", "import subprocess\n\n\ndef test_starts_a_daemon():\n"
                                        f"    subprocess.Popen(['bash', '-c', 'exec -a {marker} sleep 300'],"
                                        " start_new_session=True)\n"
                                        f"    subprocess.Popen(['bash', '-c', 'trap \"\" TERM; exec -a {marker} sleep 301'],"
                                        " start_new_session=True)\n")
    write(repo, "gates/daemon.yaml", "gate: daemon\ndriver: {type: pytest-warm, run: [tests/test_daemon.py]}\n")
    items = gates_json(repo, "daemon")
    assert items["daemon"]["verdict"] == "GREEN", items["daemon"]
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes left running: {left}"


def test_a_mutated_module_in_a_hidden_folder_is_seen(repo: Path):
    # The tree walk leaves hidden folders out; the module the warm process imported from
    # one must still be compared, or a fork keeps the code from before the mutation.
    write(repo, ".tools/hid/__init__.py", "")
    write(repo, ".tools/hid/core.py", "def add(a, b):\n    return a + b\n")
    write(repo, "tests/test_hid.py", "import sys, os\nsys.path.insert(0, os.path.join(os.path.dirname(__file__), "
                                     "'..', '.tools'))\nfrom hid.core import add\n\n\ndef test_add():\n"
                                     "    assert add(2, 3) == 5\n")
    write(repo, "gates/hid.yaml", "gate: hid\ndriver: {type: pytest-warm, run: [tests/test_hid.py]}\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: .tools/hid/core.py\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [hid]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


def test_a_mutated_data_file_in_a_hidden_folder_read_at_import_is_seen(repo: Path):
    # kern imports from the root (so no fork may keep it as it is) and reads .data/k.cu
    # at import; the mutation of that file must reach the test.
    write(repo, "kern/__init__.py", 'from pathlib import Path\n\nimport calc  # noqa: F401\n\n'
                                    'SRC = (Path(__file__).parent.parent / ".data" / "k.cu").read_text()\n')
    write(repo, ".data/k.cu", "scale = 2\n")
    write(repo, "tests/test_k.py", 'import kern\n\n\ndef test_k():\n    assert "scale = 2" in kern.SRC\n')
    write(repo, "gates/k-warm.yaml", "gate: k-warm\ndriver: {type: pytest-warm, run: [tests/test_k.py], preload: [kern]}\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: .data/k.cu\nanchor: "scale = 2"\n'
                                    'replace: "scale = 3"\nexpect: {red: [k-warm]}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


def test_what_a_run_that_ends_with_os_exit_left_is_stopped(repo: Path):
    # The test forks (no exec: no run marker in its environment), the child starts a
    # session of its own, and the test leaves with os._exit: the fork never reaches its
    # own clean-up. The warm process adopts the child and stops it.
    pidfile = repo.parent / "left.pid"
    write(repo, "tests/test_exit.py", "import os, time\n\n\ndef test_daemon_then_exit():\n"
                                      "    if os.fork() == 0:\n        os.setsid()\n"
                                      f"        open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
                                      "        time.sleep(300)\n        os._exit(0)\n"
                                      "    time.sleep(0.3)\n    os._exit(0)\n")
    write(repo, "gates/exit.yaml", "gate: exit\ndriver: {type: pytest-warm, run: [tests/test_exit.py]}\n")
    items = gates_json(repo, "exit")
    assert items["exit"]["verdict"] != "GREEN", items["exit"]
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline and os.path.exists(f"/proc/{pid}") and \
            b"Z" not in Path(f"/proc/{pid}/stat").read_bytes().split(b")")[-1][:3]:
        time.sleep(0.05)
    alive = os.path.exists(f"/proc/{pid}") and b"Z" not in Path(f"/proc/{pid}/stat").read_bytes().split(b")")[-1][:3]
    if alive:
        os.kill(pid, 9)
    assert not alive, "the run's daemon outlived it"


def test_a_change_the_fork_cannot_patch_runs_in_a_fresh_interpreter(repo: Path):
    # The package registers itself at import and refuses a second registration (as
    # registries of models and ops do). An equivalent module-level edit must survive: an
    # import again inside the warm fork would raise, and read as a kill.
    write(repo, "reg/__init__.py", "import builtins\n\nWIDTH = 2\nif getattr(builtins, '_reg_seen', False):\n"
                                   "    raise RuntimeError('registered twice')\nbuiltins._reg_seen = True\n")
    write(repo, "tests/test_reg.py", "import reg\n\n\ndef test_width():\n    assert reg.WIDTH == 2\n")
    write(repo, "gates/reg.yaml", "gate: reg\ndriver: {type: pytest-warm, run: [tests/test_reg.py], preload: [reg]}\n")
    # A module that starts a worker thread at import: a fork would lack it.
    write(repo, "worker/__init__.py", "import queue, threading\n\nJOBS = queue.Queue()\nDONE = queue.Queue()\n\n\n"
                                      "def _serve():\n    while True:\n        DONE.put(JOBS.get() * 2)\n\n\n"
                                      "threading.Thread(target=_serve, daemon=True).start()\n")
    write(repo, "tests/test_worker.py", "import worker\n\n\ndef test_double():\n    worker.JOBS.put(21)\n"
                                        "    assert worker.DONE.get(timeout=5) == 42\n")
    write(repo, "gates/worker.yaml", "gate: worker\ndriver: {type: pytest-warm, run: [tests/test_worker.py], "
                                     "preload: [worker]}\n")
    write(repo, "mutations/m.yaml", 'mutation: equivalent-width\nfile: reg/__init__.py\nanchor: "WIDTH = 2\\n"\n'
                                    'replace: "WIDTH = 2.0\\n"\nexpect: {red: [reg]}\n')
    proc = mutate(repo, "--json")
    item = json.loads(proc.stdout)["items"][0]
    assert item["verdict"] == "SURVIVED", (item, proc.stderr)
    items = gates_json(repo, "worker")
    assert items["worker"]["verdict"] == "GREEN", items["worker"]


def test_later_gates_stay_warm_while_earlier_forks_exit(repo: Path, monkeypatch):
    # Three gates, three test files: the warm process collects the later files while
    # earlier forks may still be exiting; those are not processes the warm-up left, and
    # the mutated runs still patch in place (calc imported once, by the warm process).
    log = repo.parent / "imports.log"
    monkeypatch.setenv("CALC_IMPORT_LOG", str(log))
    write(repo, "calc/__init__.py", LOGGING_CALC + (repo / "calc/__init__.py").read_text())
    ids = []
    for n in range(3):
        write(repo, f"tests/test_w{n}.py", f"from calc import add\n\n\ndef test_w{n}():\n    assert add(2, {n}) == {2 + n}\n")
        write(repo, f"gates/w{n}.yaml", f"gate: w{n}\ndriver: {{type: pytest-warm, run: [tests/test_w{n}.py], "
                                        "preload: [calc]}\n")
        ids.append(f"w{n}")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: calc/__init__.py\nanchor: "return a + b"\n'
                                    f'replace: "return a * b + 7"\nexpect: {{red: [{", ".join(ids)}]}}\n')
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    # once by the warm process, once by each gate's cold baseline (redfirst.mutations.warmth)
    assert len(log.read_text().split()) == 1 + len(ids), log.read_text()


# A module whose source the warm process read as text (not by importing it) holds that text
# somewhere: a fork that patched the module's functions in place would run the tests on the
# old text. Each must be imported afresh (a fresh interpreter), as a cold pytest would.
TEXT_READS = {
    "test-module-opens-the-file": {
        "tests/test_src.py": "import calc\n\nSRC = open(calc.__file__).read()\n\n\n"
                             "def test_src():\n    assert 'return a + b' in SRC\n"},
    "conftest-getsource-of-the-module": {
        "tests/conftest.py": "import inspect\n\nimport calc\n\n\ndef pytest_configure(config):\n"
                             "    config.rf_calc_source = inspect.getsource(calc)\n",
        "tests/test_src.py": "def test_src(request):\n    assert 'return a + b' in request.config.rf_calc_source\n"},
    "the-module-reads-its-own-file": {
        "calc/__init__.py": "from pathlib import Path\n\nSELF = Path(__file__).read_text()\n\n\n"
                            "def add(a, b):\n    return a + b\n",
        "tests/test_src.py": "import calc\n\n\ndef test_src():\n    assert 'return a + b' in calc.SELF\n"},
    "getsource-of-the-function-at-import": {
        "tests/test_src.py": "import inspect\n\nimport calc\n\nSRC = inspect.getsource(calc.add)\n\n\n"
                             "def test_src():\n    assert 'return a + b' in SRC\n"},
}


@pytest.mark.parametrize("name", sorted(TEXT_READS))
def test_a_module_the_warm_process_read_as_text_is_imported_afresh_never_patched(repo: Path, name: str):
    for rel, text in TEXT_READS[name].items():
        write(repo, rel, text)
    write(repo, "gates/src-warm.yaml", "gate: src-warm\ndriver: {type: pytest-warm, run: [tests/test_src.py], "
                                       "preload: [calc]}\n")
    write(repo, "mutations/m.yaml", 'mutation: m\nfile: calc/__init__.py\nanchor: "return a + b"\n'
                                    'replace: "return a - b"\nexpect: {red: [src-warm]}\n')
    proc = mutate(repo, "--json", "--no-cache")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


# What import-time code read off a function object (its defaults, its code) without calling it
# or handing it to a call: a fork that patched that function in place would leave the value it
# read stale (a false SURVIVED). Such a function is never patched: the fork imports afresh.
ATTRIBUTE_READS = {
    "defaults-read-at-import": ("def scale(x, k=2):\n    return x * k\n", "K = scale.__defaults__[0]",
                                "assert K == 2", "k=2", "k=3"),
    "kwdefaults-read-at-import": ("def scale(x, *, k=2):\n    return x * k\n", "K = scale.__kwdefaults__['k']",
                                  "assert K == 2", "k=2", "k=3"),
    "code-read-at-import": ("def scale(x):\n    return x * 2\n", "K = scale.__code__.co_consts",
                            "assert 2 in K", "x * 2", "x * 3"),
}


@pytest.mark.parametrize("name", sorted(ATTRIBUTE_READS))
def test_a_function_whose_defaults_or_code_were_read_at_warm_up_is_never_patched(repo: Path, name: str):
    source, read, check, anchor, replace = ATTRIBUTE_READS[name]
    write(repo, "scale/__init__.py", source)
    write(repo, "tests/test_scale.py", f"from scale import scale\n\n{read}\n\n\ndef test_scale():\n    {check}\n")
    write(repo, "gates/scale-warm.yaml", "gate: scale-warm\ndriver: {type: pytest-warm, run: [tests/test_scale.py], "
                                         "preload: [scale]}\n")
    write(repo, "mutations/m.yaml", f"mutation: m\nfile: scale/__init__.py\nanchor: {json.dumps(anchor)}\n"
                                    f"replace: {json.dumps(replace)}\nexpect: {{red: [scale-warm]}}\n")
    proc = mutate(repo, "--json", "--no-cache")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr


def test_a_warm_process_collects_the_test_files_of_every_announced_gate_at_its_warm_up(tmp_path: Path, monkeypatch):
    # The gates a batch will run are announced first: the warm process imports all their test
    # files in its one warm-up session, not one collection session per gate as each comes.
    from redfirst.gates.drivers.pytest_warm import WarmProcesses

    log = tmp_path / "imports.log"
    monkeypatch.setenv("B_IMPORT_LOG", str(log))
    root = tmp_path / "proj"
    write(root, "test_a.py", "def test_a():\n    assert True\n")
    write(root, "test_b.py", "import os\n\nwith open(os.environ['B_IMPORT_LOG'], 'a') as f:\n"
                             "    f.write(f'{os.getpid()}\\n')\n\n\ndef test_b():\n    assert True\n")
    warm = WarmProcesses()
    warm.expect(root, root, (), ["test_b.py::test_b"])
    sock = warm.ready(root, root, (), ["test_a.py"])
    assert sock is not None
    server = next(w.proc.pid for w in warm.servers.values() if w.sock == sock)
    assert log.read_text().split() == [str(server)]     # before any run asked for test_b.py
    assert _client(sock, root, ["test_b.py"]) == 0
    assert log.read_text().split() == [str(server)]     # the fork found it imported
    warm.stop_all()


def test_the_gate_engine_announces_a_request_s_gates_to_their_drivers(repo: Path, monkeypatch):
    from redfirst.gates import drivers
    from redfirst.gates.api import EngineRunner, GateRequest

    seen: list[tuple[str, ...]] = []
    monkeypatch.setattr(drivers, "announce", lambda gates, root: seen.append(tuple(g.id for g in gates)))
    write(repo, "gates/w1.yaml", "gate: w1\ndriver: {type: pytest-warm, run: [tests/test_calc.py]}\n")
    write(repo, "gates/w2.yaml", "gate: w2\ndriver: {type: pytest-warm, run: [tests/test_calc.py]}\n")
    results = EngineRunner().run(GateRequest(repo, ("w1", "w2"), repo / ".redfirst"))
    assert [r.gate_id for r in results] == ["w1", "w2"]
    assert seen == [("w1", "w2")]
def test_a_gate_whose_run_holds_options_is_not_merged_into_the_announced_warm_up(tmp_path: Path):
    from redfirst.gates.drivers.pytest_warm import WarmProcesses

    root = tmp_path / "proj"
    write(root, "test_a.py", "def test_a():\n    assert True\n")
    warm = WarmProcesses()
    warm.expect(root, root, (), ["-k", "a", "test_a.py"])
    warm.expect(root, root, (), ["test_b.py::test_b"])
    assert list(warm.expected[warm.key(root, root, (), ())]) == ["test_b.py"]


def test_test_folders_with_a_conftest_each_stay_warm(repo: Path, monkeypatch):
    # the shadowing check (two test folders with a module of one name run cold) leaves out
    # conftest.py, which pytest imports by its path: the common layout stays warm
    log = repo.parent / "imports.log"
    monkeypatch.setenv("CALC_IMPORT_LOG", str(log))
    write(repo, "calc/__init__.py", LOGGING_CALC + (repo / "calc/__init__.py").read_text())
    for folder, test in (("unit", "tests/test_add.py"), ("more", "tests/test_sub.py")):
        write(repo, f"suite/{folder}/conftest.py", "import pytest\n\n\n@pytest.fixture\ndef two():\n    return 2\n")
        write(repo, f"suite/{folder}/test_{folder}.py", (repo / test).read_text())
        write(repo, f"gates/{folder}.yaml", f"gate: {folder}\ndriver:\n  type: pytest-warm\n"
                                            f"  run: [suite/{folder}/test_{folder}.py]\n")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: return a + b\n"
                                    "replace: return a - b\nexpect: {red: [unit], green: [more]}\n")
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    # imported once by the warm process, and once by each gate's cold baseline (mutations.warmth)
    assert len(log.read_text().split()) == 1 + 2, log.read_text()


def test_a_folder_made_sure_of_at_import_that_is_there_stays_warm(repo: Path, monkeypatch):
    # helper-17: os.makedirs(exist_ok=True) on a committed folder raised the audit event of a
    # folder made, and every run went cold; nothing is made there
    log = repo.parent / "imports.log"
    monkeypatch.setenv("CALC_IMPORT_LOG", str(log))
    write(repo, "data/README", "kept\n")
    write(repo, "calc/__init__.py", LOGGING_CALC + "import pathlib\n\npathlib.Path(__file__).parent.parent.joinpath("
                                    "'data').mkdir(exist_ok=True)\n" + (repo / "calc/__init__.py").read_text())
    write(repo, "gates/add-warm.yaml", "gate: add-warm\ndriver:\n  type: pytest-warm\n  run: [tests/test_add.py]\n")
    write(repo, "mutations/m.yaml", "mutation: m\nfile: calc/__init__.py\nanchor: return a + b\n"
                                    "replace: return a - b\nexpect: {red: [add-warm]}\n")
    proc = mutate(repo, "--json")
    assert json.loads(proc.stdout)["items"][0]["verdict"] == "KILLED", proc.stderr
    # imported once by the warm process, and once by the gate's cold baseline (mutations.warmth)
    assert len(log.read_text().split()) == 1 + 1, log.read_text()


def test_the_recording_environment_answers_as_os_environ_does(tmp_path: Path):
    # helper-17: GitPython's import calls os.environ.copy(), and `os.environ | {...}` is a dict
    # too; on the recording mapping either raised, the module did not import in the warm process
    # and its tests were skipped (a false SURVIVED)
    from redfirst.gates.drivers.pytest_warm.imported import _RootReads

    reads = _RootReads({"A": "1"}, Path(__file__).parent)     # this file stands for the root's code
    assert reads.copy() == {"A": "1"}
    assert reads | {"B": "2"} == {"A": "1", "B": "2"} and {"B": "2"} | reads == {"B": "2", "A": "1"}
    reads |= {"C": "3"}
    assert reads.env == {"A": "1", "C": "3"} and reads.written == {"C": "3"}
    assert reads.whole == {"A": "1"}      # seen whole: the run's environment must be the same set
