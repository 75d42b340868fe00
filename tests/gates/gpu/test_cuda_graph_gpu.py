"""The cuda-graph driver's child on a real device, graded by the driver: every rule of DESIGN section 6."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

pytestmark = pytest.mark.gpu
HERE = Path(__file__).resolve().parent


def _run(tmp_path: Path, variants: list[str], shapes: list[list[int]], replays: int = 4) -> tuple[Gate, list[dict]]:
    gate = Gate(
        id="t", source=Source(tmp_path / "g.yaml", 1),
        driver=DriverSpec(type="cuda-graph", run="steps:make_step", options=(
            ("replays", replays), ("repeat_eager", 2), ("shapes", tuple(tuple(s) for s in shapes)),
            ("variants", tuple(variants)), ("warmup", 2))),
    )
    from redfirst.gates.drivers.cuda_graph import DRIVER

    inv = DRIVER.invocation(gate, HERE, tmp_path)
    p = subprocess.run(inv.argv, cwd=HERE, env={**os.environ, **dict(inv.env)}, capture_output=True,
                       text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    lines = (tmp_path / "evidence.jsonl").read_text().splitlines()
    return gate, [json.loads(line) for line in lines if '"observation"' in line]


def test_correct_step_is_green_with_values_over_four_replays(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["correct"], [[500], [4096]])
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "500 [500]" not in outcome.reason and "2000 values, 0 differing, 4 replays" in outcome.reason
    assert all(o["device"]["name"] for o in obs)


def test_stale_host_value_passes_eager_and_first_replay_then_is_red_at_replay(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["stale"], [[500]])
    (o,) = obs
    assert o["eager_passed"] is True
    replay0 = [c for c in o["comparisons"] if c["phase"] == "replay" and c["index"] == 0]
    assert replay0 and all(c["differing"] == 0 and c["values"] == 500 for c in replay0)
    assert o["failure_class"] == "replay"
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.RED and "replay 1 (fresh inputs)" in outcome.reason, outcome.reason


def test_synchronising_inside_capture_is_red_at_capture(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["sync-in-capture"], [[256]])
    assert obs[0]["failure_class"] == "capture"
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.RED and "capture failed" in outcome.reason


def test_nondeterministic_eager_is_no_decision(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["nondeterministic"], [[256]])
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.NO_DECISION and "eager not deterministic" in outcome.reason


def test_graph_that_skips_its_output_is_red_on_the_captured_inputs(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["no-write"], [[256]])
    outcome = grade(gate, obs)
    assert outcome.verdict is Verdict.RED and "replay 0 (the captured inputs)" in outcome.reason


def test_declared_shape_not_observed_is_no_decision(tmp_path: Path) -> None:
    gate, obs = _run(tmp_path, ["correct"], [[64]])
    declared_more = Gate(id=gate.id, source=gate.source, driver=DriverSpec(
        type="cuda-graph", run="steps:make_step",
        options=(("shapes", ((64,), (128,))), ("variants", ("correct",)))))
    outcome = grade(declared_more, obs)
    assert outcome.verdict is Verdict.NO_DECISION and "correct [128]: declared but not observed" in outcome.reason
