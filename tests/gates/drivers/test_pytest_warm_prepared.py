"""pytest-warm's prepared sessions (prepared.py): a fork that runs a session the warm process made
ready up to its collection must give what `python -m pytest` gives with the same arguments, on the
tree as it is now; where it cannot, the fork runs pytest itself.

Each scenario runs one real project three ways: cold (`python -m pytest`), and twice through a real
warm process (the first run makes the session, both runs fork from it); the exit status, the JUnit
outcome of every case and pytest's summary line must agree, and the warm runs must say they took
the prepared session (else the comparison would prove nothing)."""

from __future__ import annotations

import json
import marshal
import os
import random
import re
import socket
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest
from mutate_helpers import mutate, write

from redfirst.gates.drivers.pytest_warm import wire


class Warm:
    """A real warm process on a project, asked the way the runner asks it."""

    def __init__(self, root: Path, tests: list[str], env: dict[str, str] | None = None) -> None:
        self.root = root
        self.env = {**_env(), **(env or {})}
        # beside the project, in the test's tmp_path (short enough for a socket's 108 bytes)
        self.sock = Path(tempfile.mkdtemp(prefix="rf-warm-test-", dir=root.parent)) / "s"
        self.proc = subprocess.Popen([sys.executable, "-m", "redfirst.gates.drivers.pytest_warm", "--serve", str(self.sock),
                                      "--root", str(root), "--preload", "", "--", *tests], cwd=root,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=self.env)
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == b"ready"

    def run(self, args: list[str], out: Path, then: list[str] | None = None) -> dict:
        """One run: its answer (exit, how it ran), its stdout and stderr in `out`. `then`: the test
        paths the caller names as its next run's, as the runner does (GateRequest.then)."""
        with socket.socket(socket.AF_UNIX) as conn, open(out / "stdout", "wb") as so, \
                open(out / "stderr", "wb") as se, open(os.devnull, "rb") as si:
            conn.connect(str(self.sock))
            tests = [a for a in args if not a.startswith("-") and "=" not in a and a not in ("redfirst.gates.pytest_plugin",)]
            body: dict = {"args": args, "tests": tests, "cwd": str(self.root), "env": self.env}
            if then is not None:
                body["next"] = {"tests": then, "args": _args(out, then)}
            wire.send(conn, marshal.dumps(body), [si.fileno(), so.fileno(), se.fileno()])
            answer: dict = marshal.loads(wire.receive(conn)[0])
        return answer

    def stop(self) -> None:
        self.proc.kill()
        self.proc.wait()


def _env() -> dict[str, str]:
    return {**os.environ, "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}


def _args(out: Path, tests: list[str]) -> list[str]:
    """What the pytest driver runs under a mutation (redfirst.gates.drivers.pytest.pytest_argv, brief)."""
    cache = out / "cache"
    return ["-p", "redfirst.gates.pytest_plugin", f"--junitxml={out / 'junit.xml'}", "-o", "junit_family=xunit2", "-q",
            "-rfE", "--tb=short", "-o", f"cache_dir={cache}", "-x", *tests]


def _seen(out: Path) -> tuple[list[tuple[str, str]], str]:
    """Each JUnit case with its outcome, and pytest's summary counts (timings aside)."""
    cases = []
    junit = out / "junit.xml"
    if junit.is_file():
        for case in ET.parse(junit).iter("testcase"):
            kinds = [c.tag for c in case if c.tag in ("failure", "error", "skipped")]
            cases.append((f"{case.get('classname')}::{case.get('name')}", ",".join(kinds) or "passed"))
    text = (out / "stdout").read_text(errors="replace")
    summary = [re.sub(r" in [0-9.]+s.*", "", line.strip("= ")) for line in text.splitlines()
               if re.search(r"\b(passed|failed|error|skipped|xfailed|xpassed|no tests ran)\b.* in [0-9.]+s", line)]
    return sorted(cases), "|".join(summary)


def _cold(root: Path, out: Path, tests: list[str]) -> tuple[int, tuple]:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "stdout", "wb") as so, open(out / "stderr", "wb") as se:
        code = subprocess.run([sys.executable, "-m", "pytest", *_args(out, tests)], cwd=root, stdout=so, stderr=se,
                              env=_env(), timeout=120).returncode
    return code, _seen(out)


