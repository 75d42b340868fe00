"""Driver `pytest-warm` decides as driver `pytest` does: the same mutation, run by a gate of each
driver over the same tests, gets the same outcome (the cold `pytest` run is the reference).
Each project here keeps state a fork of a warm process would share or miss: a folder made at
import, a conftest's folder made at configure, the environment read at import, a working folder
changed at configure, code whose line numbers an edit moves, a module too deep for the patcher.
Found by a differential review (helper-16) of real mutate runs."""

from __future__ import annotations

import json
import textwrap

import pytest
from mutate_helpers import differential
from one_use_cases import EXTRA_FILES, ONE_USE_CASES


def test_a_folder_made_at_import_is_not_shared_by_the_runs(tmp_path, monkeypatch):
    # helper-16 F1: the module makes its output folder at import and never overwrites an output;
    # the baseline's fork wrote there, so every later fork failed: equivalent and untested
    # mutations KILLED
    calc = '''
        import os
        import tempfile

        OUTPUT_DIR = tempfile.mkdtemp(prefix="calc-out-")


        def render(rows):
            return "\\n".join(f"{k}={v}" for k, v in rows)


        def export(name, rows):
            path = os.path.join(OUTPUT_DIR, name + ".txt")
            with open(path, "x") as f:
                f.write(render(rows))
            return path


        def unused(x):
            return x + 1
    '''
    test = '''
        import calc


        def test_export():
            with open(calc.export("report", [("a", 1)])) as f:
                assert f.read() == "a=1"
    '''
    said: list[str] = []
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_e.py": test}, "tests/test_e.py",
                         {"unused": ("calc/__init__.py", "return x + 1", "return x + 2"),
                          "bug": ("calc/__init__.py", 'f"{k}={v}"', 'f"{k}:{v}"')}, said=said)
    assert found == {"unused": ("SURVIVED", "SURVIVED"), "bug": ("KILLED", "KILLED")}, found
    # runs stay right and get slow: the user is told why
    assert "every run starts pytest cold: the warm-up wrote" in said[0] and "calc-out-" in said[0], said[0]


def test_a_folder_a_conftest_makes_at_configure_is_not_shared_by_the_runs(tmp_path, monkeypatch):
    # helper-16 F1 (c2): a disk cache in a folder the conftest makes at configure: made once in the
    # warm process, the first mutation's cached values answered the later ones
    conftest = '''
        import os
        import tempfile


        def pytest_configure(config):
            os.environ["CALC_CACHE"] = tempfile.mkdtemp(prefix="calc-cache-")
    '''
    calc = '''
        import json
        import os


        def square(x):
            path = os.path.join(os.environ["CALC_CACHE"], f"sq-{x}.json")
            if os.path.exists(path):
                with open(path) as f:
                    return json.load(f)
            value = x * x
            with open(path, "w") as f:
                json.dump(value, f)
            return value


        def unused():
            return 0
    '''
    test = '''
        import calc


        def test_square():
            assert calc.square(3) == 9
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/conftest.py": conftest,
                                                 "tests/test_sq.py": test}, "tests/test_sq.py",
                         {"a_plus": ("calc/__init__.py", "value = x * x", "value = x + x"),
                          "b_unused": ("calc/__init__.py", "return 0", "return 1")})
    assert found == {"a_plus": ("KILLED", "KILLED"), "b_unused": ("SURVIVED", "SURVIVED")}, found


def test_an_edit_that_moves_lines_moves_the_code_around_it_too(tmp_path, monkeypatch):
    # helper-16 F2: module-level lambdas kept their old line numbers after a patch that removed
    # lines above them, so inspect.getsource read the wrong line: an untested function's mutations
    # KILLED
    calc = '''
        import inspect


        def clamp(x, lo, hi):
            if x < lo:
                return lo
            return x


        RULES = {
            "positive": lambda x: x > 0,
        }


        def describe(name):
            return inspect.getsource(RULES[name]).strip()
    '''
    test = '''
        import calc


        def test_describe():
            assert calc.describe("positive") == '"positive": lambda x: x > 0,'
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_r.py": test}, "tests/test_r.py",
                         {"drop": ("calc/__init__.py", "    if x < lo:\n        return lo\n", ""),
                          "grow": ("calc/__init__.py", "    return x\n", "    y = x\n    return y\n")})
    assert found == {"drop": ("SURVIVED", "SURVIVED"), "grow": ("SURVIVED", "SURVIVED")}, found


