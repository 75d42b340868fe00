"""The suite leaves nothing in the machine's temporary folder: a test makes its folders under pytest's
tmp_path (or tmp_path_factory), which pytest prunes, never with a bare `tempfile.mkdtemp()` that no one
removes (thousands of `fuzz-*` and `rf-warm-test-*` folders piled up in /tmp that way)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]

# A bare mkdtemp that is removed by the test itself, for a reason tmp_path cannot serve.
REMOVED_BY_THE_TEST = {
    "leases/test_users.py": "other users' processes must reach it (tmp_path is private to root); removed in finally",
    "leases/test_private_slurm.py": "munge's socket path must fit 108 bytes; minislurm.down removes it",
}


def _bare_mkdtemps(source: str) -> list[int]:
    """Lines calling tempfile.mkdtemp / mkstemp without dir= (code only: a project's text in a string is not code)."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("mkdtemp", "mkstemp") and not any(k.arg == "dir" for k in node.keywords)
                and len(node.args) < 3):
            lines.append(node.lineno)
    return lines


def test_no_test_makes_a_temporary_folder_outside_its_tmp_path() -> None:
    found = []
    for path in sorted(TESTS.rglob("*.py")):
        rel = path.relative_to(TESTS).as_posix()
        if rel in REMOVED_BY_THE_TEST:
            continue
        found += [f"tests/{rel}:{line}" for line in _bare_mkdtemps(path.read_text(encoding="utf-8"))]
    assert found == [], "use tmp_path / tmp_path_factory (or dir=) instead: " + ", ".join(found)


def test_the_check_sees_a_bare_mkdtemp_and_spares_one_with_dir_or_in_a_string() -> None:
    code = ('import tempfile\nA = tempfile.mkdtemp(prefix="x-")\nB = tempfile.mkdtemp(dir="/d")\n'
            'C = """tempfile.mkdtemp()"""\n')
    assert _bare_mkdtemps(code) == [2]