@pytest.fixture
def warm_project(tmp_path: Path) -> Iterator[tuple[Path, list[Warm]]]:
    root = tmp_path / "proj"
    root.mkdir()
    started: list[Warm] = []
    yield root, started
    for w in started:
        w.stop()


SCENARIOS = {
    "pass-and-fail-stops-at-first": {
        "tests/test_a.py": "def test_one():\n    assert 1\n\ndef test_two():\n    assert 0\n\n"
                           "def test_three():\n    assert 1\n"},
    "fixture-setup-error": {
        "tests/test_a.py": "import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError('setup')\n\n"
                           "def test_x(broken):\n    pass\n"},
    "skip-xfail-strict-xpass": {
        "tests/test_a.py": "import pytest\n\n@pytest.mark.skip(reason='no')\ndef test_s():\n    pass\n\n"
                           "@pytest.mark.xfail\ndef test_xf():\n    assert 0\n\n"
                           "@pytest.mark.xfail(strict=True)\ndef test_xp():\n    assert 1\n"},
    "conftest-sets-the-environment-at-configure": {
        "tests/conftest.py": "import os\n\ndef pytest_configure(config):\n    os.environ['RF_FROM_CONFIGURE'] = 'yes'\n",
        "tests/test_a.py": "import os\n\ndef test_env():\n    assert os.environ.get('RF_FROM_CONFIGURE') == 'yes'\n"},
    "session-fixture-and-teardown": {
        "tests/conftest.py": "import pytest\n\n@pytest.fixture(scope='session')\ndef res():\n    yield [1]\n"
                             "    raise RuntimeError('teardown')\n",
        "tests/test_a.py": "def test_r(res):\n    assert res == [1]\n"},
    "the-cache-fixture-starts-empty-each-run": {
        "tests/test_a.py": "def test_c(cache):\n    n = cache.get('rf/n', 0)\n    cache.set('rf/n', n + 1)\n"
                           "    assert n == 0\n"},
    "a-test-that-exits-the-process": {
        "tests/test_a.py": "import os\n\ndef test_exit():\n    os._exit(7)\n"},
    "no-such-test": {"tests/test_a.py": "def test_one():\n    assert 1\n"},
    "parametrized-and-classes": {
        "tests/test_a.py": "import pytest\n\nclass TestK:\n    @pytest.mark.parametrize('x', [1, 2, 3])\n"
                           "    def test_p(self, x):\n        assert x < 3\n"},
}
DIES = {"a-test-that-exits-the-process"}
COLLECTION_FAILS = {"no-such-test"}     # no standby runs it (its collection raised): each run forks
SELECT = {"no-such-test": ["tests/test_a.py::test_nothing"],
          "parametrized-and-classes": ["tests/test_a.py::TestK::test_p"]}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_prepared_fork_gives_what_pytest_gives(warm_project, tmp_path: Path, name: str) -> None:
    root, started = warm_project
    for rel, text in SCENARIOS[name].items():
        write(root, rel, text)
    tests = SELECT.get(name, ["tests/test_a.py"])
    code, seen = _cold(root, tmp_path / "cold", tests)
    warm = Warm(root, tests)
    started.append(warm)
    for n in (1, 2, 3):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, tests), out)
        # A fork that exits mid-test is answered for by the warm process (it never says how it ran).
        # The first run's fork tells the warm process, as it collects, that its collection runs no
        # project code: the standby made while the second one runs serves the third (standby.py).
        assert answer.get("how", "exited") == ("exited" if name in DIES else "prepared" if n <= 2 or
                                               name in COLLECTION_FAILS else "standby"), answer
        assert (answer["exit"], _seen(out)) == (code, seen), (out / "stdout").read_text()


