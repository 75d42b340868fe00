"""The agents-record preset on the real `.agents/` record of mudler/vllm.cpp at d85906ae."""

from __future__ import annotations

import re
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

ENGINE = ".agents/engine-matrix.md"


@pytest.fixture
def snapshot(corpus: Path, new_repo) -> Callable[[Callable[[Path], None] | None], Path]:
    """A shallow (depth 1) clone of a repository holding the snapshot, optionally mutated and committed.

    The corpus has no history, so its closing commits are absent; a depth-1 clone is how a CI
    checkout presents such a tree, and makes 'is the commit in history' undecidable, not false."""

    def make(mutate: Callable[[Path], None] | None = None) -> Path:
        src = new_repo("source")
        shutil.copytree(corpus / "snapshot-d85906ae", src.path, dirs_exist_ok=True)
        for p in src.path.rglob("*"):
            if p.is_file():
                p.chmod(0o644)
        src.commit("snapshot d85906ae", {"redfirst.yaml": "checkers:\n  preset: agents-record\n"})
        if mutate:
            mutate(src.path)
            src.commit("mutation")
        clone = new_repo("clone-parent").path / "clone"
        src.git("clone", "-q", "--depth", "1", f"file://{src.path}", str(clone))
        return clone

    return make


def _findings(doc: dict) -> list[dict]:
    return [f for item in doc["items"] for f in item["findings"]]


def test_clean_snapshot_counts_110_rows_reports_no_finding_and_names_missing_inputs(snapshot, cli):
    root = snapshot(None)
    rc, doc = cli.json("run", "--root", str(root))
    assert _findings(doc) == []
    assert rc == 3 and doc["exit"] == 3
    items = {i["id"]: i for i in doc["items"]}
    assert items[f"matrices:{ENGINE}"]["counts"]["rows"] == 110
    assert items[f"matrices:{ENGINE}"]["counts"]["active"] == 10
    # The snapshot keeps one matrix, the claims and the baseline: the preset's other matrices, its doc
    # checkpoint (no docs/BENCHMARKS.md) and its scripts are not this tree's rules, so they are off.
    assert set(items) == {f"matrices:{ENGINE}", "matrices:claims:.agents/coordination.md", "trailers",
                          "ratchets:scripts/device-leakage-baseline.json", "matrices:required", "matrices:references"}
    assert items["matrices:required"]["counts"]["files"] == 2  # its REQUIRED files the snapshot keeps
    assert items["matrices:claims:.agents/coordination.md"]["verdict"] == "GREEN"
    undecided = {i["id"] for i in doc["items"] if i["verdict"] == "NO_DECISION"}
    # no source to count, no commits to judge, and what the record cites (the ledger, the closing
    # commits, the script stating the row count, the linked specs) is not in a snapshot
    assert undecided == {f"matrices:{ENGINE}", "trailers", "ratchets:scripts/device-leakage-baseline.json"}
    assert "judges commits" in items["trailers"]["reason"]
    engine_rules = {u["rule"]: u["missing"] for u in items[f"matrices:{ENGINE}"]["undecided"]}
    assert "scripts/check-agent-record.py" in engine_rules["row-count"]
    assert "6ea7856" in engine_rules["done-commit-in-history"]
    assert ".agents/specs/async-serving.md" in engine_rules["spec-link"]
    rc, out, _ = cli("run", "--root", str(root), "--allow-no-decision")
    assert rc == 0
    assert "check-agent-record.py" in out and "NO_DECISION" in out
    assert "green" not in out.splitlines()[-1].lower().replace("3 green", "")  # claims, required files, references


def _observed_block(corpus: Path, title: str) -> list[str]:
    text = (corpus / "observed-outputs.txt").read_text()
    block = text.split(title, 1)[1].split("rc=", 1)[0]
    return [line[len("ERROR: "):] for line in block.splitlines() if line.startswith("ERROR: ")]


def _flip_row_70(root: Path) -> None:
    path = root / ENGINE
    lines = path.read_text().split("\n")
    assert lines[69].startswith("| `ENG-MOE-SHARED-AUX`")
    lines[69] = lines[69].replace("| `ACTIVE` | `CLAIM-MOE-SHARED-AUX-1` |", "| `DONE` | `CLAIM-MOE-SHARED-AUX-1` |")
    path.write_text("\n".join(lines))


def test_flipping_one_row_active_to_done_gives_the_observed_findings(snapshot, cli, corpus):
    rc, doc = cli.json("run", "--root", str(snapshot(_flip_row_70)))
    assert rc == 1
    found = _findings(doc)
    observed = _observed_block(corpus, "NEGATIVE MUTATION 2")
    assert len(observed) == 6
    for line in observed:
        if m := re.search(r"summary (\w+)=(\d+); actual (\d+)", line):
            expect = [f for f in found if f"summary {m[1]}={m[2]}; actual {m[3]}" in f["message"]]
        elif "test/evidence anchor" in line:
            expect = [f for f in found if f["rule"] == "test-anchor" and f["line"] == 70]
        elif "parity-ledger link" in line:
            expect = [f for f in found if f["rule"] == "done-ledger-link" and f["line"] == 70]
        elif "hexadecimal closing commit" in line:
            expect = [f for f in found if f["rule"] == "done-closing-commit" and f["line"] == 70]
        else:
            m = re.search(r"(CLAIM-\S+) references (\S+) in state DONE", line)
            assert m, line
            expect = [f for f in found if f["file"] == ".agents/coordination.md" and f["line"] == 339
                      and f"{m[1]} references {m[2]} in state DONE" in f["message"]]
        assert expect, f"no finding equivalent to observed: {line}"
    assert len(found) == 6


