"""pytest_warm.patcher: what pytest's collection does to a module's functions through the standard
library (inspect.unwrap, as pytest >= 9.1 does for every module-level name) is not a
call that may have kept the old body. Real pytest and real inspect; modules imported
from tmp_path."""

from __future__ import annotations

import importlib
import sys
import types
from pathlib import Path

import pytest
from _pytest.compat import get_real_func

from redfirst.gates.drivers.pytest_warm.patcher import Warmup, patch


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    created: list[str] = []

    def make(name: str, source: str) -> Path:
        (tmp_path / f"{name}.py").write_text(source)
        created.append(name)
        return tmp_path / f"{name}.py"

    yield make
    for name in created:
        sys.modules.pop(name, None)


def warm_import(name: str, file: Path) -> tuple[Warmup, types.ModuleType]:
    """The module imported under a warm-up's watch and indexed, as a warm process imports it."""
    warmup = Warmup()
    warmup.start()
    try:
        m = importlib.import_module(name)
    finally:
        warmup.stop()
    warmup.index([(name, str(file))])
    return warmup, m


def test_a_function_the_collector_unwraps_through_inspect_is_still_patched(module):
    file = module("wpc_calc", "def add(a, b):\n    return a + b\n")
    warmup = Warmup()
    warmup.start()
    try:
        m = importlib.import_module("wpc_calc")
        # pytest's own helper: inspect.unwrap calls its _is_wrapper closure with `add` as a
        # local, two frames below pytest.
        assert get_real_func(m.add) is m.add
    finally:
        warmup.stop()
    warmup.index([("wpc_calc", str(file))])
    file.write_text(file.read_text().replace("return a + b", "return a - b"))
    assert patch(warmup, m)
    assert m.add(5, 3) == 2


def test_a_function_the_project_hands_to_the_standard_library_at_import_is_not_patched(module):
    # The same inspect.unwrap, called by the project's own import-time code: what it made
    # of the function is the project's, and may hold the old body.
    file = module("wpc_user", "import inspect\n\n\ndef add(a, b):\n    return a + b\n\n\ninspect.unwrap(add)\n")
    warmup, m = warm_import("wpc_user", file)
    file.write_text(file.read_text().replace("return a + b", "return a - b"))
    assert not patch(warmup, m)


def test_pytest_s_assertion_rewriting_runs_outside_the_profile_hook_and_is_put_back(monkeypatch):
    # Rewriting a test module's asserts runs no project code, one call per syntax-tree node:
    # under the hook it was most of a warm-up's collection. Calls around it are still noted.
    import _pytest.assertion.rewrite as rewrite

    hooks: list[object] = []

    def probe(*args: object) -> None:
        hooks.append(sys.getprofile())

    monkeypatch.setattr(rewrite, "rewrite_asserts", probe)
    warmup = Warmup()
    warmup.start()
    try:
        assert rewrite.rewrite_asserts is not probe
        rewrite.rewrite_asserts(None, b"", "x.py", None)     # as pytest's _rewrite_test calls it
        assert sys.getprofile() is not None                   # back on after it
    finally:
        warmup.stop()
    assert hooks == [None]
    assert rewrite.rewrite_asserts is probe


def test_what_installed_plugins_import_as_a_session_ends_is_imported_before_the_warm_up_notes(tmp_path: Path):
    # A plugin outside the root that imports a module at its terminal summary (Hypothesis's
    # does): the warm process imports it before noting what runs, and the root's conftest is
    # still imported while noting.
    import json
    import os
    import subprocess

    plugins = tmp_path / "site"
    plugins.mkdir()
    (plugins / "rf_lazy_plugin.py").write_text("def pytest_terminal_summary(terminalreporter):\n"
                                              "    import rf_lazy_mod  # noqa: F401\n")
    (plugins / "rf_lazy_mod.py").write_text("VALUE = 1\n")
    root = tmp_path / "proj"
    root.mkdir()
    (root / "conftest.py").write_text("import sys\nNOTED = sys.getprofile() is not None\n")
    (root / "test_a.py").write_text("def test_a():\n    assert True\n")
    script = ("import json, sys\nfrom pathlib import Path\nfrom redfirst.gates.drivers.pytest_warm.server import Server\n"
              "s = Server('unused', Path('.').resolve())\ns.warm_up([], ['test_a.py'])\n"
              "print(json.dumps({'lazy_before': 'rf_lazy_mod' in s.imported.warmup.before,"
              " 'conftest_noted': sys.modules['conftest'].NOTED}))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugins), os.environ.get("PYTHONPATH", "")]),
           "PYTEST_ADDOPTS": "-p rf_lazy_plugin"}
    proc = subprocess.run([sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout.strip().splitlines()[-1]) == {"lazy_before": True, "conftest_noted": True}


def test_a_patch_worked_out_before_the_fork_is_used_only_for_the_bytes_it_was_worked_out_for(module):
    # The warm process works out the patch for the request it forks next; a fork that finds
    # other bytes in the file works its own out (never runs the code of bytes no longer there).
    file = module("wpc_plan", "def add(a, b):\n    return a + b\n")
    warmup, m = warm_import("wpc_plan", file)
    file.write_text("def add(a, b):\n    return a - b\n")
    warmup.prepare([str(file)])
    assert str(file) in warmup.planned
    assert patch(warmup, m) and m.add(5, 3) == 2
    file.write_text("def add(a, b):\n    return a * b\n")
    assert patch(warmup, m) and m.add(5, 3) == 15


def test_a_patch_a_standby_works_out_ahead_is_used_only_for_the_bytes_it_was_guessed_for(module):
    # A standby works out the patch for the bytes the engine guessed its run would find
    # (Warmup.predict); the run takes it where the file holds them, and works out its own where
    # the guess was wrong (another mutation came, or a test rewrote the file).
    file = module("wpc_guess", "def add(a, b):\n    return a + b\n")
    warmup, m = warm_import("wpc_guess", file)
    guessed = b"def add(a, b):\n    return a * b\n"
    warmup.predict({str(file): guessed})
    file.write_bytes(guessed)
    warmup.prepare([str(file)])
    assert warmup.planned[str(file)] is warmup.predicted[str(file)]     # taken, not worked out again
    file.write_text("def add(a, b):\n    return a - b\n")
    warmup.prepare([str(file)])
    assert warmup.planned[str(file)][0] != guessed
    assert patch(warmup, m) and m.add(5, 3) == 2