def test_what_a_preloaded_module_reads_of_the_environment_at_import_is_the_runs(tmp_path, monkeypatch):
    # helper-16 F4: a preloaded module decides at import whether it runs under pytest
    # (PYTEST_VERSION, set by pytest for its session); in the warm process it did not, so its
    # checks were off: a mutation of them SURVIVED
    calc = '''
        import os

        CHECKED = "PYTEST_VERSION" in os.environ


        def _check_sorted(xs):
            assert all(a <= b for a, b in zip(xs, xs[1:])), "not sorted"


        def merge(a, b):
            out = sorted(a + b)
            if CHECKED:
                _check_sorted(out)
            return out
    '''
    test = '''
        import calc


        def test_merge():
            assert len(calc.merge([3, 1], [2])) == 3
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_m.py": test}, "tests/test_m.py",
                         {"check": ("calc/__init__.py", "a <= b for", "a > b for")}, warm_extra="  preload: [calc]\n")
    assert found == {"check": ("KILLED", "KILLED")}, found


def test_a_run_variable_read_at_import_is_the_runs_own(tmp_path, monkeypatch):
    # helper-16 F4 (c9): what a module reads at import of the run's own variables is this run's
    calc = '''
        import os

        EVIDENCE = os.environ.get("GATES_EVIDENCE")


        def where():
            return EVIDENCE
    '''
    test = '''
        import os

        import calc


        def test_where():
            assert calc.where() == os.environ["GATES_EVIDENCE"]
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_w.py": test}, "tests/test_w.py",
                         {"none": ("calc/__init__.py", "return EVIDENCE", "return None")})
    assert found == {"none": ("KILLED", "KILLED")}, found


def test_a_working_folder_a_conftest_sets_at_configure_holds_in_the_runs(tmp_path, monkeypatch):
    # helper-16 F6: the prepared session dropped a chdir made in pytest_configure: the warm
    # baseline was RED (its mutations ERROR)
    conftest = '''
        import os


        def pytest_configure(config):
            os.chdir(os.path.dirname(os.path.abspath(__file__)))
    '''
    calc = '''
        import json


        def load(name):
            with open(name) as f:
                return json.load(f)


        def total(xs):
            return sum(xs)
    '''
    test = '''
        import calc


        def test_total():
            assert calc.total(calc.load("data.json")) == 6
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/conftest.py": conftest,
                                                 "tests/data.json": "[1, 2, 3]\n", "tests/test_t.py": test},
                         "tests/test_t.py", {"total": ("calc/__init__.py", "return sum(xs)", "return sum(xs) + 1")})
    assert found == {"total": ("KILLED", "KILLED")}, found


def test_a_module_too_deep_for_the_patcher_is_run_cold_not_an_error(tmp_path, monkeypatch):
    # helper-16 F9: a 320-branch elif chain made the patcher's ast.dump raise RecursionError: every
    # mutation of the file ERROR (pytest internal error)
    body = "".join(f"    {'if' if i == 0 else 'elif'} code == {i}:\n        return 'u{i}'\n" for i in range(320))
    calc = "def add(a, b):\n    return a + b\n\n\ndef unit_name(code):\n" + body + "    return '?'\n"
    test = textwrap.dedent('''
        import calc


        def test_add():
            assert calc.add(2, 3) == 5


        def test_unit():
            assert calc.unit_name(7) == "u7"
    ''')
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_u.py": test}, "tests/test_u.py",
                         {"add": ("calc/__init__.py", "return a + b", "return a - b"),
                          "same": ("calc/__init__.py", "return '?'", "return '!'")})
    assert found == {"add": ("KILLED", "KILLED"), "same": ("SURVIVED", "SURVIVED")}, found


def test_two_test_folders_with_a_helper_module_of_one_name_run_their_own(tmp_path, monkeypatch):
    # helper-16 F3 (c10): each test folder has its own helpers.py (no __init__.py); the warm process
    # that collected both gates' tests gave gate b the first folder's helper, which never calls
    # slow_norm: its mutation SURVIVED (and was cached so)
    calc = '''
        def fast_norm(xs):
            return max(abs(x) for x in xs)


        def slow_norm(xs):
            best = 0
            for x in xs:
                if abs(x) > best:
                    best = abs(x)
            return best
    '''
    helper = '''
        import calc


        def check(xs, want):
            assert calc.{}(xs) == want
    '''
    test = '''
        from helpers import check


        def test_norm():
            check([3, -7, 2], 7)
    '''
    found = differential(tmp_path, monkeypatch, {
        "calc/__init__.py": calc, "tests/a/helpers.py": helper.format("fast_norm"), "tests/a/test_fast.py": test,
        "tests/b/helpers.py": helper.format("slow_norm"), "tests/b/test_slow.py": test,
        "gates/g_a.yaml": "gate: g_a\ndriver:\n  type: pytest-warm\n  run: [tests/a/test_fast.py]\n  timeout: 120\n",
        "mutations/a-fast.yaml": json.dumps({"mutation": "a-fast", "file": "calc/__init__.py", "anchor": "max(abs(x)",
                                             "replace": "max((x)", "expect": {"red": ["g_a"]}})},
        "tests/b/test_slow.py", {"slow": ("calc/__init__.py", "if abs(x) > best:", "if x > best:")})
    assert found == {"slow": ("KILLED", "KILLED")}, found


def test_a_copy_of_the_environment_taken_at_import_is_the_runs(tmp_path, monkeypatch):
    # os.environ.copy() at import: the warm process's environment must not stand for the run's
    calc = '''
        import os

        SEEN = os.environ.copy()


        def where():
            return SEEN.get("GATES_EVIDENCE")
    '''
    test = '''
        import os

        import calc


        def test_where():
            assert calc.where() == os.environ["GATES_EVIDENCE"]
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_w.py": test}, "tests/test_w.py",
                         {"none": ("calc/__init__.py", 'return SEEN.get("GATES_EVIDENCE")', "return None")})
    assert found == {"none": ("KILLED", "KILLED")}, found