def test_one_session_serves_the_gates_whose_tests_share_a_folder(warm_project, tmp_path: Path) -> None:
    root, started = warm_project
    write(root, "tests/test_a.py", "def test_a():\n    assert 1\n")
    write(root, "tests/test_b.py", "def test_b():\n    assert 0\n")
    warm = Warm(root, ["tests/test_a.py"])
    started.append(warm)
    for tests, code, case in ((["tests/test_a.py"], 0, "tests.test_a::test_a"), (["tests/test_b.py"], 1,
                              "tests.test_b::test_b"), (["tests/test_a.py::test_a"], 0, "tests.test_a::test_a")):
        out = Path(tempfile.mkdtemp(dir=tmp_path))
        answer = warm.run(_args(out, tests), out)
        assert (answer.get("how"), answer["exit"]) == ("prepared", code), (out / "stdout").read_text()
        assert [c for c, _ in _seen(out)[0]] == [case]      # its own tests, collected in the fork


def test_an_option_the_driver_does_not_give_is_run_by_pytest_itself(warm_project, tmp_path: Path) -> None:
    root, started = warm_project
    write(root, "tests/test_a.py", "def test_a():\n    assert 1\n")
    warm = Warm(root, ["tests/test_a.py"])
    started.append(warm)
    out = tmp_path / "o"
    out.mkdir()
    answer = warm.run([*_args(out, ["tests/test_a.py"]), "-v"], out)
    assert (answer.get("how"), answer["exit"]) == ("warm", 0)
    assert "test session starts" in (out / "stdout").read_text()      # the header pytest prints at verbosity 0


CONFTEST_READS_THE_SOURCE = {
    "mode/__init__.py": "def mode():\n    return 'a'\n",
    # Only a run with the driver's mutation options calls mode(): not the warm-up's collection, not the baseline.
    "tests/conftest.py": "import os\n\nimport mode\n\n\ndef pytest_configure(config):\n"
                         "    if config.getoption('tbstyle') == 'short':\n        os.environ['RF_MODE'] = mode.mode()\n",
    "tests/test_mode.py": "import os\n\n\ndef test_mode():\n    assert os.environ.get('RF_MODE', 'a') == 'a'\n",
}


def test_a_function_the_prepared_session_ran_is_never_patched_under_it(warm_project, tmp_path: Path) -> None:
    # The conftest's configure calls mode() while the warm process makes the mutation runs' session
    # ready, with the code as imported: a fork that reused that session with mode() patched would keep
    # 'a' (a false SURVIVED). It must run pytest anew, where configure sees 'b' and the test fails.
    root, started = warm_project
    for rel, text in CONFTEST_READS_THE_SOURCE.items():
        write(root, rel, text)
    tests = ["tests/test_mode.py"]
    warm = Warm(root, tests)
    started.append(warm)
    write(root, "mode/__init__.py", "def mode():\n    return 'b'\n")        # the mutation, after the warm-up
    code, seen = _cold(root, tmp_path / "cold", tests)
    assert code == 1
    out = tmp_path / "warm"
    out.mkdir()
    answer = warm.run(_args(out, tests), out)
    assert (answer["exit"], _seen(out)) == (code, seen), (answer, (out / "stdout").read_text())


