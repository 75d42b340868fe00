"""`mutate --shard K/N`: the spec is 1-based and checked, the partition is deterministic and
complete, and a shard's JSON report carries what `mutate merge` needs to prove coverage."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mutate_helpers import git, mutate, write

from redfirst.mutations.selection import UsageError
from redfirst.mutations.shard import parse_spec, partition

MUTATIONS = '''\
- mutation: add-minus
  file: calc/__init__.py
  anchor: "return a + b"
  replace: "return a - b"
  expect: {red: [add]}
- mutation: sub-plus
  file: calc/__init__.py
  anchor: "return a - b"
  replace: "return a + b"
  expect: {red: [sub]}
- mutation: clamp-x
  file: calc/__init__.py
  anchor: "    return x\\n"
  replace: "    return lo\\n"
  expect: {red: [clamp]}
'''


@pytest.mark.parametrize("spec", ["0/2", "3/2", "1/0", "0/0", "-1/2", "a/b", "1", "1/", "/2", "1/2/3", ""])
def test_a_bad_shard_spec_is_a_usage_error_exit_2(repo: Path, spec: str):
    write(repo, "mutations/m.yaml", MUTATIONS)
    proc = mutate(repo, f"--shard={spec}", "--json")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"--shard {spec!r}" in proc.stderr
    assert json.loads(proc.stdout)["exit"] == 2
    with pytest.raises(UsageError):
        parse_spec(spec)


def test_spec_is_one_based():
    assert (parse_spec("1/1").index, parse_spec("1/1").count) == (1, 1)
    assert str(parse_spec(" 4/4 ")) == "4/4"


@settings(max_examples=200, deadline=None)
@given(ids=st.lists(st.text("abcdefgh-0123", min_size=1, max_size=6), unique=True, max_size=40),
       count=st.integers(1, 9), seed=st.integers(0, 1000),
       timed=st.booleans())
def test_every_id_lands_in_exactly_one_shard_whatever_the_order(ids: list[str], count: int, seed: int,
                                                                 timed: bool):
    durations = {i: float(len(i) * 3 % 7) for i in ids[::2]} if timed else None
    parts = partition(ids, count, durations)
    assert len(parts) == count
    flat = [i for p in parts for i in p]
    assert sorted(flat) == sorted(ids)
    shuffled = ids[:]
    random.Random(seed).shuffle(shuffled)
    assert partition(shuffled, count, durations) == parts   # independent of discovery order


def test_without_durations_the_deal_is_round_robin_over_sorted_ids():
    assert partition(["f", "b", "d", "a", "e", "c"], 2) == [["a", "c", "e"], ["b", "d", "f"]]


def test_durations_balance_the_shards():
    durations = {"a": 10.0, "b": 9.0, "c": 1.0, "d": 1.0, "e": 1.0, "f": 1.0}
    # round robin would give [a, c, e] = 12 and [b, d, f] = 11; longest first gives 11 / 12 too,
    # but with a dominant mutation the heavy one stands alone:
    heavy = {"a": 30.0, "b": 1.0, "c": 1.0, "d": 1.0}
    assert partition(list(heavy), 2, heavy) == [["a"], ["b", "c", "d"]]
    loads = [sum(durations[i] for i in p) for p in partition(list(durations), 2, durations)]
    assert max(loads) - min(loads) <= 1.0


def test_a_shard_report_carries_tree_selection_spec_baseline_and_version(repo: Path):
    write(repo, "mutations/m.yaml", MUTATIONS)
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "mutations")
    proc = mutate(repo, "--shard", "1/2", "--json", "--no-cache")
    doc = json.loads(proc.stdout)
    shard = doc["shard"]
    assert shard["spec"] == "1/2" and (shard["index"], shard["count"]) == (1, 2)
    assert shard["tree"]["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert len(shard["tree"]["mutation_files"]) == 64 and len(shard["tree"]["tree"]) == 64
    assert shard["selection"]["ids"] == ["add-minus", "sub-plus", "clamp-x"]   # the files' order
    assert len(shard["selection"]["hash"]) == 64
    assert shard["assigned"] == ["add-minus", "sub-plus"]
    assert [i["id"] for i in doc["items"]] == ["add-minus", "sub-plus"]
    assert {g["gate"]: g["verdict"] for g in shard["baseline"]["gates"]} == {"add": "GREEN", "sub": "GREEN"}
    from redfirst import __version__
    assert shard["version"] == __version__
    assert proc.returncode == 0, proc.stderr
    other = json.loads(mutate(repo, "--shard", "2/2", "--json", "--no-cache", "-n", "2").stdout)["shard"]
    assert other["assigned"] == ["clamp-x"]
    assert other["selection"] == shard["selection"] and other["tree"] == shard["tree"]


def test_a_shard_that_gets_no_mutation_still_reports_its_part(repo: Path):
    write(repo, "mutations/m.yaml", MUTATIONS)
    proc = mutate(repo, "--shard", "4/4", "--json")
    doc = json.loads(proc.stdout)
    assert proc.returncode == 3 and doc["exit"] == 3
    assert doc["items"] == [] and doc["shard"]["assigned"] == [] and doc["shard"]["spec"] == "4/4"
    assert len(doc["shard"]["selection"]["ids"]) == 3


def test_durations_need_a_shard_and_a_readable_report(repo: Path, tmp_path: Path):
    write(repo, "mutations/m.yaml", MUTATIONS)
    proc = mutate(repo, "--durations", "cache", "--json")
    assert proc.returncode == 2 and "--durations balances --shard" in proc.stderr
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    proc = mutate(repo, "--shard", "1/2", "--durations", str(bad), "--json")
    assert proc.returncode == 2 and f"--durations {bad}" in proc.stderr


def test_a_report_balances_the_partition_and_is_named_in_the_shard_section(tmp_path: Path):
    from redfirst.mutations.shard import durations_digest, read_durations

    report = tmp_path / "last.json"
    report.write_text(json.dumps({"items": [{"id": "a", "seconds": 30.0}, {"id": "b", "seconds": 1.0},
                                            {"id": "c", "seconds": 1.0, "cached": True}, {"id": "d", "seconds": 1}]}))
    durations = read_durations(report)
    assert durations == {"a": 30.0, "b": 1.0, "d": 1.0}            # a cached result's seconds are no run time
    assert partition(["a", "b", "c", "d"], 2, durations) == [["a"], ["b", "c", "d"]]
    assert durations_digest(["a", "b"], durations) != durations_digest(["a", "b"], None) is None