def test_a_seed_a_conftest_sets_holds_in_each_run(tmp_path, monkeypatch):
    # helper-17 (c15): Python's random reseeds every forked child, so a conftest's random.seed at
    # configure was lost in the forks: golden values failed the warm baseline (every mutation ERROR)
    conftest = '''
        import random


        def pytest_configure(config):
            random.seed(1234)
    '''
    calc = '''
        import random


        def roll():
            return random.random()
    '''
    test = '''
        import random

        import calc


        def test_roll():
            assert calc.roll() == random.Random(1234).random()
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/conftest.py": conftest,
                                                 "tests/test_r.py": test}, "tests/test_r.py",
                         {"shift": ("calc/__init__.py", "return random.random()", "return random.random() / 2")})
    assert found == {"shift": ("KILLED", "KILLED")}, found


@pytest.mark.parametrize("seeding", ["random.seed(7)", "random._inst.seed(7)", "random.Random.seed(random._inst, 7)",
                                     "random.setstate(random.Random(7).getstate())"])
def test_a_seed_set_at_import_in_any_way_holds_in_each_run(tmp_path, monkeypatch, seeding):
    # helper-22 A/B: forks keep Python's at-fork reseed unless the warm process fixed random's state;
    # a watch on random.seed and random.setstate missed the generator's own method: every fork drew
    # its own numbers, a golden sequence failed the warm baseline (ERROR for every mutation) and a
    # boundary draw read a kill as SURVIVED
    conftest = f'''
        import random

        {seeding}
    '''
    calc = '''
        import random


        def draw(n):
            return [random.randrange(1000) for _ in range(n)]


        def unused(x):
            return x + 1
    '''
    test = '''
        import random

        import calc


        def test_draw():
            seeded = random.Random(7)
            assert calc.draw(3) == [seeded.randrange(1000) for _ in range(3)]
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/conftest.py": conftest,
                                                 "tests/test_r.py": test}, "tests/test_r.py",
                         {"narrow": ("calc/__init__.py", "randrange(1000)", "randrange(500)"),
                          "unused": ("calc/__init__.py", "return x + 1", "return x + 2")})
    assert found == {"narrow": ("KILLED", "KILLED"), "unused": ("SURVIVED", "SURVIVED")}, found