def test_a_mutation_run_makes_each_session_once_in_the_warm_process(tmp_path: Path, monkeypatch) -> None:
    # pytest's configure runs where a session is made: with prepared sessions, only in the warm
    # process (its warm-up's collection, the baseline's session, the mutation runs' session); a run
    # that cannot use one (a variable read while it was made that differs per run, say) configures
    # in its own fork, and every mutation would show a new process here.
    from mutate_helpers import require_git

    require_git()
    # With every plugin installed here loaded (Hypothesis's and xdist's too), as in a user's venv.
    monkeypatch.delenv("PYTEST_ADDOPTS")
    log = tmp_path / "configure.log"
    monkeypatch.setenv("RF_CONFIGURE_LOG", str(log))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    root = tmp_path / "repo"
    write(root, "calc/__init__.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/conftest.py", "import os\n\n\ndef pytest_configure(config):\n"
                                     "    with open(os.environ['RF_CONFIGURE_LOG'], 'a') as f:\n"
                                     "        f.write(f'{os.getpid()} '\n"
                                     "                f'{config.pluginmanager.has_plugin(\"hypothesispytest\")}\\n')\n")
    write(root, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    write(root, "gates/add.yaml", "gate: add\ndriver:\n  type: pytest-warm\n  run: [tests/test_add.py]\n"
                                  "  preload: [calc]\n")
    write(root, "mutations/m.yaml", "".join(
        f"- mutation: m{i}\n  file: calc/__init__.py\n  anchor: 'return a + b'\n  replace: '{r}'\n"
        f"  expect: {{red: [add]}}\n" for i, r in enumerate(("return a - b", "return a * b", "return b",
                                                              "return a"))))
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"]):
        subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)
    proc = mutate(root, "-n", "1", "--json", "--no-cache")
    assert [i["verdict"] for i in json.loads(proc.stdout)["items"]] == ["KILLED"] * 4, proc.stderr[-2000:]
    seen = [line.split() for line in log.read_text().splitlines()]
    pids = [pid for pid, _ in seen]
    # (the warm-up collects again in a fork of it, the second line: a collection that uses cases
    # up shows there)
    # (and the gate's cold baseline, a fresh pytest of its own: redfirst.mutations.warmth)
    warm = pids[0]
    assert len(set(pids)) == 3 and pids[1] != warm and pids.count(warm) == len(pids) - 2 and len(pids) <= 5, pids
    assert {loaded for _, loaded in seen} == {"True"}, "Hypothesis's plugin was not loaded in the warm process"


@pytest.mark.parametrize("plugin, how", [
    # Its configure keeps per-run state where the session is made: each fork runs pytest itself.
    # (Not the clock: a warm-up that reads it runs every gate cold, tests/mutations/test_warm_clock.py.)
    ("import os\n\n\ndef pytest_configure(config):\n    config.rf_started = os.getpid()\n", "warm"),
    # Fixtures and test-time hooks only: they run in the fork anyway.
    ("import pytest\n\n\n@pytest.fixture\ndef rf_value():\n    return 1\n\n\n"
     "def pytest_runtest_setup(item):\n    pass\n", "prepared"),
])
def test_a_third_party_plugin_with_hooks_run_while_the_session_is_made_runs_pytest_itself(
        warm_project, tmp_path: Path, plugin: str, how: str) -> None:
    root, started = warm_project
    write(root, "rf_third_party.py", plugin)
    write(root, "tests/test_a.py", "def test_a():\n    assert 1\n")
    warm = Warm(root, ["tests/test_a.py"], {"PYTEST_PLUGINS": "rf_third_party", "PYTHONPATH": str(root)})
    started.append(warm)
    out = tmp_path / "o"
    out.mkdir()
    answer = warm.run(_args(out, ["tests/test_a.py"]), out)
    assert (answer.get("how"), answer["exit"]) == (how, 0), (out / "stdout").read_text()


@pytest.mark.parametrize("read", ["mode.mode.__defaults__[0]",
                                  "inspect.signature(mode.mode).parameters['x'].default"])
