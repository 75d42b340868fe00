"""pytest-warm is a cold pytest run, or it is not used (redfirst.mutations.warmth): under `mutate`
every gate of driver `pytest-warm` runs its baseline warm and cold, and where the two differ in
any case, outcome or exit status the gate runs cold for the whole run, saying why. Each project
here has a test whose outcome depends on whether it runs in the process that imported it (what a
fork of a warm process does not share with a cold run): the mutation is then decided as the cold
`pytest` gate decides it, never on a warm baseline that a cold mutated run is compared against."""

from __future__ import annotations

import pytest
from mutate_helpers import differential

CALC = '''
SCALE = 1


def add(a, b):
    return (a + b) * SCALE
'''

# The process that imported the test module: a cold run's own, a warm run's parent.
TEST = '''
import os

from calc import add

IMPORTED_BY = os.getpid()


def test_add():
    assert add(1, 2) == 3


def test_where_it_runs():
    assert (os.getpid() {op} IMPORTED_BY)
'''


def test_a_warm_baseline_that_differs_from_the_cold_one_runs_the_gate_cold(tmp_path, monkeypatch):
    # warm RED (the fork is not the importer), cold GREEN: the gate runs cold, and the mutation is
    # decided as under `pytest` (KILLED), not left ERROR on a red warm baseline
    said: list[str] = []
    got = differential(tmp_path, monkeypatch, {"calc.py": CALC, "tests/test_calc.py": TEST.format(op="==")},
                       "tests", {"minus": ("calc.py", "(a + b)", "(a - b)")}, said=said)
    assert got == {"minus": ("KILLED", "KILLED")}, said[0]
    assert "g_warm runs cold" in said[0], said[0]
    assert "tests/test_calc.py::test_where_it_runs" in said[0], said[0]


@pytest.mark.parametrize("anchor, replace", [("SCALE = 1", "SCALE = 1 * 1"), ("(a + b)", "(b + a)")])
def test_an_equivalent_mutation_is_never_killed_by_a_cold_run_against_a_warm_baseline(tmp_path, monkeypatch,
                                                                                        anchor, replace):
    # warm GREEN, cold RED: a mutation of code that ran at import is run in a fresh interpreter
    # (RED there whatever the mutation); against the warm baseline an equivalent mutation was
    # KILLED and proven. The cold baseline is RED: the mutation is ERROR, as under `pytest`.
    said: list[str] = []
    got = differential(tmp_path, monkeypatch, {"calc.py": CALC, "tests/test_calc.py": TEST.format(op="!=")},
                       "tests", {"same": ("calc.py", anchor, replace)}, said=said)
    assert got == {"same": ("ERROR", "ERROR")}, said[0]
    assert "g_warm runs cold" in said[0], said[0]
