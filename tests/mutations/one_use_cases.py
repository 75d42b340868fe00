"""The one-use sources of cases that test_warm_fidelity runs warm and cold (each a project whose
cases come from something a collection can use up), and the extra files some of them need."""

ONE_USE_CASES = {
    # helper-19 A: the warm process's own collection used up the iterator, so every fork saw an
    # empty parameter set (test[NOTSET], skipped) and the mutation the cases catch SURVIVED
    "zip in a test's parametrize": ('''
        import calc
        import pytest

        XS = [1, 2, 3]
        YS = [2, 4, 6]


        @pytest.mark.parametrize("x,want", zip(XS, YS))
        def test_double(x, want):
            assert calc.double(x) == want


        def test_other():
            assert calc.double(0) == 0
    ''', ""),
    "a generator in a class's pytestmark": ('''
        import calc
        import pytest


        class TestDouble:
            pytestmark = pytest.mark.parametrize("x", (n for n in [1, 2, 3]))

            def test_double(self, x):
                assert calc.double(x) == x + x


        def test_other():
            assert calc.double(0) == 0
    ''', ""),
    "a module iterator a conftest hook parametrizes over": ('''
        import calc

        CASES = iter([(1, 2), (2, 4)])


        def test_double(case):
            x, want = case
            assert calc.double(x) == want


        def test_other():
            assert calc.double(0) == 0
    ''', '''
        def pytest_generate_tests(metafunc):
            if "case" in metafunc.fixturenames:
                metafunc.parametrize("case", metafunc.module.CASES)
    '''),
    # helper-20: sources the first check (marks one class deep, module globals) missed
    "zip in a nested class's and a staticmethod's parametrize": ('''
        import calc
        import pytest


        class TestOuter:
            class TestInner:
                @pytest.mark.parametrize("x,want", zip([1, 2], [2, 4]))
                def test_double(self, x, want):
                    assert calc.double(x) == want


        class TestStatic:
            @staticmethod
            @pytest.mark.parametrize("x,want", zip([3], [6]))
            def test_double(x, want):
                assert calc.double(x) == want


        def test_other():
            assert calc.double(0) == 0
    ''', ""),
    "cases inherited from a helper module's class": ('''
        import calc
        from cases import DoubleCases


        class TestCalc(DoubleCases):
            pass


        def test_other():
            assert calc.double(0) == 0
    ''', ""),
    "an open file, a stream and a class attribute a hook parametrizes over": ('''
        import os

        import calc
        import pytest


        class Once:
            def __init__(self, rows):
                self.rows = (r for r in rows)

            def __iter__(self):
                return self.rows


        @pytest.mark.parametrize("line", open(os.path.join(os.path.dirname(__file__), "cases.txt")))
        def test_file(line):
            x, want = map(int, line.split())
            assert calc.double(x) == want


        @pytest.mark.parametrize("x,want", Once([(1, 2), (2, 4)]))
        def test_once(x, want):
            assert calc.double(x) == want


        class TestCls:
            cases = ((x, x + x) for x in (5, 7))

            def test_cls(self, case):
                assert calc.double(case[0]) == case[1]


        def test_other():
            assert calc.double(0) == 0
    ''', '''
        def pytest_generate_tests(metafunc):
            if "case" in metafunc.fixturenames and metafunc.cls is not None:
                metafunc.parametrize("case", metafunc.cls.cases)
    '''),
    # helper-21: a hook of the project drains a generator it keeps out of module level, and hands
    # pytest a list: the warm process's collection took the cases, each fork's got none
    "a generator a test module's hook drains into a list": ('''
        import calc


        class _Src:
            cases = (n for n in range(1, 4))


        def pytest_generate_tests(metafunc):
            if "n" in metafunc.fixturenames:
                metafunc.parametrize("n", list(_Src.cases))


        def test_double(n):
            assert calc.double(n) == n + n


        def test_other():
            assert calc.double(0) == 0
    ''', ""),
}
EXTRA_FILES = {
    "cases inherited from a helper module's class": {"tests/cases.py": '''
        import calc
        import pytest


        class DoubleCases:
            @pytest.mark.parametrize("x,want", zip([1, 2], [2, 4]))
            def test_double(self, x, want):
                assert calc.double(x) == want
    '''},
    "an open file, a stream and a class attribute a hook parametrizes over": {"tests/cases.txt": "1 2\n3 6\n"},
}