def test_a_session_whose_making_read_a_mutated_module_is_not_reused_under_the_mutation(
        warm_project, tmp_path: Path, read: str) -> None:
    # The conftest's configure reads a value of module `mode` (a function's default) while the warm
    # process makes the mutation runs' session, without calling anything of it: a fork that patched
    # mode's default in place and reused that session would keep 'a' (a false SURVIVED). Only a
    # session whose making ran no project code that reaches the mutated module may be reused.
    root, started = warm_project
    write(root, "mode/__init__.py", "def mode(x='a'):\n    return x\n")
    write(root, "tests/conftest.py", "import inspect\nimport os\n\nimport mode\n\n\ndef pytest_configure(config):\n"
                                     "    if config.getoption('tbstyle') == 'short':\n"
                                     f"        os.environ['RF_MODE'] = {read}\n")
    write(root, "tests/test_mode.py", CONFTEST_READS_THE_SOURCE["tests/test_mode.py"])
    tests = ["tests/test_mode.py"]
    warm = Warm(root, tests)
    started.append(warm)
    write(root, "mode/__init__.py", "def mode(x='b'):\n    return x\n")        # the mutation, after the warm-up
    code, seen = _cold(root, tmp_path / "cold", tests)
    assert code == 1
    for n in (1, 2):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, tests), out)
        assert (answer["exit"], _seen(out)) == (code, seen), (answer, (out / "stdout").read_text())


# -- standbys (standby.py): the next run's fork, collected before that run is asked for ------------

def _normalised(text: str) -> str:
    return re.sub(r" in [0-9.]+s", " in Ts", text)


def test_a_collection_that_runs_the_project_s_code_gets_no_standby_and_prints_as_pytest(
        warm_project, tmp_path: Path) -> None:
    # A conftest's collection hook is the project's code: run ahead it could act, read the clock or
    # the run's own cache and arguments before its run and while another one goes on (helper-18).
    root, started = warm_project
    write(root, "tests/conftest.py", "import sys\n\n\ndef pytest_collection_modifyitems(items):\n"
                                     "    print('printed while collecting')\n"
                                     "    print('on stderr while collecting', file=sys.stderr)\n")
    write(root, "tests/test_a.py", "def test_one():\n    print('captured')\n    assert 0\n")
    tests = ["tests/test_a.py"]
    code, seen = _cold(root, tmp_path / "cold", tests)
    cold = tmp_path / "cold"
    warm = Warm(root, tests)
    started.append(warm)
    for n in (1, 2, 3):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, tests), out)
        assert (answer.get("how"), answer["exit"], _seen(out)) == ("prepared", code, seen)
        for name in ("stdout", "stderr"):
            assert _normalised((out / name).read_text()) == _normalised((cold / name).read_text()), name


MODE_IN_COLLECTION = {
    "mode/__init__.py": "def mode():\n    return 'a'\n",
    # Under the driver's options only (-x), so the warm-up's own collection never calls mode().
    # (mode imported in the hook: the session's making reaches nothing of it, so the session is reused)
    "tests/conftest.py": "def pytest_collection_modifyitems(config, items):\n"
                         "    import mode\n\n"
                         "    if config.getoption('maxfail') == 1 and mode.mode() != 'a':\n"
                         "        items[:] = []\n",
    "tests/test_a.py": "def test_one():\n    assert 1\n",
}


def test_a_standby_whose_collection_reached_a_mutated_module_does_not_run_it(warm_project, tmp_path: Path) -> None:
    # The collection calls mode() (a conftest's hook): a standby collected before the mutation
    # came keeps test_one where pytest, collecting under the mutation, deselects it (exit 5).
    root, started = warm_project
    for rel, text in MODE_IN_COLLECTION.items():
        write(root, rel, text)
    tests = ["tests/test_a.py"]
    warm = Warm(root, tests)
    started.append(warm)
    for n in (1, 2, 3):     # the collection runs the project's code: no standby serves a run
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, tests), out)
        assert (answer.get("how"), answer["exit"]) == ("prepared", 0)
    write(root, "mode/__init__.py", "def mode():\n    return 'b'\n")      # the mutation
    code, seen = _cold(root, tmp_path / "cold", tests)
    assert code == 5
    out = tmp_path / "mutated"
    out.mkdir()
    answer = warm.run(_args(out, tests), out)
    assert answer.get("how") != "standby" and (answer["exit"], _seen(out)) == (code, seen), (answer, (out / "stdout").read_text())