def test_flipping_the_summary_header_is_caught(snapshot, cli, corpus):
    def flip_first_active(root: Path) -> None:
        path = root / ENGINE
        text = path.read_text()
        assert text.index("`ACTIVE`") > text.index("| Area |")  # the first one sits in the summary header
        path.write_text(text.replace("`ACTIVE`", "`DONE`", 1))

    rc, doc = cli.json("run", "--root", str(snapshot(flip_first_active)))
    assert rc == 1
    (observed,) = _observed_block(corpus, "NEGATIVE MUTATION 1")
    m = re.search(r"summary (\w+)=(\d+); actual (\d+)", observed)
    assert m
    messages = [f["message"] for f in _findings(doc)]
    assert any(f"summary {m[1]}={m[2]}; actual {m[3]}" in msg for msg in messages), messages
    assert any("no `ACTIVE` column" in msg for msg in messages)


def test_a_spec_section_emptied_to_a_placeholder_is_red(snapshot, cli):
    def empty_gates(root: Path) -> None:
        path = root / ".agents/specs/serve-tcp-nodelay.md"
        text = path.read_text()
        head, rest = text.split("## Gates\n", 1)
        path.write_text(head + "## Gates\n\nTBD\n\n## " + rest.split("\n## ", 1)[1])

    rc, doc = cli.json("run", "--root", str(snapshot(empty_gates)), "--only", "matrices")
    assert rc == 1
    found = _findings(doc)
    # judged through the READY-or-later row that links the spec and names it, as vllm.cpp's script does
    assert found and {(f["file"], f["rule"]) for f in found} == {(".agents/specs/serve-tcp-nodelay.md", "spec-section")}
    assert all("`Gates`" in f["message"] for f in found)


@pytest.fixture
def history(corpus: Path, tmp_path: Path) -> Path:
    """The whole vllm.cpp repository from the corpus tarball, cloned without a checkout (checkers
    read commits, not a working tree)."""
    import subprocess
    import tarfile

    work = tmp_path / "vllmcpp"
    with tarfile.open(corpus / "vllm.cpp.git.tar.gz") as tar:
        tar.extractall(work, filter="data")
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(work / "repo"), str(work / "clone")], check=True)
    (work / "preset.yaml").write_text("checkers:\n  preset: agents-record\n", encoding="utf-8")
    return work


def test_the_preset_on_real_history_reports_what_vllm_cpps_own_checkers_report(history: Path, cli):
    clone, preset = str(history / "clone"), str(history / "preset.yaml")
    rc, doc = cli.json("run", "--root", clone, "--base", "d85906ae~3", "--head", "d85906ae", "--config", preset)
    items = {i["id"]: i for i in doc["items"]}
    counts = {k: items[f"matrices:.agents/{k}-matrix.md"]["counts"]["rows"]
              for k in ("engine", "model", "quantization", "kernel", "backend")}
    # `agent record OK: ENGINE=110 MODEL=326 QUANT=82 KERNEL=34 BACKEND=57`, counts read from its script
    assert counts == {"engine": 110, "model": 326, "quantization": 82, "kernel": 34, "backend": 57}
    assert all(items[k]["verdict"] == "GREEN" for k in items if k.startswith("matrices:")), doc
    ratchet = items["ratchets:scripts/device-leakage-baseline.json"]
    assert ratchet["verdict"] == "GREEN"  # `kcuda=0, is_cuda=0, cuda_inc=0, vt_ifdef=32 -> total 32`
    assert {k: ratchet["counts"][k] for k in ("kcuda", "is_cuda", "cuda_inc", "vt_ifdef")} == \
        {"kcuda": 0, "is_cuda": 0, "cuda_inc": 0, "vt_ifdef": 32}
    assert items["trailers"]["verdict"] == "GREEN"
    # check-doc-checkpoint.py on this range: d85906ae touches the ledger and state but not README.md
    (checkpoint,) = [f for f in _findings(doc) if f["rule"] == "doc-checkpoint"]
    assert checkpoint["file"] == "commit d85906ae5896" and "README.md" in checkpoint["message"]
    assert len(_findings(doc)) == 1 and rc == 1
    # its scripts read a working tree; a clone without a checkout has none at the head
    assert {items[k]["verdict"] for k in items if k.startswith("script:")} == {"NO_DECISION"}


def test_the_protocol_tag_job_on_a_real_pr_range(history: Path, cli):
    clone, preset = str(history / "clone"), str(history / "preset.yaml")
    rc, doc = cli.json("run", "--root", clone, "--base", "da933828", "--head", "954a3c56", "--config", preset,
                       "--only", "trailers")
    found = _findings(doc)
    assert rc == 1 and len(found) == 1 and found[0]["rule"] == "message-required"
