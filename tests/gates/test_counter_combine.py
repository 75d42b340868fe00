"""A counter recorded more than once with different values is NO_DECISION naming them, unless the
gate declares how they combine (`combine:`): its verdict must not hang on which record came last
(issue 33: a counter recorded twice was graded on its last value, GREEN or RED by test order)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.gates.engine_project import gates, project, run_json

# Records each (name, value) pair given on its command line, in order.
WRITER = """
import json, os, sys
with open(os.path.join(os.environ["GATES_EVIDENCE"], "evidence.jsonl"), "a") as f:
    for name, value in zip(sys.argv[1::2], sys.argv[2::2]):
        f.write(json.dumps({"counter": name, "value": float(value) if "." in value else int(value)}) + "\\n")
"""


def _gate(values: list[str], bound: str) -> str:
    argv = ", ".join(f'"{v}"' for pair in (("hits", v) for v in values) for v in pair)
    return f"""
        gate: g
        driver: {{type: command, run: [python3, count.py, {argv}]}}
        assert: {{counters: {{hits: {bound}}}}}
    """


@pytest.mark.parametrize("order", [["1", "0"], ["0", "1"]], ids=["green-last", "red-last"])
def test_a_counter_recorded_twice_with_different_values_is_no_decision_naming_both(tmp_path: Path, order):
    root = project(tmp_path, _gate(order, "{equals: 1}"), {"count.py": WRITER})
    code, items = run_json(root)
    item = items["g"]
    assert (code, item["verdict"], item["cause"]) == (3, "NO_DECISION", "evidence"), item
    assert f"{order[0]} then {order[1]}" in item["reason"] and "combine" in item["reason"], item["reason"]


def test_the_same_value_recorded_twice_is_that_value(tmp_path: Path):
    root = project(tmp_path, _gate(["1", "1"], "{equals: 1}"), {"count.py": WRITER})
    assert run_json(root)[1]["g"]["verdict"] == "GREEN"


@pytest.mark.parametrize("combine, bound, verdict", [
    ("last", "equals: 1", "GREEN"), ("first", "equals: 3", "GREEN"), ("sum", "equals: 4", "GREEN"),
    ("min", "equals: 0", "GREEN"), ("max", "equals: 3", "GREEN"),
    ("all", "min: 0", "GREEN"), ("all", "min: 1", "RED"), ("sum", "equals: 3", "RED"),
])
def test_a_declared_combination_decides(tmp_path: Path, combine: str, bound: str, verdict: str):
    root = project(tmp_path, _gate(["3", "0", "1"], f"{{{bound}, combine: {combine}}}"), {"count.py": WRITER})
    code, items = run_json(root)
    assert items["g"]["verdict"] == verdict, items["g"]


@pytest.mark.parametrize("bound, said", [
    ("{combine: last}", "gate 'g': counters.hits: `combine` alone checks nothing: give `equals`, `min` or `max`"),
    ("{equals: 1, combine: average}", "assert.counters.hits.combine: 'average' is not one of"),
])
def test_combine_alone_checks_nothing_and_an_unknown_combination_is_refused(tmp_path: Path, bound: str, said: str):
    root = project(tmp_path, _gate(["1"], bound), {"count.py": WRITER})
    proc = gates(root, "check")
    assert proc.returncode == 2 and "g.yaml:4: " + said in proc.stdout + proc.stderr, proc.stdout + proc.stderr


@pytest.mark.parametrize("graphs", [("[1.0, 2.0]", "[1.0, 9.0]"), ("[1.0, 9.0]", "[1.0, 2.0]")],
                         ids=["good-first", "bad-first"])
def test_a_tensor_recorded_twice_at_one_step_is_no_decision_naming_both_lines(tmp_path: Path, graphs):
    # The comparison took the last record of a name and step: GREEN or RED by the order of the records.
    first, second = graphs
    root = project(tmp_path, """
        gate: twice
        driver: {type: pytest, run: [tests]}
        assert:
          bit_exact: [{reference: out.eager, candidate: out.graph}]
    """, {"pytest.ini": "[pytest]\n", "tests/test_ev.py": f"""
def test_records(gates_evidence):
    gates_evidence.tensor("out.eager", [1.0, 2.0])
    gates_evidence.tensor("out.graph", {first})
    gates_evidence.tensor("out.graph", {second})
"""})
    code, items = run_json(root)
    item = items["twice"]
    assert (code, item["verdict"]) == (3, "NO_DECISION"), item
    assert "'out.graph' recorded again (first on line 2)" in item["reason"], item["reason"]