def test_a_standby_whose_collection_read_a_variable_of_its_own_run_is_not_used(warm_project, tmp_path: Path) -> None:
    # GATES_EVIDENCE names each run's own folder: a standby collected under the last run's value.
    root, started = warm_project
    write(root, "tests/conftest.py", "import os\n\n\ndef pytest_collection_modifyitems(items):\n"
                                     "    os.environ.get('GATES_EVIDENCE')\n")
    write(root, "tests/test_a.py", "def test_one():\n    assert 1\n")
    warm = Warm(root, ["tests/test_a.py"])
    started.append(warm)
    for n in (1, 2):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, ["tests/test_a.py"]), out)
        assert (answer.get("how"), answer["exit"]) == ("prepared", 0)


@pytest.mark.parametrize("layout", ["tests only", "a gates/ folder of gate files"])
def test_a_collection_with_a_side_effect_runs_once_per_run_as_under_pytest(warm_project, tmp_path: Path,
                                                                           layout: str) -> None:
    # helper-18 F4: a standby that collects ahead runs the hook's side effect one time more (the standby
    # left waiting), and while the run before goes on. With a gates/ folder (every redfirst project
    # has one) and redfirst installed editable, `gates` was that folder, a namespace package with no
    # __file__: redfirst's "own code" became the folder above the run's, so the project's hook passed.
    root, started = warm_project
    if layout != "tests only":
        write(root, "gates/g.yaml", "gate: g\ndriver: {type: pytest-warm, run: [tests/test_a.py]}\n")
    log = tmp_path / "collections.log"
    write(root, "tests/conftest.py", "def pytest_collection_finish(session):\n"
                                     f"    with open({str(log)!r}, 'a') as f:\n        f.write('x')\n")
    assert _collections_in_three_runs(root, started, tmp_path, log, {}) == "xxx"


@pytest.mark.parametrize("layout", ["tests only", "a gates/ folder of gate files"])
def test_a_collection_of_pytest_s_own_code_only_is_served_by_standbys_that_patch(
        warm_project, tmp_path: Path, layout: str) -> None:
    # What benchmark_1k's gates are: plain test functions, a fixture-only conftest. The runs served by a
    # standby take the mutation (patched after the collection) as a fork does. With a gates/ folder,
    # `gates` was once that folder (see the side-effect test): redfirst's own code read as the project's.
    root, started = warm_project
    if layout != "tests only":
        write(root, "gates/g.yaml", "gate: g\ndriver: {type: pytest-warm, run: [tests/test_calc.py]}\n")
    write(root, "calc.py", "def add(a, b):\n    return a + b\n")
    write(root, "tests/conftest.py", "import pytest\n\n\n@pytest.fixture(autouse=True)\ndef pause():\n    yield\n")
    write(root, "tests/test_calc.py", "import calc\n\n\ndef test_add():\n    assert calc.add(2, 2) == 4\n")
    tests = ["tests/test_calc.py"]
    warm = Warm(root, tests, {"PYTHONPATH": str(root)})
    started.append(warm)
    for n, (body, code) in enumerate((("a + b", 0), ("a - b", 1), ("a * b", 0), ("b", 1)), 1):
        write(root, "calc.py", f"def add(a, b):\n    return {body}\n")
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, tests), out)
        assert (answer.get("how"), answer["exit"]) == ("prepared" if n <= 2 else "standby", code), \
            (out / "stdout").read_text()


@pytest.mark.parametrize("how", ["a conftest's hook imported from a module outside the root",
                                 "a plugin whose hook pytest calls while it collects"])
