"""Adversarial round 2 of issue 33 on warmth: a mutation's verdict under `pytest-warm` is the one
under `pytest` (edits the warm patcher might apply in place: a method's `super()` cell dropped, a
keyword-only default, a function made a generator, a nested function's body, a fixture's body in
a library module a conftest imports it from). Found honest; kept as the differential's guard."""

from __future__ import annotations

from pathlib import Path

import pytest
from mutate_helpers import differential

CALC = '''\
class Base:
    def total(self):
        return 5


class Child(Base):
    def total(self):
        return super().total() + 1


def scale(x, *, by=2):
    return x * by


def items():
    return [1, 2]


def outer(x):
    def inner(y):
        return y + 1
    return inner(x)
'''

TESTS = '''\
from calc import Child, items, outer, scale


def test_child():
    assert Child().total() == 6


def test_scale():
    assert scale(3) == 6


def test_items():
    assert list(items()) == [1, 2]


def test_outer():
    assert outer(1) == 2
'''


FIXTURES = '''\
import pytest


@pytest.fixture
def total():
    return 5


@pytest.fixture(params=[1])
def one(request):
    return request.param * 1
'''


def test_in_place_edits_decide_as_cold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """One `mutate` run of both gates over every edit (each a kill cold)."""
    got = differential(tmp_path, monkeypatch, {
        "calc.py": CALC, "tests/test_calc.py": TESTS, "calc_testing.py": FIXTURES,
        "tests/conftest.py": "from calc_testing import one, total  # noqa: F401\n",
        "tests/test_fix.py": "def test_total(total):\n    assert total == 5\n\n\ndef test_one(one):\n    assert one == 1\n",
        "pytest.ini": "[pytest]\npythonpath = .\n"}, "tests", {
        "no-super": ("calc.py", "return super().total() + 1", "return 7"),
        "kwdefault": ("calc.py", "def scale(x, *, by=2):", "def scale(x, *, by=3):"),
        "generator": ("calc.py", "return [1, 2]", "yield 1"),
        "nested": ("calc.py", "return y + 1", "return y + 2"),
        "fixture": ("calc_testing.py", "return 5", "return 6"),
        "param": ("calc_testing.py", "return request.param * 1", "return request.param * 2"),
    })
    assert all(cold == warm == "KILLED" for cold, warm in got.values()), got
