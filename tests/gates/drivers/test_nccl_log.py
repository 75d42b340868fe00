"""NCCL's own log of the collectives it was asked for (redfirst.gates.cuda.nccl_log): every path
into NCCL, not only the `torch.distributed` names the rank child wraps. Seen on an H100 (NCCL
2.28.9): `dist.all_reduce`, `distributed_c10d.all_reduce`, a name imported before the wrapping,
`ProcessGroup.allreduce` and functional collectives all log one line each; a capture logs what it
enqueues, a replay nothing. The lines below are that run's."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from redfirst.gates.cuda.comparator import compare_host
from redfirst.gates.cuda.nccl_log import NcclLog
from redfirst.gates.cuda.ulp import max_ulp
from redfirst.gates.drivers.cuda_graph import grade
from redfirst.gates.model import Gate
from redfirst.verdict import Verdict
from tests.gates.drivers.test_cuda_ranks import gate, launch

SEEN = (b"vm:1089:1089 [0] NCCL INFO NCCL version 2.28.9+cuda13.0\n"
        b"vm:1089:1089 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7fa877400000 recvbuff 0x7fa877400000 count 1024 "
        b"datatype 9 op 0 root 0 comm 0x23554e40 [nranks=1] stream (nil)\n")
CAPTURED = (b"vm:1089:1089 [0] NCCL INFO AllReduce: opCount 0 sendbuff 0x7fa877401000 recvbuff 0x7fa877401000 count "
            b"2048 datatype 7 op 0 root 0 comm 0x23554e40 [nranks=1] stream 0x2ae1b590\n"
            b"vm:1089:1089 [0] NCCL INFO AllGather: opCount 0 sendbuff 0x7fa877401000 recvbuff 0x7fa877800000 count "
            b"2048 datatype 7 op 0 root 0 comm 0x23554e40 [nranks=1] stream 0x2ae1b590\n")


def test_the_collectives_nccl_logged_between_two_marks(tmp_path: Path) -> None:
    log = NcclLog(tmp_path / "nccl-0.log")
    before = log.mark()
    assert before == -1 and log.between(before, log.mark()) is None      # no log: nothing known, never "none"
    log.path.write_bytes(SEEN)
    start = log.mark()
    with open(log.path, "ab") as f:
        f.write(CAPTURED)
    assert log.between(start, log.mark()) == [{"op": "all_reduce", "size": 2048, "dtype": "float32"},
                                              {"op": "all_gather", "size": 2048, "dtype": "float32"}]
    assert log.between(0, start) == [{"op": "all_reduce", "size": 1024, "dtype": "bfloat16"}]
    assert NcclLog.environment(log.path) == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "COLL",
                                             "NCCL_DEBUG_FILE": str(log.path)}


@pytest.fixture(scope="module")
def green(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    return launch(tmp_path_factory.mktemp("green"), ["ok"], [[2, 4]])


def _with_nccl(records: list[dict[str, Any]], per_rank: dict[int, list[dict[str, Any]] | None],
               asked: bool = True) -> list[dict[str, Any]]:
    """`records` with NCCL's log of each rank given; `asked`: after what NCCL logged for the calls the
    wrapped torch.distributed names saw (one line each, as on the H100)."""
    out = json.loads(json.dumps(records))
    for r in out:
        if r["observation"] == "cuda-graph" and per_rank.get(r["rank"]) is not None:
            seen = [{k: e[k] for k in ("op", "size", "dtype")} for p in ("eager", "capture")
                    for e in r["collectives"][p]] if asked else []
            r["collectives"]["nccl"] = seen + per_rank[r["rank"]]
    return out


REDUCE = {"op": "all_reduce", "size": 8, "dtype": "float32"}
GATHER = {"op": "all_gather", "size": 4, "dtype": "float32"}


def test_a_collective_that_escaped_the_wrapped_names_is_compared_from_nccls_own_log(
        green: list[dict[str, Any]]) -> None:
    g = gate(["ok"], [[2, 4]])
    assert grade(g, _with_nccl(green, {0: [REDUCE, REDUCE], 1: [REDUCE, REDUCE]})).verdict is Verdict.GREEN
    # the wrapped torch.distributed names saw the same on both ranks; NCCL was asked otherwise on rank 1
    outcome = grade(g, _with_nccl(green, {0: [REDUCE, REDUCE], 1: [REDUCE, GATHER]}))
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert outcome.reason.startswith("ok [2, 4]: rank 1 issued other collectives than rank 0 during the arm (NCCL's "
                                     "own log): collective 13: all_gather of 4 float32"), outcome.reason
    longer = grade(g, _with_nccl(green, {0: [REDUCE], 1: [REDUCE, REDUCE]}))
    assert longer.verdict is Verdict.RED and "collective 13" in longer.reason, longer.reason


def test_a_rank_without_nccls_log_where_another_has_one_is_no_decision(green: list[dict[str, Any]]) -> None:
    outcome = grade(gate(["ok"], [[2, 4]]), _with_nccl(green, {0: [REDUCE], 1: None}))
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "rank 1 has no log of what NCCL was asked" in outcome.reason


def _ulps_apart(records: list[dict[str, Any]], rank: int, index: int) -> list[dict[str, Any]]:
    """`records` with rank `rank`'s replay `index` 2 ULP from eager in one value (a real host
    comparison), as the child records a replay that differs."""
    ref = np.arange(1, 9, dtype=np.float32) / 7
    cand = ref.view(np.uint32).copy()
    cand[3] += 2
    out = json.loads(json.dumps(records))
    for r in out:
        if r["observation"] == "cuda-graph" and r["rank"] == rank:
            replay = next(c for c in r["comparisons"] if c["phase"] == "replay" and c["index"] == index)
            replay.update(compare_host(ref, cand.view(np.float32), "float32").as_record(),
                          max_ulp=max_ulp(ref.tobytes(), cand.tobytes(), "float32"))
            r.update(failure_class="replay", failure=f"replay {index} output y: 1 differing of 8")
    return out


def _max_ulp(g: Gate, n: int) -> Gate:
    return dataclasses.replace(g, driver=dataclasses.replace(
        g.driver, options=tuple(sorted((*g.driver.options, ("max_ulp", n))))))


def test_a_rank_arm_carrying_a_recapture_is_not_evidence(green: list[dict[str, Any]]) -> None:
    """A rank is never captured twice (its peers would not join the recapture's collectives), so a
    fresh replay's difference on a rank can never be covered by `max_ulp`: a record that says
    otherwise did not come from the rank child."""
    out = _ulps_apart(green, 1, 1)
    for r in out:
        if r["observation"] == "cuda-graph" and r["rank"] == 1:
            replay = next(c for c in r["comparisons"] if c["phase"] == "replay" and c["index"] == 1)
            cand = np.arange(1, 9, dtype=np.float32) / 7
            bits = cand.view(np.uint32).copy()
            bits[3] += 2
            again = compare_host(bits.view(np.float32), bits.view(np.float32), "float32").as_record()
            assert again["reference_hash64"] == replay["candidate_hash64"]
            r["comparisons"].append({"phase": "recapture", "index": 1, "fresh": True, "output": replay["output"],
                                     **again})
    outcome = grade(_max_ulp(gate(["ok"], [[2, 4]]), 2), out)
    assert outcome.verdict is Verdict.NO_DECISION, outcome.reason
    assert "rank 1" in outcome.reason and "recapture" in outcome.reason, outcome.reason


def test_nccls_log_is_compared_whole_on_a_rank_whose_replay_0_max_ulp_covers(green: list[dict[str, Any]]) -> None:
    # rank 1's replay 0 differs within max_ulp (its arm says failure_class "replay", then GREEN) and NCCL
    # was asked for one more collective at its end: the arm ran to its end, so its log is whole
    out = _with_nccl(_ulps_apart(green, 1, 0), {0: [REDUCE], 1: [REDUCE, GATHER]})
    g = _max_ulp(gate(["ok"], [[2, 4]]), 2)
    assert grade(g, _with_nccl(_ulps_apart(green, 1, 0), {0: [REDUCE], 1: [REDUCE]})).verdict is Verdict.GREEN
    outcome = grade(g, out)
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert "rank 1 issued other collectives than rank 0 during the arm (NCCL's own log): collective 13: all_gather" \
        in outcome.reason, outcome.reason


def test_a_group_green_names_each_rank_not_bit_exact(green: list[dict[str, Any]]) -> None:
    # rank 1 within max_ulp, rank 0 bit-exact: the group's GREEN must not read as bit-exact
    outcome = grade(_max_ulp(gate(["ok"], [[2, 4]]), 2), _ulps_apart(green, 1, 0))
    assert outcome.verdict is Verdict.GREEN, outcome.reason
    assert "rank 1: ok [2, 4]: replay 0 within 2 ULP of eager (largest 2 ULP; not bit-exact)" in outcome.reason, \
        outcome.reason


def test_a_log_nccl_opened_during_the_arm_is_read_from_its_start(tmp_path: Path) -> None:
    # torch may start NCCL lazily, at the first collective: the log appears inside the first arm
    log = NcclLog(tmp_path / "nccl-0.log")
    start = log.mark()
    log.path.write_bytes(SEEN + CAPTURED)
    assert log.between(start, log.mark()) == [{"op": "all_reduce", "size": 1024, "dtype": "bfloat16"},
                                              {"op": "all_reduce", "size": 2048, "dtype": "float32"},
                                              {"op": "all_gather", "size": 2048, "dtype": "float32"}]


def test_a_long_log_is_kept_so_that_ranks_agree_only_where_their_whole_logs_do(green: list[dict[str, Any]]) -> None:
    mine = [REDUCE] * 1100
    theirs = list(mine)
    theirs[1050] = GATHER                      # past the first 1024 the record keeps
    g = gate(["ok"], [[2, 4]])
    assert grade(g, _with_nccl(green, {0: NcclLog.kept(mine), 1: NcclLog.kept(list(mine))}, asked=False)).verdict \
        is Verdict.GREEN
    outcome = grade(g, _with_nccl(green, {0: NcclLog.kept(mine), 1: NcclLog.kept(theirs)}, asked=False))
    assert outcome.verdict is Verdict.RED, outcome.reason
    assert "collective 1024: 76 more collectives (sha256:" in outcome.reason, outcome.reason


def test_a_rank_whose_nccl_log_is_unread_or_holds_less_than_it_was_asked_is_no_decision(
        green: list[dict[str, Any]]) -> None:
    # the code under test set NCCL_DEBUG=WARN (no log at all) or NCCL_DEBUG_SUBSYS=INIT (an empty one)
    # before NCCL started, then issued its collectives by a path the wrapped names do not see
    g = gate(["ok"], [[2, 4]])
    unread = grade(g, _with_nccl(green, {0: NcclLog.kept(None), 1: NcclLog.kept(None)}, asked=False))
    assert unread.verdict is Verdict.NO_DECISION, unread.reason
    assert "rank 0: NCCL wrote no log of the collectives it was asked for" in unread.reason, unread.reason
    empty = grade(g, _with_nccl(green, {0: [], 1: []}, asked=False))
    assert empty.verdict is Verdict.NO_DECISION, empty.reason
    assert "rank 0: NCCL logged 0 collectives where torch.distributed was asked for 12" in empty.reason, empty.reason