def test_a_database_opened_at_import_through_a_uri_is_not_shared_by_the_runs(tmp_path, monkeypatch):
    # helper-17 (c5): sqlite3.connect("file:...?mode=rwc", uri=True) at import: the write was not
    # seen (the URI read as a path), so every fork shared one store: an untested mutation KILLED
    calc = '''
        import os
        import sqlite3
        import tempfile
        import uuid

        _DB = os.path.join(tempfile.gettempdir(), f"calc-{uuid.uuid4().hex}.db")
        _conn = sqlite3.connect(f"file:{_DB}?mode=rwc", uri=True, isolation_level=None)
        _conn.execute("CREATE TABLE IF NOT EXISTS users (name TEXT UNIQUE)")


        def add_user(name):
            _conn.execute("INSERT INTO users VALUES (?)", (name,))
            return [r[0] for r in _conn.execute("SELECT name FROM users")]


        def unused(x):
            return x + 1
    '''
    test = '''
        import calc


        def test_add():
            assert calc.add_user("v1") == ["v1"]
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/test_u.py": test}, "tests/test_u.py",
                         {"unused": ("calc/__init__.py", "return x + 1", "return x + 2")})
    assert found == {"unused": ("SURVIVED", "SURVIVED")}, found


@pytest.mark.parametrize("case", sorted(ONE_USE_CASES))
def test_cases_from_a_one_use_iterator_are_each_runs_own(tmp_path, monkeypatch, case):
    test, conftest = ONE_USE_CASES[case]
    calc = '''
        def double(x):
            return x * 2
    '''
    files = {"calc/__init__.py": calc, "tests/test_d.py": test, **EXTRA_FILES.get(case, {})}
    if conftest:
        files["tests/conftest.py"] = conftest
    said: list[str] = []
    found = differential(tmp_path, monkeypatch, files, "tests/test_d.py",
                         {"square": ("calc/__init__.py", "return x * 2", "return x * x")}, said=said)
    assert found == {"square": ("KILLED", "KILLED")}, (found, said)
    assert "one-use" in said[0], said     # the runs start cold, and mutate says why


def test_a_collection_that_marks_its_cases_otherwise_the_second_time_runs_each_gate_cold(tmp_path, monkeypatch):
    # helper-22 D: a package conftest (imported once per process) skips a case it collected before;
    # the warm-up's collection made every fork's collection the second one, with the same node ids:
    # every case skipped, the baseline NO_DECISION and every mutation ERROR where a cold run decides
    conftest = '''
        import pytest

        _SEEN = set()


        def pytest_collection_modifyitems(config, items):
            for item in items:
                if item.nodeid in _SEEN:
                    item.add_marker(pytest.mark.skip(reason="collected in this process before"))
                _SEEN.add(item.nodeid)
    '''
    calc = '''
        def double(x):
            return x * 2


        def unused(x):
            return x + 1
    '''
    said: list[str] = []
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/__init__.py": "",
                                                 "tests/conftest.py": conftest,
                                                 "tests/test_d.py": "import calc\n\n\ndef test_double():\n"
                                                                    "    assert calc.double(3) == 6\n"},
                         "tests/test_d.py", {"bug": ("calc/__init__.py", "return x * 2", "return x * 3"),
                                             "unused": ("calc/__init__.py", "return x + 1", "return x + 2")},
                         said=said)
    assert found == {"bug": ("KILLED", "KILLED"), "unused": ("SURVIVED", "SURVIVED")}, (found, said)


@pytest.mark.parametrize("peek", ["random.getstate()", "random._inst.getstate()", "copy.copy(random._inst).getstate()"])
def test_a_state_the_conftest_looked_at_and_put_back_holds_in_each_run(tmp_path, monkeypatch, peek):
    # helper-23 r1: the conftest peeks at the next draw and puts the state back. The state then
    # equals the one at warm-up, read as "never set": each fork drew its own numbers and the peeked
    # value never came (the warm baseline RED, every mutation ERROR, where a cold run decides)
    conftest = f'\n        import copy\n        import random\n\n        _saved = {peek}\n'\
               '        PEEK = random.random()\n        random.setstate(_saved)\n'
    calc = '''
        def double(x):
            return x * 2


        def unused(x):
            return x + 1
    '''
    test = '''
        import random

        import calc
        from tests import conftest


        def test_double_and_stream():
            assert random.random() == conftest.PEEK
            assert calc.double(3) == 6
    '''
    found = differential(tmp_path, monkeypatch, {"calc/__init__.py": calc, "tests/__init__.py": "",
                                                 "tests/conftest.py": conftest, "tests/test_d.py": test},
                         "tests/test_d.py", {"bug": ("calc/__init__.py", "return x * 2", "return x * 3"),
                                             "unused": ("calc/__init__.py", "return x + 1", "return x + 2")})
    assert found == {"bug": ("KILLED", "KILLED"), "unused": ("SURVIVED", "SURVIVED")}, found
