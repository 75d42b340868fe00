"""Rank groups of the cuda-graph driver (issue 38), on CPU: ranks as real processes on loopback.

Each test writes a factory module, runs the launcher (`python -m redfirst.gates.cuda.ranks`)
as a real subprocess with the simulated backend (real bytes exchanged through the loopback
store, a simulated capture that records each rank's launches), and grades the evidence it
wrote with the one grading function, as `gates run` and `gates regrade` do.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import DriverSpec, Gate, Source
from redfirst.verdict import Verdict

FACTORY = textwrap.dedent('''
    import os, signal, sys, time
    import numpy as np

    if os.environ.get("TP_ABSENT") == os.environ.get("REDFIRST_RANK"):
        sys.exit(0)                     # this rank never reaches the rendezvous

    class Mlp:
        """Column-parallel then row-parallel linear, the partial sums all-reduced."""

        def __init__(self, variant, shape, group):
            n, h = shape
            self.variant, self.group = variant, group
            rng = np.random.default_rng(100 + group.rank)          # this rank's shards
            k = 2 * h // group.tp_size
            self.w1 = rng.standard_normal((h, k)).astype(np.float32)
            self.w2 = rng.standard_normal((k, h)).astype(np.float32)
            self.x = np.zeros((n, h), np.float32)
            self.hid = np.zeros((n, k), np.float32)
            self.y = np.zeros((n, h), np.float32)
            self.extra = (np.zeros(3, np.float32), np.zeros(5, np.float32))
            self.seed = 0
            self.last = group.rank == group.world_size - 1

        @property
        def applicable(self):
            return not (self.last and self.variant == "napp")   # the last rank alone says not applicable

        def inputs(self, seed, stream):
            self.seed = seed
            self.x[...] = np.random.default_rng(seed).standard_normal(self.x.shape)

        def __call__(self, stream):
            faulty = self.last and self.variant
            if faulty == "kill" and stream.capturing:
                os.kill(os.getpid(), signal.SIGKILL)
            if faulty == "quit" and stream.capturing:
                os._exit(0)                 # a rank that leaves with status 0 before it replays
            if faulty == "hang":
                open("hanging", "w").close()   # a sign for the test that kills the launcher
                time.sleep(60)
            if self.variant == "newgroup":
                self.group.new_group(stream)
            stream.launch(lambda: np.matmul(self.x, self.w1, out=self.hid))
            stream.launch(lambda: np.maximum(self.hid, 0, out=self.hid))
            stream.launch(lambda: np.matmul(self.hid, self.w2, out=self.y))
            if faulty == "order":
                self.group.all_reduce(self.extra[1], stream)
                self.group.all_reduce(self.y, stream)
            else:
                self.group.all_reduce(self.y, stream)
                self.group.all_reduce(self.extra[1], stream)
            if faulty == "hostscalar":
                bias = float(self.seed % 5)                 # read on the host: frozen by a capture
                stream.launch(lambda: np.add(self.y, bias, out=self.y))

        def outputs(self):
            if self.variant == "complex":
                return {"y": self.y, "z": self.y.astype(np.complex64)}   # a dtype no comparator reads
            return {"y": self.y.T if self.variant == "transposed" else self.y}   # a strided view: still y's bytes

    def build(variant, shape, group):
        if variant == "linger" and group.rank == group.world_size - 1:
            import threading                # a thread that keeps the rank alive after its results
            threading.Thread(target=time.sleep, args=(60,)).start()
        return Mlp(variant, shape, group)
''')


def gate(variants: list[str], shapes: list[list[int]], world: int = 2, tp: int | None = None,
         backend: str = "sim", dtype: str | None = None) -> Gate:
    ranks = (("backend", backend), ("tp_size", tp or world), ("world_size", world))
    options = [("ranks", ranks), ("repeat_eager", 2), ("replays", 2), ("shapes", tuple(tuple(s) for s in shapes)),
               ("variants", tuple(variants)), ("warmup", 1)] + ([("dtype", dtype)] if dtype else [])
    return Gate(id="tp", source=Source(Path("tp.yaml"), 1), driver=DriverSpec(
        type="cuda-graph", run="tpfactory:build", timeout=30, options=tuple(sorted(options))))


def launch(tmp_path: Path, variants: list[str], shapes: list[list[int]], world: int = 2, deadline: float = 20,
           env: dict[str, str] | None = None, dtype: str | None = None,
           factory: str = FACTORY, hazard: str | None = None) -> list[dict[str, Any]]:
    """Run the launcher for real; the records it wrote into the evidence folder."""
    (tmp_path / "tpfactory.py").write_text(factory)
    ev = tmp_path / "evidence"
    cmd = [sys.executable, "-m", "redfirst.gates.cuda.ranks", "--run", "tpfactory:build",
           "--variants", json.dumps(variants), "--shapes", json.dumps(shapes), "--warmup", "1", "--replays", "2",
           "--repeat-eager", "2", "--world-size", str(world), "--tp-size", str(world), "--backend", "sim",
           "--deadline", str(deadline), "--timeout", str(deadline), "--rendezvous-timeout", "10",
           *(["--dtype", dtype] if dtype else []), *(["--hazard", hazard] if hazard else [])]
    done = subprocess.run(cmd, cwd=tmp_path, env={**os.environ, "GATES_EVIDENCE": str(ev), **(env or {})},
                          capture_output=True, text=True, timeout=deadline + 20)
    assert done.returncode == 0, done.stderr
    lines = (ev / "evidence.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def graded(tmp_path: Path, variants: list[str], shapes: list[list[int]] | None = None, **kw: Any) -> Any:
    shapes = shapes or [[2, 4]]
    records = launch(tmp_path, variants, shapes, **kw)
    return grade(gate(variants, shapes, kw.get("world", 2)), records), records


def test_a_graph_safe_tp_step_is_green_on_every_rank(tmp_path: Path) -> None:
    outcome, records = graded(tmp_path, ["ok"], [[2, 4], [3, 4]])
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "2 ranks" in outcome.reason
    arms = [r for r in records if r["observation"] == "cuda-graph"]
    assert sorted((a["rank"], tuple(a["shape"])) for a in arms) == [(0, (2, 4)), (0, (3, 4)), (1, (2, 4)), (1, (3, 4))]
    # the collectives each rank issued while captured: the all-reduce of y, then the extra one
    assert arms[0]["collectives"]["capture"] == [
        {"op": "all_reduce", "size": 8, "dtype": "float32", "output": "y", "capturing": True},
        {"op": "all_reduce", "size": 5, "dtype": "float32", "output": None, "capturing": True}]


def test_the_ranks_really_exchange_data(tmp_path: Path) -> None:
    # world size 1 sums nothing; world size 2 sums two different partial products: different outputs
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    one = launch(tmp_path / "one", ["ok"], [[2, 4]], world=1)
    two = launch(tmp_path / "two", ["ok"], [[2, 4]], world=2)
    h1 = [c["reference_hash64"] for r in one if r["observation"] == "cuda-graph" for c in r["comparisons"]]
    h2 = [c["reference_hash64"] for r in two if r["observation"] == "cuda-graph" and r["rank"] == 0
          for c in r["comparisons"]]
    assert h1 and h2 and h1[0] != h2[0]


def test_a_rank_killed_mid_capture_is_red_naming_it(tmp_path: Path) -> None:
    outcome, _ = graded(tmp_path, ["kill"])
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert "rank 1 failed: it was killed by signal 9 during capture" in outcome.reason


def test_a_rank_that_never_arrives_is_no_decision(tmp_path: Path) -> None:
    outcome, records = graded(tmp_path, ["ok"], env={"TP_ABSENT": "1"})
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "rank 1 never arrived at the rendezvous" in outcome.reason
    assert not [r for r in records if r["observation"] == "cuda-graph"]


def test_a_rank_that_hangs_is_red_naming_it_and_every_rank_ends(tmp_path: Path) -> None:
    outcome, records = graded(tmp_path, ["hang"], deadline=3)
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert outcome.reason.startswith("rank 1 (in eager) hung: the gate's timeout ended every rank; waiting on it: "
                                     "rank 0"), outcome.reason
    assert {r["rank"]: r["ended"] for r in records if r["observation"] == "cuda-graph-rank"} == {0: "timeout",
                                                                                                 1: "timeout"}


def test_differing_collective_sequences_are_red_naming_the_first_difference(tmp_path: Path) -> None:
    outcome, _ = graded(tmp_path, ["order"])
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert ("order [2, 4]: rank 1 issued other collectives than rank 0 during eager: collective 0: all_reduce of "
            "5 float32 where rank 0 issued all_reduce of 8 float32") in outcome.reason


def test_a_missing_shape_is_no_decision(tmp_path: Path) -> None:
    records = launch(tmp_path, ["ok"], [[2, 4]])
    outcome = grade(gate(["ok"], [[2, 4], [3, 4]]), records)
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert outcome.reason.startswith("rank 0: ok [3, 4]: declared but not observed"), outcome.reason


def test_a_process_group_made_inside_the_capture_is_red_capture(tmp_path: Path) -> None:
    outcome, _ = graded(tmp_path, ["newgroup"])
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert ("rank 0: newgroup [2, 4]: capture failed: GroupInCapture: a process group was created or destroyed "
            "inside the captured callable") in outcome.reason


def test_a_rank_dependent_host_scalar_is_red_at_replay(tmp_path: Path) -> None:
    outcome, _ = graded(tmp_path, ["hostscalar"])
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert outcome.reason.startswith("rank 1: hostscalar [2, 4]: replay 1 (fresh inputs) output y"), outcome.reason


def _bent(records: list[dict[str, Any]], fn: Any) -> list[dict[str, Any]]:
    out = json.loads(json.dumps(records))
    fn(out)
    return out


@pytest.fixture(scope="module")
def green_records(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return launch(tmp_path_factory.mktemp("green"), ["ok"], [[2, 4]])


def test_records_bound_to_another_group_or_missing_a_rank_never_grade_green(
        green_records: list[dict[str, Any]]) -> None:
    g = gate(["ok"], [[2, 4]])
    assert grade(g, green_records).verdict is Verdict.GREEN
    no_rank1 = [r for r in green_records if r.get("rank") != 1]
    assert grade(g, no_rank1).reason.startswith("rank 1 left no record")
    assert grade(gate(["ok"], [[2, 4]], world=4), green_records).verdict is Verdict.NO_DECISION
    assert grade(gate(["ok"], [[2, 4]], tp=1), green_records).verdict is Verdict.NO_DECISION

    def same_device(rs: list[dict[str, Any]]) -> None:
        for r in rs:
            if r["observation"] == "cuda-graph-rank":
                r["device"]["uuid"] = "GPU-same"
    assert "a device of their own" in grade(g, _bent(green_records, same_device)).reason

    def disagree(rs: list[dict[str, Any]]) -> None:
        next(r for r in rs if r["observation"] == "cuda-graph" and r["rank"] == 1)["applicable"] = False
    outcome = grade(g, _bent(green_records, disagree))
    assert outcome.verdict is Verdict.RED and "rank 1 applicability disagreement" in outcome.reason


def _arms(rs: list[dict[str, Any]], rank: int) -> list[dict[str, Any]]:
    return [r for r in rs if r["observation"] == "cuda-graph" and r["rank"] == rank]


def _status(rs: list[dict[str, Any]], rank: int) -> dict[str, Any]:
    return next(r for r in rs if r["observation"] == "cuda-graph-rank" and r["rank"] == rank)


FORGERIES = {
    # a rank with no exit status, or stopped by the launcher, never ran to its end
    "no exit status": lambda rs: _status(rs, 1).update(exit=None),
    "stopped": lambda rs: _status(rs, 1).update(ended="stopped after rank 0 ended", exit=None),
    # the collective sequences dropped: nothing left to compare
    "no collectives": lambda rs: [a.pop("collectives") for a in _arms(rs, 1)],
    "no capture sequence": lambda rs: [a["collectives"].pop("capture") for a in _arms(rs, 1)],
    # an arm observed on another device than its rank's status names
    "arm on another device": lambda rs: [a["device"].update(uuid="sim-rank-0") for a in _arms(rs, 1)],
    # a rank's status or arm written twice (a line repeated, or left by an earlier run): which one counts is undecided
    "duplicated status": lambda rs: rs.append(json.loads(json.dumps(_status(rs, 1)))),
    "duplicated arm": lambda rs: rs.insert(0, json.loads(json.dumps(_arms(rs, 1)[0]))),
    # rank 0's arm passed off as rank 1's: relabelled, but observed by rank 0's process
    "arm copied from rank 0": lambda rs: [a.update({**json.loads(json.dumps(_arms(rs, 0)[0])), "rank": 1,
                                                   "device": {**_arms(rs, 0)[0]["device"], "uuid": "sim-rank-1"}})
                                          for a in _arms(rs, 1)],
}


@pytest.mark.parametrize("name", sorted(FORGERIES))
def test_forged_rank_records_never_grade_green(green_records: list[dict[str, Any]], name: str) -> None:
    outcome = grade(gate(["ok"], [[2, 4]]), _bent(green_records, FORGERIES[name]))
    assert outcome.verdict is Verdict.NO_DECISION, f"{name}: {outcome.verdict} {outcome.reason}"


def _eager(rs: list[dict[str, Any]], rank: int) -> list[dict[str, Any]]:
    return _arms(rs, rank)[0]["collectives"]["eager"]


# eager sequences of another length on a rank whose arms ran to their end (round 6 of issue 33)
EAGER_FORGERIES = {
    "one more on rank 1": lambda rs: _eager(rs, 1).append(dict(_eager(rs, 1)[-1])),
    "one fewer on rank 1": lambda rs: _eager(rs, 1).pop(),
    "none on rank 1": lambda rs: _eager(rs, 1).clear(),
    "one fewer on rank 0": lambda rs: _eager(rs, 0).pop(),
}


@pytest.mark.parametrize("name", sorted(EAGER_FORGERIES))
def test_ranks_that_ran_to_their_end_issuing_other_eager_collectives_are_red(
        green_records: list[dict[str, Any]], name: str) -> None:
    outcome = grade(gate(["ok"], [[2, 4]]), _bent(green_records, EAGER_FORGERIES[name]))
    assert outcome.verdict is Verdict.RED, f"{name}: {outcome.verdict} {outcome.reason}"
    assert "rank 1 issued other collectives than rank 0 during eager" in outcome.reason, outcome.reason


EXAMPLE_MLP = Path(__file__).resolve().parents[3] / "examples" / "tensor-parallel" / "tp" / "sim_mlp.py"


def test_the_gate_dtype_reaches_the_factory_and_is_compared_bit_for_bit_in_it(tmp_path: Path) -> None:
    records = launch(tmp_path, ["graph-safe"], [[2, 8]], dtype="float16", factory=EXAMPLE_MLP.read_text())
    outcome = grade(gate(["graph-safe"], [[2, 8]], dtype="float16"), records)
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    arms = [r for r in records if r["observation"] == "cuda-graph"]
    assert {c["dtype"] for a in arms for c in a["comparisons"]} == {"float16"}
    assert {e["dtype"] for a in arms for e in a["collectives"]["capture"]} == {"float16"}


def test_outputs_compared_in_another_dtype_than_the_gates_are_not_its_evidence(
        tmp_path: Path) -> None:
    records = launch(tmp_path, ["ok"], [[2, 4]], dtype="float16")   # this factory computes in float32 regardless
    outcome = grade(gate(["ok"], [[2, 4]], dtype="float16"), records)
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "output y compared in float32; the gate declares dtype float16" in outcome.reason


BAD_GATES = {
    "bf16": ("ranks: {world_size: 2, backend: sim}\n  dtype: bfloat16",
             "the simulated backend computes in float32 or float16, not bfloat16"),
    "tp": ("ranks: {world_size: 3, tp_size: 2, backend: sim}", "ranks: tp_size 2 does not divide world_size 3"),
    "device": ("ranks: {world_size: 2, backend: nccl}\nrequires: {device: cpu}",
               "driver cuda-graph needs `requires: {device: cuda}`"),
}


@pytest.mark.parametrize("case", sorted(BAD_GATES))
def test_a_rank_group_the_driver_cannot_run_is_a_message_with_file_and_line(tmp_path: Path, case: str) -> None:
    keys, message = BAD_GATES[case]
    text = (f"gate: bad\nclaim: x\ndriver:\n  type: cuda-graph\n  run: 'tpfactory:build'\n  variants: [ok]\n"
            f"  shapes: [[2, 4]]\n  {keys}\n")
    (tmp_path / "gates").mkdir()
    (tmp_path / "gates" / "bad.yaml").write_text(text)
    (tmp_path / "redfirst.yaml").write_text("gates:\n  paths: [gates]\n")
    done = subprocess.run([sys.executable, "-m", "redfirst.gates.cli", "check", "--root", str(tmp_path)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{tmp_path / 'gates' / 'bad.yaml'}:" in done.stderr and message in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_collective_order_hazard_at_world_size_1_does_not_apply(tmp_path: Path) -> None:
    records = launch(tmp_path, ["ok"], [[2, 4]], world=1, hazard="collective-order")
    g = gate(["ok"], [[2, 4]], world=1)
    hazard_gate = Gate(id=g.id, source=g.source, driver=DriverSpec(
        type="cuda-graph", run="tpfactory:build", timeout=30,
        options=tuple(sorted((*g.driver.options, ("hazard", "collective-order"))))))
    outcome = grade(hazard_gate, records)
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "the hazard does not apply to this step: collective-order needs two ranks" in outcome.reason



def test_ranks_do_not_outlive_a_killed_launcher(tmp_path: Path) -> None:
    # the runner kills the launcher at the gate's timeout: its ranks (sessions of their own) must end too
    import signal
    import time

    (tmp_path / "tpfactory.py").write_text(FACTORY)
    ev = tmp_path / "evidence"
    cmd = [sys.executable, "-m", "redfirst.gates.cuda.ranks", "--run", "tpfactory:build", "--variants", '["hang"]',
           "--shapes", "[[2, 4]]", "--world-size", "2", "--tp-size", "2", "--backend", "sim", "--deadline", "60",
           "--timeout", "60"]
    launcher = subprocess.Popen(cmd, cwd=tmp_path, env={**os.environ, "GATES_EVIDENCE": str(ev)},
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 20
    pids: list[int] = []
    while time.monotonic() < deadline and not (tmp_path / "hanging").exists():
        time.sleep(0.1)
    pids = [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit() and _is_rank_of(p, tmp_path)]
    assert len(pids) == 2, "the two ranks never reached the step"
    launcher.send_signal(signal.SIGKILL)
    launcher.wait()
    until = time.monotonic() + 5
    while time.monotonic() < until and any(_alive(pid) for pid in pids):
        time.sleep(0.1)
    left = [pid for pid in pids if _alive(pid)]
    for pid in left:
        os.kill(pid, signal.SIGKILL)
    assert not left, f"ranks {left} outlived their launcher"


def _is_rank_of(proc: Path, tmp_path: Path) -> bool:
    try:
        argv = (proc / "cmdline").read_bytes().split(b"\0")
        return b"redfirst.gates.cuda.rank_child" in argv and Path(os.readlink(proc / "cwd")) == tmp_path
    except OSError:
        return False


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_a_rank_that_exits_0_before_replaying_is_red_naming_it_without_waiting_for_the_deadline(
        tmp_path: Path) -> None:
    import time

    started = time.monotonic()
    outcome, records = graded(tmp_path, ["quit"], deadline=20)
    took = time.monotonic() - started
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert outcome.reason.startswith("rank 1 failed: it exited 0 during capture, before its arms were done"), \
        outcome.reason
    assert _status(records, 0)["ended"] == "stopped after rank 1 ended"   # the peer was not left to the deadline
    assert took < 15, f"{took:.1f} s: the launcher waited for its deadline"


MALFORMED = {
    # what a rank status or arm says is read strictly: a value of the wrong type never reads as a pass
    "exit false": lambda rs: _status(rs, 1).update(exit=False),
    "exit 0.0": lambda rs: _status(rs, 1).update(exit=0.0),
    "exit a string": lambda rs: _status(rs, 1).update(exit="x"),
    "arrived a string": lambda rs: _status(rs, 1).update(arrived="no"),
    "device a string": lambda rs: _status(rs, 1).update(device="sim-rank-1"),
    "ended with exit 0": lambda rs: _status(rs, 1).update(ended="stopped after rank 0 ended"),
    "arm rank a list": lambda rs: _arms(rs, 1)[0].update(rank=[1]),
    "arm device a string": lambda rs: _arms(rs, 1)[0].update(device="sim-rank-1"),
    "arm shape a number": lambda rs: _arms(rs, 1)[0].update(shape=4),
}


@pytest.mark.parametrize("name", sorted(MALFORMED))
def test_malformed_rank_records_are_no_decision_never_green_nor_a_traceback(
        green_records: list[dict[str, Any]], name: str) -> None:
    outcome = grade(gate(["ok"], [[2, 4]]), _bent(green_records, MALFORMED[name]))
    assert outcome.verdict is not Verdict.GREEN, f"{name}: {outcome.reason}"
    assert outcome.verdict is Verdict.NO_DECISION, f"{name}: {outcome.reason}"


def test_a_rank_hazard_written_into_a_strided_output_is_injected_and_killed(tmp_path: Path) -> None:
    # the rank-host-branch hazard writes into the last rank's output: into the output's own bytes, not a copy
    # of them (the copy left the step untouched, and the hazard SURVIVED a gate that catches it)
    (tmp_path / "gates").mkdir()
    (tmp_path / "redfirst.yaml").write_text("gates:\n  paths: [gates]\n")
    (tmp_path / "tpfactory.py").write_text(FACTORY)
    (tmp_path / "gates" / "tp.yaml").write_text(
        "gate: tp\nclaim: the strided output replays equal on every rank\nkind: G1\nrequires: {device: cpu}\n"
        "driver:\n  type: cuda-graph\n  run: 'tpfactory:build'\n  ranks: {world_size: 2, backend: sim}\n"
        "  variants: [transposed]\n  shapes: [[2, 4]]\n  replays: 2\n  warmup: 1\n  timeout: 60\n")
    done = subprocess.run([sys.executable, "-m", "redfirst.mutations.cli", "hazards", "--root", str(tmp_path), "tp",
                           "--hazard", "rank-host-branch", "--json"], capture_output=True, text=True, timeout=120)
    items = json.loads(done.stdout)["items"]
    assert [(i["hazard"], i["verdict"]) for i in items] == [("rank-host-branch", "KILLED")], items
    assert items[0]["reason"].startswith("rank 1: hazard rank-host-branch: transposed [2, 4]: replay 1"), items


def test_an_output_the_harness_cannot_compare_is_error_not_a_red_of_the_step(tmp_path: Path) -> None:
    # the comparison is redfirst's work: its failure is the harness's (ERROR), never the step failing eagerly
    outcome, _ = graded(tmp_path, ["complex"])
    assert outcome.verdict is Verdict.ERROR, outcome.reason
    assert "rank 0: harness failure" in outcome.reason and "complex64" in outcome.reason, outcome.reason


def test_a_rank_that_disagrees_on_applicability_is_red_naming_it_not_its_waiting_peer_as_hung(
        tmp_path: Path) -> None:
    # the last rank skips the step (not applicable) while rank 0 runs it and waits on its collectives:
    # the cause is the disagreement, and rank 0 must not wait for the deadline for a peer that has left
    import time

    started = time.monotonic()
    outcome, _ = graded(tmp_path, ["napp"], deadline=20)
    assert time.monotonic() - started < 15, "rank 0 waited for the deadline"
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert "napp [2, 4]: rank 1 applicability disagreement: applicable=False where rank 0 says True" in \
        outcome.reason, outcome.reason


def test_gates_run_and_regrade_agree_on_a_rank_that_leaves_early_and_one_that_disagrees(tmp_path: Path) -> None:
    (tmp_path / "gates").mkdir()
    (tmp_path / "redfirst.yaml").write_text("gates:\n  paths: [gates]\n")
    (tmp_path / "tpfactory.py").write_text(FACTORY)
    for variant in ("quit", "napp"):
        (tmp_path / "gates" / f"{variant}.yaml").write_text(
            f"gate: {variant}\nclaim: every rank replays equal\nkind: G1\nrequires: {{device: cpu}}\ndriver:\n"
            "  type: cuda-graph\n  run: 'tpfactory:build'\n  ranks: {world_size: 2, backend: sim}\n"
            f"  variants: [{variant}]\n  shapes: [[2, 4]]\n  replays: 2\n  warmup: 1\n  timeout: 60\n")

    def cli(*argv: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, "-m", "redfirst.gates.cli", *argv, "--root", str(tmp_path), "--json"],
                              capture_output=True, text=True, timeout=120)
        assert "Traceback" not in done.stderr, done.stderr
        report: dict[str, Any] = json.loads(done.stdout)
        return report

    items = {i["id"]: i for i in cli("run", "--device", "cpu")["items"]}
    assert items["quit"]["verdict"] == "RED" and items["quit"]["reason"].startswith("rank 1 failed: it exited 0 "
                                                                                    "during capture"), items
    assert items["napp"]["verdict"] == "RED" and "rank 1 applicability disagreement" in items["napp"]["reason"], items
    for item in items.values():
        again = cli("regrade", item["evidence"])["items"][0]
        assert (again["verdict"], again["reason"]) == (item["verdict"], item["reason"])


def test_a_rank_that_hangs_after_its_results_is_red_naming_it(tmp_path: Path) -> None:
    # its arms are all there and GREEN, but the process never ends: a hang, not a pass
    outcome, records = graded(tmp_path, ["linger"], deadline=3)
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert outcome.reason.startswith("rank 1 (in done) hung: the gate's timeout ended every rank"), outcome.reason
    assert _status(records, 0)["exit"] == 0 and _status(records, 1)["ended"] == "timeout"


def test_a_rank_whose_rendezvous_fails_says_so_and_exits_0_never_a_failed_rank(tmp_path: Path) -> None:
    # the rendezvous is redfirst's work: a store it cannot reach is no failure of the step (a traceback
    # and exit 1 read as "rank 0 failed: it exited 1": RED, and KILLED under `mutate hazards`)
    import socket

    (tmp_path / "tpfactory.py").write_text(FACTORY)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]   # closed again below: nothing listens there
    out = tmp_path / "rank-0.jsonl"
    done = subprocess.run([sys.executable, "-m", "redfirst.gates.cuda.rank_child", "--run", "tpfactory:build",
                           "--variants", '["ok"]', "--shapes", "[[2, 4]]", "--rank", "0", "--world-size", "2",
                           "--tp-size", "2", "--backend", "sim", "--store-port", str(port), "--out", str(out)],
                          cwd=tmp_path, env={**os.environ, "REDFIRST_RANK": "0"}, capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert any("cannot reach the rank group's store" in str(x.get("rendezvous")) for x in lines), lines


SWAP = textwrap.dedent('''
    import numpy as np

    class Swap:
        """Two all-reduces of the same size and dtype; on the last rank, of its outputs in the other order."""

        def __init__(self, variant, shape, group):
            self.group, self.variant = group, variant
            self.w = np.random.default_rng(7 + group.rank).standard_normal((shape[1], shape[1])).astype(np.float32)
            self.x, self.a, self.b = (np.zeros(shape, np.float32) for _ in range(3))

        def inputs(self, seed, stream):
            self.x[...] = np.random.default_rng(seed).standard_normal(self.x.shape)

        def __call__(self, stream):
            stream.launch(lambda: np.matmul(self.x, self.w, out=self.a))
            stream.launch(lambda: np.multiply(self.a, 2, out=self.b))
            last = self.group.rank == self.group.world_size - 1
            for t in ((self.b, self.a) if self.variant == "swap" and last else (self.a, self.b)):
                self.group.all_reduce(t, stream)

        def outputs(self):
            return {"a": self.a, "b": self.b}

    def build(variant, shape, group):
        return Swap(variant, shape, group)
''')


def test_equal_size_collectives_in_another_order_on_one_rank_are_red_naming_the_output(tmp_path: Path) -> None:
    # op, size and dtype agree at every position, but rank 1 reduces its outputs in the other order: the ranks
    # sum rank 0's a with rank 1's b, bit for bit the same in eager and replay (it was GREEN)
    records = launch(tmp_path, ["swap"], [[2, 4]], factory=SWAP)
    outcome = grade(gate(["swap"], [[2, 4]]), records)
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert ("rank 1 issued other collectives than rank 0 during capture: collective 0: all_reduce of 8 float32 into "
            "output b where rank 0 issued all_reduce of 8 float32 into output a") in outcome.reason, outcome.reason
