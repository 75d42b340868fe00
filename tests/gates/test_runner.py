"""redfirst.gates.runner's steps (build, drive, enumerate, record) write the typed facts the grader reads:
real runs of real programs into a real store, read back from the sealed record."""

from __future__ import annotations

import hashlib
import os
import shutil
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates import loader
from redfirst.gates.config import Project
from redfirst.gates.record import ENUM_OUT, GradingContext
from redfirst.gates.runner import Executed, RunContext, execute
from redfirst.gates.store import Store, verify
from redfirst.verdict import Verdict


def _execute(tmp_path: Path, gate_yaml: str, **ctx: Any) -> Executed:
    root = tmp_path / "proj"
    (root / "gates").mkdir(parents=True, exist_ok=True)
    (root / "redfirst.yaml").write_text("gates: {paths: [gates]}\n")
    text = textwrap.dedent(gate_yaml)
    (root / "gates" / "g.yaml").write_text(text)
    project = Project(root, None)
    gate = loader.gate_from_document(text, root / "gates" / "g.yaml", project)
    return execute(gate, RunContext(project, Store(project.state_dir), {"commit": None, "dirty": None}, **ctx))


PRINTS = f'["{sys.executable}", -c, "print(\'2 passed, 0 failed\')"]'


def test_drive_records_what_ran_as_a_typed_fact(tmp_path: Path) -> None:
    done = _execute(tmp_path, f"gate: g\ndriver: {{type: command, run: {PRINTS}, format: plain}}\n")
    facts = done.record.context
    assert isinstance(facts, GradingContext) and facts.ran
    assert facts.ran_sha256 == hashlib.sha256(Path(sys.executable).resolve().read_bytes()).hexdigest()
    assert facts.placement == {"box": "local"} and facts.junit_missing is None
    result = done.finish()
    assert result.verdict is Verdict.GREEN
    assert verify(Store(tmp_path / "proj" / ".redfirst").find(result.evidence_id or "")).context == facts


def test_a_report_from_before_the_run_is_a_junit_missing_fact(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    root.mkdir()
    (root / "report.xml").write_text('<testsuite><testcase name="old"/></testsuite>')
    done = _execute(tmp_path, 'gate: g\ndriver: {type: command, run: "true", format: junit, junit: report.xml}\n')
    assert done.record.context.junit_missing is not None
    assert "a report from before the run is there" in done.record.context.junit_missing
    assert done.finish().verdict is Verdict.NO_DECISION


def test_a_build_the_caller_ran_is_a_build_replaced_fact_and_is_not_run(tmp_path: Path) -> None:
    gate = f'gate: g\ndriver: {{type: command, run: {PRINTS}, format: plain}}\nbuild: "touch built"\n'
    done = _execute(tmp_path, gate, skip_build=True)
    assert done.record.build is None and done.record.context.build_replaced
    assert not (tmp_path / "proj" / "built").exists()
    assert done.finish().verdict is Verdict.GREEN


def test_links_the_program_left_are_an_evidence_links_fact(tmp_path: Path) -> None:
    run = '"ln -s /etc/passwd $GATES_EVIDENCE/stolen && echo 1 passed, 0 failed"'
    done = _execute(tmp_path, f"gate: g\ndriver: {{type: command, run: {run}, format: plain}}\n")
    assert done.record.context.evidence_links == ("evidence/stolen",)
    assert done.finish().verdict is Verdict.NO_DECISION


@pytest.mark.skipif(shutil.which("ctest") is None, reason="no ctest (apt-get install cmake)")
def test_enumerate_runs_only_where_the_format_has_an_enumeration(tmp_path: Path) -> None:
    import subprocess

    src = tmp_path / "ctest"
    src.mkdir()
    (src / "CMakeLists.txt").write_text("cmake_minimum_required(VERSION 3.16)\nproject(p NONE)\nenable_testing()\n"
                                        "add_test(NAME one COMMAND true)\n")
    subprocess.run(["cmake", "-S", str(src), "-B", str(src / "b")], check=True, capture_output=True,
                   env={**os.environ})
    ctest = _execute(tmp_path / "a", f"gate: g\ndriver: {{type: command, run: [ctest, --test-dir, {src / 'b'}], "
                                     "format: ctest}\n")
    assert ctest.record.enumerate is not None and ctest.record.enumerate.argv[-1] == "-N"
    assert "Total Tests: 1" in (ctest.folder / ENUM_OUT).read_text()
    assert ctest.finish().verdict is Verdict.GREEN
    plain = _execute(tmp_path / "b", f"gate: g\ndriver: {{type: command, run: {PRINTS}, format: plain}}\n")
    assert plain.record.enumerate is None
