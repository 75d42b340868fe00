"""The warm process imports nothing a cold run would import otherwise: not a copy of the project
found outside the root before a conftest puts `src/` first (the tree's module is what a cold run
tests), and not a module that warns at import outside pytest's warning filters (`filterwarnings =
error` makes that import a collection error in a cold run). Each is a `pytest` vs `pytest-warm`
differential through `mutate`, equal without the baseline differential (redfirst.mutations.warmth)
having to send the gate cold."""

from __future__ import annotations

from pathlib import Path

from mutate_helpers import differential, write

CALC = '''
def add(a, b):
    return a + b
'''

TEST = '''
from calc import add


def test_add():
    assert add(1, 2) == 3
'''


def test_an_installed_copy_outside_the_root_is_not_imported_before_the_conftest(tmp_path, monkeypatch):
    # an older, broken copy of the project on PYTHONPATH; the project's conftest puts src/ first
    site = tmp_path / "site"
    write(site, "calc/__init__.py", "def add(a, b):\n    return 0\n")
    conftest = "import sys\nfrom pathlib import Path\n\nsys.path.insert(0, str(Path(__file__).parent / 'src'))\n"
    said: list[str] = []
    got = differential(tmp_path, monkeypatch,
                       {"src/calc/__init__.py": CALC, "conftest.py": conftest, "tests/test_calc.py": TEST},
                       "tests", {"minus": ("src/calc/__init__.py", "a + b", "a - b")}, said=said,
                       extra=f"  env: {{PYTHONPATH: {site}}}\n")
    assert got == {"minus": ("KILLED", "KILLED")}, said[0]
    assert "runs cold" not in said[0], said[0]      # equal at the root, not by the differential


def test_a_module_that_warns_at_import_is_imported_under_pytests_filters(tmp_path, monkeypatch):
    site = tmp_path / "site"
    write(site, "oldlib.py", "import warnings\n\nwarnings.warn('oldlib is old', DeprecationWarning)\nONE = 1\n")
    test = TEST.replace("from calc import add", "from calc import add\nfrom oldlib import ONE")
    said: list[str] = []
    got = differential(tmp_path, monkeypatch,
                       {"calc.py": CALC, "pytest.ini": "[pytest]\nfilterwarnings =\n    error\n",
                        "tests/test_calc.py": test},
                       "tests", {"minus": ("calc.py", "a + b", "a - b")}, said=said,
                       extra=f"  env: {{PYTHONPATH: {site}}}\n")
    # a cold run: the import's warning is an error, the collection fails, the baseline is not GREEN
    assert got == {"minus": ("ERROR", "ERROR")}, said[0]
    assert "runs cold" not in said[0], said[0]      # equal at the root, not by the differential
    assert Path(site / "oldlib.py").is_file()
