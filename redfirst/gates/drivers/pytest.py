"""Driver `pytest`: `run:` lists test paths or node ids; counts come from JUnit XML.

Runs in a child `python -m pytest` (the interpreter redfirst runs under), with the
evidence plugin loaded, so tests can record counters and tensors through the
`gates_evidence` fixture.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from redfirst import tempdirs
from redfirst.gates.drivers import Driver, Invocation
from redfirst.gates.model import Gate
from redfirst.verdict import Cause, Outcome, error

JUNIT_NAME = "junit.xml"


_caches: list[str] = []


def private_cache() -> str:
    """An empty pytest cache folder for one run (its Invocation's scratch: removed once the run
    is graded), under one removed when this process ends."""
    import atexit
    import shutil
    import tempfile

    if not _caches:
        _caches.append(str(tempdirs.make("redfirst-pytest-cache-")))
        atexit.register(shutil.rmtree, _caches[0], True)
    return tempfile.mkdtemp(dir=_caches[0])


def pytest_argv(gate: Gate, junit: Path, brief: bool = False, cache: str | None = None) -> tuple[str, ...]:
    targets = gate.driver.words()
    # The entry point loads the evidence fixture; name it only where autoloading is off.
    plugin = ("-p", "redfirst.gates.pytest_plugin") if os.environ.get("PYTEST_DISABLE_PLUGIN_AUTOLOAD") else ()
    # A failure's long report (source, locals' repr) is a third of a short run's cost; a
    # mutated run, where failing is the point, reports each failure in one line, and
    # keeps pytest's cache (the `cache` fixture, --lf/--ff) in a folder of its own: the
    # user's last-failed list must not name a mutant's failures (in-place mode).
    # short: each frame named, so a red raised in a set-up reads as one (mutations.harness)
    tb = ("--tb=short", "-o", f"cache_dir={cache or private_cache()}") if brief else ()
    # Under a mutation a first failure already makes the gate RED: stop there (-x), unless
    # the gate limits failures itself or declares failures (then a count decides, not one).
    limited = any(t in ("-x", "--exitfirst") or t.startswith("--maxfail") for t in targets)
    clean = gate.asserts.exit == 0 and gate.asserts.failed == 0
    stop = ("-x",) if brief and clean and not limited else ()
    return (sys.executable, "-m", "pytest", *plugin, f"--junitxml={junit}", "-o", "junit_family=xunit2", "-q",
            "-rfE", *tb, *stop, *targets)


class PytestDriver(Driver):
    name = "pytest"
    default_format = "junit"
    option_keys: frozenset[str] = frozenset()
    counts_format = "junit"
    runner = "pytest"

    def invocation(self, gate: Gate, root: Path, evidence_dir: Path, brief: bool = False) -> Invocation:
        junit = evidence_dir.parent / JUNIT_NAME
        cache = private_cache() if brief else None
        return Invocation(argv=pytest_argv(gate, junit, brief, cache), cwd=root / gate.driver.cwd, junit=junit,
                          scratch=(Path(cache),) if cache else ())

    def grade_observations(self, gate: Gate, observations: Sequence[dict[str, Any]]) -> Outcome | None:
        return None

    def exit_problem(self, gate: Gate, code: int | None, stderr: str) -> Outcome | None:
        return not_installed(gate, code, stderr)


def not_installed(gate: Gate, code: int | None, stderr: str) -> Outcome | None:
    """ERROR when `python -m pytest` failed because pytest is not installed beside redfirst."""
    if code != gate.asserts.exit and "No module named pytest" in stderr:
        return error(Cause.CONFIG, "the pytest driver could not start: pytest is not installed beside "
                                   "redfirst (pip install pytest)")
    return None


DRIVER = PytestDriver()
