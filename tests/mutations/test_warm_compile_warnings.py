"""A warm fork compiles a mutated module as a cold run's import does, warnings included: a mutation whose code
warns at compile time (an invalid escape in a string) under `filterwarnings = error` is an error at collection
cold, so a warm run must not swap the compiled code in beside pytest's filters and report the tests' outcome."""

from __future__ import annotations

from mutate_helpers import differential


def test_a_mutation_that_warns_at_compile_time_decides_warm_as_it_does_cold(tmp_path, monkeypatch):
    calc = '''
        def add(a, b):
            return a + b
    '''
    test = '''
        from calc import add


        def test_add():
            assert add(2, 2) == 4
    '''
    files = {"calc/__init__.py": calc, "tests/test_add.py": test,
             "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n"}
    found = differential(tmp_path, monkeypatch, files, "tests/test_add.py",
                         {"escape": ("calc/__init__.py", "return a + b", 'return a + b + len("\\c") - 2')})
    cold, warm = found["escape"]
    assert warm == cold == "DISCARDED", found     # an error at collection is no kill, warm or cold
