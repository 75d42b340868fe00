"""pytest_warm.patcher: what pytest's collection does to a module's functions through the standard
library (inspect.unwrap, as pytest >= 9.1 does for every module-level name) is not a
call that may have kept the old body. Real pytest and real inspect; modules imported
from tmp_path."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest
from _pytest.compat import get_real_func

from gates.drivers.pytest_warm.patcher import Warmup, patch


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
    warmup = Warmup()
    warmup.start()
    try:
        m = importlib.import_module("wpc_user")
    finally:
        warmup.stop()
    warmup.index([("wpc_user", str(file))])
    file.write_text(file.read_text().replace("return a + b", "return a - b"))
    assert not patch(warmup, m)
