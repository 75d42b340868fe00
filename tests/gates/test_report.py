"""The result model and its reporters (issue #13 item 5): the verdict vocabulary is declared
once, in `redfirst/gates/verdict.py`, and every reporter speaks it from there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from redfirst.verdict import MutationOutcome, Verdict

REPO = Path(__file__).resolve().parents[2]
WORDS = frozenset(v.value for v in (*Verdict, *MutationOutcome))
# Files other helpers own this round: each keeps one literal, a one-line follow-up there.
NOT_YET = frozenset({"redfirst/gates/drivers/cuda_graph.py", "redfirst/gates/cuda/probe.py",
                     "redfirst/gates/redfirst_cmd.py", "redfirst/mutations/cache.py"})


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


@pytest.mark.parametrize("package", ["redfirst/gates", "redfirst/mutations", "redfirst/leases", "redfirst/checkers",
                                     "redfirst"])
def test_the_verdict_vocabulary_is_declared_only_in_redfirst_verdict(package: str):
    files = sorted(p for p in (REPO / package).rglob("*.py")
                   if p.relative_to(REPO).as_posix() not in NOT_YET | {"redfirst/verdict.py"})
    assert files
    found = [hit for p in files for hit in _redeclared(p)]
    assert not found, "verdict words re-declared outside redfirst/verdict.py (use its enums):\n" + "\n".join(found)


def test_the_vocabulary_check_sees_a_redeclared_verdict(tmp_path: Path):
    # The checker itself: a literal verdict word and a regex of them are both found.
    probe = REPO / "tests" / "gates" / "_vocabulary_probe.py"
    try:
        probe.write_text('"""GREEN doc."""\nA = "RED"\nB = r"(GREEN|KILLED)"\nC = "GREEN light"\n')
        assert [h.split(": ", 1)[1] for h in _redeclared(probe)] == ["'RED'", "'(GREEN|KILLED)'"]
    finally:
        probe.unlink()


RED = "gate: broken\ndriver: {type: command, run: \"echo '1 passed, 1 failed'; exit 1\", format: plain}\n"
NONE = "gate: skipped-all\ndriver: {type: command, run: \"echo '0 passed, 0 failed'\", format: plain}\n"
SMOKE = "gate: smoke\nexit_only: \"the installer's exit status is its whole contract\"\ndriver: {type: command, run: \"true\"}\n"


def test_every_gates_reporter_tells_each_item_as_the_json_document_does(make_project, tmp_path: Path):
    """The table, JUnit, the HTML page and the GitHub summary are read from the one serialised
    document: each says every gate's verdict and reason as `--json` does."""
    import html
    import json
    import os
    import subprocess
    import sys
    import xml.etree.ElementTree as ET

    root = make_project({"red.yaml": RED, "none.yaml": NONE, "smoke.yaml": SMOKE})
    out = tmp_path / "out"
    env = {**os.environ, "GITHUB_ACTIONS": "true", "GITHUB_STEP_SUMMARY": str(out / "summary.md"),
           "GITHUB_OUTPUT": str(out / "output.txt")}
    out.mkdir()

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "-q", "--root", str(root), *args],
                              capture_output=True, text=True, timeout=300, env=env)

    doc = json.loads(run("--json", "--junit", str(out / "j.xml"), "--html", str(out / "p.html")).stdout)
    summary = (out / "summary.md").read_text()
    table = run().stdout
    page = html.unescape((out / "p.html").read_text())
    cases = {c.get("name"): c for c in ET.parse(out / "j.xml").getroot().iter("testcase")}
    items = {i["id"]: i for i in doc["items"]}
    assert set(items) == {"value-check", "broken", "skipped-all", "smoke"}
    assert items["smoke"]["reason"].startswith("EXIT-ONLY: ")
    for gate, item in items.items():
        [line] = [x for x in table.splitlines() if x.startswith(gate + " ")]
        assert item["verdict"] in line and item["reason"] in line, (gate, line)
        [row] = [x for x in summary.splitlines() if x.startswith(f"| `{gate}` |")]
        assert item["verdict"] in row and item["reason"].replace("|", "\\|") in row, (gate, row)
        assert item["reason"] in page, gate
        failure = [e for e in cases[gate] if e.tag in ("failure", "error")]
        assert [e.get("type") for e in failure] == ([] if item["verdict"] == "GREEN" else [item["verdict"]])
        assert all(item["reason"] in (e.get("message") or "") for e in failure), gate


def test_mutate_reports_are_read_from_its_json_document_alone(make_project, tmp_path: Path):
    """`mutate`'s table and JUnit are functions of the document `--json` prints: rebuilt from
    that JSON text they are byte for byte what the command wrote."""
    import json
    import subprocess
    import sys

    from redfirst.mutations import report

    root = make_project({"none.yaml": NONE})
    (root / "mutations").mkdir()
    (root / "mutations" / "m.yaml").write_text(
        "- mutation: bad\n  file: value.txt\n  anchor: good\n  replace: bad\n  expect: {red: [value-check]}\n"
        "- mutation: still-good\n  file: value.txt\n  anchor: good\n  replace: goo\n"
        "  expect: {red: [value-check], green: [skipped-all]}\n")

    def mutate(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(root), "--no-cache", *args],
                              capture_output=True, text=True, timeout=300, cwd=root)

    proc = mutate("--json", "--junit", str(tmp_path / "j.xml"))
    doc = json.loads(proc.stdout)
    assert {i["id"]: i["verdict"] for i in doc["items"]} == {"bad": "KILLED", "still-good": "ERROR"}, proc.stderr
    report.write_junit(tmp_path / "again.xml", doc)
    assert (tmp_path / "again.xml").read_bytes() == (tmp_path / "j.xml").read_bytes()
    table = mutate().stdout
    assert report.table(doc) == table.rstrip("\n")
