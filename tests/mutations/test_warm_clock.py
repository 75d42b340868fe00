"""pytest-warm shares what the root's code read of the clock at import (issue 33 round 5): a test
module or conftest that keeps `time.time()` from its import (a start time, a token's expiry) and
a test that checks its age passes in every cold run (imported just before its tests) and fails
in a warm fork once the warm process is a few seconds old, after the baseline's differential
found warm and cold alike: untested functions' mutants read KILLED warm, SURVIVED cold. Real
git, real pytest through the installed `mutate` (the differential helper)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.mutations.mutate_helpers import differential

CALC = "def add(a, b):\n    return a + b\n\n\n" + "".join(f"def f{i}(x):\n    return x + {i}\n\n\n" for i in range(6))
AGED = "def test_add():\n    assert add(2, 3) == 5\n\n\ndef test_fresh({arg}):\n    assert {age} < 2.0\n"
FILES = {
    "test-module": {"tests/test_calc.py": "import time\n\nfrom calc import add\n\nT0 = time.time()\n\n\n"
                    + AGED.format(arg="", age="time.time() - T0")},
    "conftest-fixture": {"tests/conftest.py": "import time\n\nimport pytest\n\nT0 = time.monotonic()\n\n\n"
                         "@pytest.fixture\ndef age():\n    return time.monotonic() - T0\n",
                         "tests/test_calc.py": "from calc import add\n\n\n" + AGED.format(arg="age", age="age")},
}


@pytest.mark.parametrize("where", sorted(FILES))
def test_a_clock_read_at_import_runs_the_gate_cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                   where: str) -> None:
    said: list[str] = []
    got = differential(tmp_path, monkeypatch, {"calc/__init__.py": CALC, **FILES[where]}, "tests",
                       {f"m{i}": ("calc/__init__.py", f"x + {i}", f"x - {i}") for i in range(6)}, said=said)
    # f0..f5 are untested: SURVIVED cold; warm must say the same, every time
    assert got == {f"m{i}": ("SURVIVED", "SURVIVED") for i in range(6)}, (got, said)
    assert "read the clock" in said[0], said[0]