def test_a_collection_running_code_from_outside_the_root_runs_once_per_run(
        warm_project, tmp_path: Path, how: str) -> None:
    # helper-19 D and F: the hook's code lies outside the project's folder (an installed package), or
    # is a hook name no list of collection hooks held (pytest_report_collectionfinish).
    root, started = warm_project
    outside = tmp_path / "outside"
    log = tmp_path / "collections.log"
    body = f"    with open({str(log)!r}, 'a') as f:\n        f.write('x')\n"
    if how.startswith("a conftest"):
        write(outside, "teamhooks.py", f"def pytest_collection_finish(session):\n{body}")
        write(root, "tests/conftest.py", "from teamhooks import pytest_collection_finish  # noqa: F401\n")
        env = {"PYTHONPATH": str(outside)}
    else:
        write(outside, "rf_freshdir.py", f"def pytest_report_collectionfinish(config, start_path, items):\n{body}"
                                         "    return []\n")
        env = {"PYTHONPATH": str(outside), "PYTEST_PLUGINS": "rf_freshdir"}
    assert _collections_in_three_runs(root, started, tmp_path, log, env) == "xxx"


def _collections_in_three_runs(root: Path, started: list[Warm], tmp_path: Path, log: Path,
                               env: dict[str, str]) -> str:
    """What a collection hook appended to `log` over three passing runs of one test file through a
    warm process (its warm-up's own collection aside): one mark per collection. A second test file
    is collected at the warm-up too, so the warm process probes both files' collection at once
    (server.Server.probe_union)."""
    write(root, "tests/test_a.py", "def test_one():\n    assert 1\n")
    write(root, "tests/test_b.py", "def test_two():\n    assert 1\n")
    warm = Warm(root, ["tests/test_a.py", "tests/test_b.py"], env)
    started.append(warm)
    warm_up = log.read_text() if log.exists() else ""
    for n in (1, 2, 3):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        assert warm.run(_args(out, ["tests/test_a.py"]), out, ["tests/test_a.py"])["exit"] == 0
        time.sleep(0.3)     # a prober or standby made during this run has collected by now
    return log.read_text()[len(warm_up):]


def test_the_run_the_caller_names_next_is_collected_ahead_even_on_its_first_run(warm_project, tmp_path: Path) -> None:
    # A baseline runs each gate once, each a different test file: a standby guessed to be the run
    # just asked for never served one. The runner names the next run (GateRequest.then), and one
    # collection of all three files, stopped before any project code (none here), told the warm
    # process that each file's collection is pytest's alone before the file's own first run.
    root, started = warm_project
    files = {"a": "def test_a():\n    assert 1\n", "b": "def test_b():\n    assert 0\n",
             "c": "import pytest\n\n\n@pytest.mark.parametrize('n', [1, 2])\ndef test_c(n):\n    assert n < 2\n"}
    for name, text in files.items():
        write(root, f"tests/test_{name}.py", text)
    tests = [f"tests/test_{name}.py" for name in files]
    warm = Warm(root, tests)
    started.append(warm)
    order = ["a", "b", "c", "a", "c", "b", "a"]
    hows = []
    for n, (name, then) in enumerate(zip(order, [*order[1:], "a"], strict=True)):
        path = [f"tests/test_{name}.py"]
        code, seen = _cold(root, tmp_path / f"cold{n}", path)
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, path), out, [f"tests/test_{then}.py"])
        hows.append(answer.get("how"))
        assert (answer["exit"], _seen(out)) == (code, seen), (name, (out / "stdout").read_text())
        time.sleep(0.3)     # the prober's collection (once) and the standby's are made by now
    # The first two runs come before the prober's word; c's first run (the third) is served.
    assert hows[2:] == ["standby"] * 5, hows


