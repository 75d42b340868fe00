"""The agents-record preset end to end on a record this project writes (agents_fixture.py), in the
`.agents/` layout of vllm.cpp: runs on a fresh clone, with no corpus beside it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.checkers import agents_fixture as fx

ROOT = Path(__file__).resolve().parents[2]

GOOD_MESSAGE = "docs(agents): index issue 3\n\nIssue 3 is the scheduler row.\n\nFOLLOWING_AGENTS_PROTOCOL\n"


def _findings(doc: dict) -> list[dict]:
    return [f for item in doc["items"] for f in item["findings"]]


def _feature(repo, files: dict[str, str], message: str = GOOD_MESSAGE) -> None:
    fx.build(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit(message, files)


def _appended_index() -> str:
    return fx.index() + "| #3 | scheduler | ENG-1 |\n"


def test_a_good_change_to_the_record_is_green_on_every_checker(repo, cli):
    _feature(repo, {fx.INDEX: _appended_index()})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert _findings(doc) == [] and rc == 0, [(i["id"], i["verdict"], i["reason"]) for i in doc["items"]]
    items = {i["id"]: i for i in doc["items"]}
    assert items[f"matrices:{fx.ENGINE}"]["counts"]["rows"] == 110
    assert items[f"matrices:{fx.ENGINE}"]["counts"]["done"] == 1
    # matrices (5, the claims, the required files and the row ids coordination.md names), trailers, the doc checkpoint, the ratchet, and the
    # index the project added beside the preset; the preset's scripts are absent here, so that checker is off
    assert len(items) == 12 and {i["verdict"] for i in doc["items"]} == {"GREEN"}, sorted(items)
    assert not any(i.startswith("script") for i in items)


def test_flipping_the_active_row_to_done_breaks_every_done_obligation_and_the_claim(repo, cli):
    fx.build(repo)
    engine = (repo.path / fx.ENGINE).read_text()
    row = next(line for line in engine.split("\n") if line.startswith(f"| `{fx.ACTIVE_ROW}`"))
    repo.commit("docs(agents): close the row\n\nIt is done.\n\nFOLLOWING_AGENTS_PROTOCOL\n",
                {fx.ENGINE: engine.replace(row, row.replace("`ACTIVE`", "`DONE`"))})
    rc, doc = cli.json("run", "--root", str(repo.path), "--only", "matrices")
    assert rc == 1
    line = engine.split("\n").index(row) + 1
    rules = sorted((f["rule"], f["line"]) for f in _findings(doc) if f["file"] == fx.ENGINE)
    total = engine.split("\n").index(next(x for x in engine.split("\n") if x.startswith("| **Total**"))) + 1
    assert rules == sorted([("done-closing-commit", line), ("done-ledger-link", line), ("test-anchor", line),
                            ("code-anchor", line), ("summary", total), ("summary", total)])
    (claim,) = [f for f in _findings(doc) if f["file"] == ".agents/coordination.md"]
    assert claim["rule"] == "claim-state" and f"{fx.ACTIVE_ROW} in state DONE" in claim["message"]


def test_an_emptied_spec_section_is_red_for_each_row_that_links_it(repo, cli):
    _feature(repo, {fx.SPEC: fx.spec().replace("`ctest -R Engine` passes on the CPU box.", "TBD")})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")
    assert rc == 1
    found = _findings(doc)
    assert {(f["file"], f["rule"]) for f in found} == {(fx.SPEC, "spec-section")}
    assert len(found) == 3 and all("`Gates`" in f["message"] for f in found)  # the ACTIVE, READY and DONE rows


def test_an_old_index_row_rewritten_with_a_u2028_is_red(repo, cli):
    rewritten = fx.index().replace("| #1 | async serving |", "| #1 | async\u2028serving |")
    _feature(repo, {fx.INDEX: rewritten})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "append_only")
    assert rc == 1
    (f,) = _findings(doc)
    assert (f["file"], f["line"]) == (fx.INDEX, 7)


def test_the_matrix_as_a_link_to_a_passing_copy_is_red(repo, cli):
    fx.build(repo)
    repo.git("checkout", "-q", "-b", "feature")
    text = (repo.path / fx.ENGINE).read_text()
    blob = repo.git("hash-object", "-w", "--stdin", input=text).strip()
    repo.git("rm", "-q", "--cached", fx.ENGINE)
    repo.git("update-index", "--add", "--cacheinfo", f"120000,{blob},{fx.ENGINE}")
    repo.git("commit", "-q", "-m", GOOD_MESSAGE)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")
    assert rc == 1
    assert [f["rule"] for f in _findings(doc) if f["file"] == fx.ENGINE] == ["blob-mode"]


def test_a_commit_without_the_protocol_tag_is_red(repo, cli):
    _feature(repo, {fx.INDEX: _appended_index()}, "docs(agents): index issue 3\n\nWhy.\n")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "trailers")
    assert rc == 1
    assert [f["rule"] for f in _findings(doc)] == ["message-required"]


def _lane(tmp_path, corpus: str | None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("REDFIRST_CORPUS", "PYTEST_XDIST_WORKER")}
    if corpus is not None:
        env["REDFIRST_CORPUS"] = corpus
    return subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:xdist", "-p", "no:randomly",
                           "tests/checkers/test_agents_record_corpus.py", "--basetemp", str(tmp_path / "bt")],
                          cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_corpus_lane_is_skipped_unset_and_fails_when_set_to_a_folder_without_it(tmp_path):
    unset = _lane(tmp_path, None)
    assert unset.returncode == 0 and "6 skipped" in unset.stdout, unset.stdout + unset.stderr
    missing = _lane(tmp_path, str(tmp_path / "no-corpus-here"))
    assert missing.returncode == 1 and "6 errors" in missing.stdout, missing.stdout + missing.stderr
    assert "no vllm.cpp corpus there" in missing.stdout
