"""The result model and its reporters (issue #13 item 5): the verdict vocabulary is declared
once, in `gates/verdict.py`, and every reporter speaks it from there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from gates.verdict import MutationOutcome, Verdict

REPO = Path(__file__).resolve().parents[2]
WORDS = frozenset(v.value for v in (*Verdict, *MutationOutcome))
# Files other helpers own this round: each keeps one literal, a one-line follow-up there.
NOT_YET = frozenset({"gates/drivers/cuda_graph.py", "gates/cuda/probe.py", "gates/redfirst_cmd.py",
                     "mutations/cache.py"})


def _docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def _redeclared(path: Path) -> list[str]:
    """Each string literal in `path` that is a verdict word, or a regex alternation of them."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _docstrings(tree)
    out = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str) or id(node) in skip:
            continue
        words = set(node.value.replace("(", "|").replace(")", "|").split("|"))
        if node.value in WORDS or len(words & WORDS) >= 2:
            out.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.value!r}")
    return out


@pytest.mark.parametrize("package", ["gates", "mutations", "leases", "checkers"])
def test_the_verdict_vocabulary_is_declared_only_in_gates_verdict(package: str):
    files = sorted(p for p in (REPO / package).rglob("*.py")
                   if p.relative_to(REPO).as_posix() not in NOT_YET | {"gates/verdict.py"})
    assert files
    found = [hit for p in files for hit in _redeclared(p)]
    assert not found, "verdict words re-declared outside gates/verdict.py (use its enums):\n" + "\n".join(found)


def test_the_vocabulary_check_sees_a_redeclared_verdict(tmp_path: Path):
    # The checker itself: a literal verdict word and a regex of them are both found.
    probe = REPO / "tests" / "gates" / "_vocabulary_probe.py"
    try:
        probe.write_text('"""GREEN doc."""\nA = "RED"\nB = r"(GREEN|KILLED)"\nC = "GREEN light"\n')
        assert [h.split(": ", 1)[1] for h in _redeclared(probe)] == ["'RED'", "'(GREEN|KILLED)'"]
    finally:
        probe.unlink()