@pytest.mark.parametrize("seeding", ["", "random.seed(1234)\n", "random.setstate(random.Random(1234).getstate())\n"])
def test_the_random_module_draws_in_each_run_as_a_cold_run_would(warm_project, tmp_path: Path, seeding: str) -> None:
    # Python reseeds `random` in every forked child, as a fresh interpreter seeds itself. The
    # warm process handed each fork its own state back, for a seed a conftest set (the mutate
    # differential test_a_seed_a_conftest_sets_holds_in_each_run), and so also where nothing set
    # one: every run of one warm process drew the same numbers, where cold runs each draw their
    # own (benchmark_1k's gauss-jittered sleep: one worker slept the same time in every run).
    root, started = warm_project
    write(root, "tests/conftest.py", f"import random\n\n{seeding}")
    # (and the run sees `random` as a cold run does: no watch of the warm process's on it)
    write(root, "tests/test_r.py", "import os\nimport random\n\n\ndef test_r():\n"
                                   "    assert random.getstate.__self__ is random._inst\n"
                                   "    assert 'getstate' not in vars(random._inst)\n"
                                   "    with open(os.environ['DRAWS'], 'a') as f:\n"
                                   "        f.write(f'{random.random()!r}\\n')\n")
    write(root, "tests/test_s.py", "def test_s():\n    pass\n")
    draws = tmp_path / "draws"
    warm = Warm(root, ["tests/test_r.py", "tests/test_s.py"], env={"DRAWS": str(draws)})
    started.append(warm)
    hows = []
    # the next run guessed: this one (served by a standby), then the other file (this one forked)
    for n, then in enumerate([None, None, "tests/test_s.py", None, None]):
        out = tmp_path / f"warm{n}"
        out.mkdir()
        answer = warm.run(_args(out, ["tests/test_r.py"]), out, [then] if then else None)
        assert answer["exit"] == 0, (out / "stdout").read_text()
        hows.append(answer.get("how"))
        time.sleep(0.3)     # the standby has collected by now
    assert "standby" in hows and {h for h in hows if h != "standby"}, hows     # both ways a fork is made
    drawn = draws.read_text().split()
    assert len(drawn) == 5, drawn
    if seeding:     # as each cold run draws: the state the conftest set
        assert set(drawn) == {repr(random.Random(1234).random())}, (drawn, hows)
    else:           # each its own
        assert len(set(drawn)) == 5, (drawn, hows)


SECOND_COLLECTIONS = {
    # what a collection hook does on its second call only (the warm-up collects again in a fork of
    # the warm process, as each run's fork will), and what the warm process says: a fork that
    # would write under the root runs every gate cold
    "the same as the first": ("_both()", ""),
    "a write under the root": ("open(os.path.join(os.path.dirname(__file__), 'second.txt'), 'w').close()",
                               "wrote "),
}


@pytest.mark.parametrize("case", sorted(SECOND_COLLECTIONS))
def test_a_warm_up_whose_second_collection_is_no_repeat_runs_every_gate_cold(warm_project, case: str) -> None:
    root, _ = warm_project
    second, said = SECOND_COLLECTIONS[case]
    # (a conftest beside no __init__.py: pytest imports it again in each session, so it counts
    # its calls in another module)
    write(root, "tests/calls.py", "CALLS = []\n")
    write(root, "tests/conftest.py", "import os\n\nfrom calls import CALLS\n\n\ndef _both():\n    return 1\n\n\n"
                                     "def pytest_collection_modifyitems(items):\n    CALLS.append(1)\n    _both()\n"
                                     f"    if len(CALLS) == 2:\n        {second}\n")
    write(root, "tests/test_a.py", "def test_a():\n    assert 1\n")
    sock = Path(tempfile.mkdtemp(prefix="rf-warm-test-", dir=root.parent)) / "s"
    proc = subprocess.Popen([sys.executable, "-m", "redfirst.gates.drivers.pytest_warm", "--serve", str(sock), "--root",
                             str(root), "--preload", "", "--", "tests/test_a.py"], cwd=root, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, env=_env())
    try:
        assert proc.stdout is not None
        ready = proc.stdout.readline().decode().strip()
    finally:
        proc.kill()
        proc.wait()
    if said:
        assert ready.startswith("ready cold: a second collection of tests/test_a.py") and said in ready, ready
    else:
        assert ready == "ready", ready
