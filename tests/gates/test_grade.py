"""redfirst.gates.grade reads the runner's facts from a typed GradingContext: a misspelt fact is a
TypeError, a stored record's context keeps every key, and each fact still decides its
NO_DECISION (or skips the build step) through the real runner, store and grader."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates import loader
from redfirst.gates.config import Project
from redfirst.gates.grade import grade
from redfirst.gates.record import RECORD_FILE, GradingContext, Record
from redfirst.gates.runner import RunContext, execute
from redfirst.gates.store import Store, verify
from redfirst.verdict import Cause, Verdict


def _project(tmp_path: Path, gate_yaml: str) -> tuple[Project, Any]:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    (root / "gates").mkdir()
    (root / "gates" / "g.yaml").write_text(textwrap.dedent(gate_yaml))
    project = Project(root, None)
    return project, loader.gate_from_document(textwrap.dedent(gate_yaml), root / "gates" / "g.yaml", project)


PASSING = f"""
    gate: g
    driver: {{type: command, run: ["{sys.executable}", -c, "print('3 passed, 0 failed')"], format: plain}}
    build: ["true"]
"""


def _sealed(tmp_path: Path, gate_yaml: str = PASSING) -> tuple[Record, Path, Any]:
    """A real run of the gate, sealed in a real store: its record, folder and gate."""
    project, gate = _project(tmp_path, gate_yaml)
    store = Store(project.state_dir)
    done = execute(gate, RunContext(project, store, {"commit": None, "dirty": None}))
    folder, record = store.seal(done.folder, done.record)
    return record, folder, gate


def _with_context(folder: Path, record: Record, **facts: Any) -> tuple[Record, Path]:
    """The same record with its stored context changed, re-read from JSON as regrade reads it."""
    data = record.to_json()
    data["context"] = {**data["context"], **facts}
    return Record.from_json(json.loads(json.dumps(data))), folder


def test_a_misspelt_fact_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        GradingContext(lease_lots="superseded")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        GradingContext().with_facts(junit_mising="x")
    with pytest.raises(TypeError, match="grading fact"):
        GradingContext({"unmet": "placed where a fact belongs"})
    with pytest.raises(TypeError, match="list of strings"):
        GradingContext(evidence_links="one/link")  # type: ignore[arg-type]


def test_the_real_run_is_green_and_its_stored_context_round_trips(tmp_path: Path) -> None:
    record, folder, gate = _sealed(tmp_path)
    assert grade(record, folder, gate).outcome.verdict is Verdict.GREEN
    stored = json.loads((folder / RECORD_FILE).read_text())["context"]
    assert stored["box"] == "local" and "ran_sha256" in stored
    assert verify(folder).id == record.id == folder.name      # the id survives the typed context
    assert record.context.ran and record.context.placement == {"box": "local"}


def test_an_unknown_key_in_a_stored_context_is_kept_and_known_facts_still_decide(tmp_path: Path) -> None:
    record, folder, gate = _sealed(tmp_path)
    again, _ = _with_context(folder, record, rack="r7", unmet="no box has a GPU")
    assert again.context.placement["rack"] == "r7"
    assert again.to_json()["context"] == {**record.to_json()["context"], "rack": "r7",
                                          "unmet": "no box has a GPU"}
    outcome = grade(again, folder, gate).outcome
    assert (outcome.verdict, outcome.cause) == (Verdict.NO_DECISION, Cause.ENVIRONMENT)


@pytest.mark.parametrize(("fact", "value", "cause", "said"), [
    ("unmet", "no box has 2 GPUs", Cause.ENVIRONMENT, "no box has 2 GPUs"),
    ("lease_lost", "token 7 superseded by 8", Cause.ENVIRONMENT, "the lease was lost"),
    ("evidence_links", ["evidence/x"], Cause.EVIDENCE, "left links"),
    ("junit_missing", "report.xml was not written by this run", Cause.EVIDENCE, "no JUnit report"),
])
def test_each_stored_fact_yields_its_no_decision(tmp_path: Path, fact: str, value: Any, cause: Cause,
                                                 said: str) -> None:
    record, folder, gate = _sealed(tmp_path)
    assert grade(record, folder, gate).outcome.verdict is Verdict.GREEN   # the control
    again, _ = _with_context(folder, record, **{fact: value})
    outcome = grade(again, folder, gate).outcome
    assert (outcome.verdict, outcome.cause) == (Verdict.NO_DECISION, cause) and said in outcome.reason


def test_build_replaced_skips_the_build_step(tmp_path: Path) -> None:
    record, folder, gate = _sealed(tmp_path)
    without_build = Record.from_json({**record.to_json(), "build": None})
    outcome = grade(without_build, folder, gate).outcome
    assert outcome.verdict is Verdict.ERROR and "holds none" in outcome.reason   # the control
    replaced = Record.from_json({**without_build.to_json(),
                                 "context": {**record.to_json()["context"], "build_replaced": "by the caller"}})
    assert grade(replaced, folder, gate).outcome.verdict is Verdict.GREEN


def test_a_context_that_is_not_an_object_is_refused(tmp_path: Path) -> None:
    record, _folder, _gate = _sealed(tmp_path)
    with pytest.raises(TypeError):
        Record.from_json({**record.to_json(), "context": ["box", "local"]})


@pytest.mark.parametrize(("facts", "said"), [
    ({"lease_lots": "token 7 superseded by 8"}, "'lease_lost'"),     # misspelt: it was kept as placement
    ({"Unmet": "no box has 2 GPUs"}, "'unmet'"),
    ({"evidence_link": ["evidence/x"]}, "'evidence_links'"),
    ({"lease_lost": ""}, "says nothing"),                            # present, but falsy to the grader
    ({"unmet": "  "}, "says nothing"),
])
def test_a_stored_context_with_a_misspelt_or_empty_fact_is_refused_not_regraded_green(
        tmp_path: Path, facts: dict[str, Any], said: str) -> None:
    record, folder, gate = _sealed(tmp_path)
    assert grade(record, folder, gate).outcome.verdict is Verdict.GREEN   # the control
    with pytest.raises(TypeError, match=said):
        _with_context(folder, record, **facts)
