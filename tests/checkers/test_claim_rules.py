"""The claim rules of vllm.cpp's check-agent-record.py (`check_row_contracts`, `parse_active_claims`) that
the agents-record preset restates in `matrices` claims: a claim names at least one row, a claim is
listed once, and a SPIKE/ACTIVE row's CLAIM-* owner claims that row. Each was GREEN under the preset
before (issue 34 item 7; the first fired on vllm.cpp's own history at f61cc8ba). On the record this
project writes (agents_fixture.py), real git, the real CLI."""

from __future__ import annotations

from tests.checkers import agents_fixture as fx

COORD = ".agents/coordination.md"
CLAIMS = f"matrices:claims:{COORD}"
MESSAGE = "docs(agents): {what}\n\nWhy.\n\nFOLLOWING_AGENTS_PROTOCOL\n"
HEAD = "# Coordination\n\n| Claim | Row IDs | Who | Since |\n|---|---|---|---|\n"


def run(repo, cli, what: str, files: dict[str, str]) -> tuple[int, dict]:
    fx.build(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit(MESSAGE.format(what=what), files)
    return cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")


def findings(doc: dict, check_id: str = CLAIMS) -> list[dict]:
    return [f for i in doc["items"] if i["id"] == check_id for f in i["findings"]]


def line_of(text: str, needle: str) -> int:
    return next(n for n, line in enumerate(text.split("\n"), 1) if needle in line)


def test_a_claim_naming_the_row_in_plain_text_is_green(repo, cli):
    coord = HEAD + f"| `CLAIM-ASYNC-1` | {fx.ACTIVE_ROW} (the async step) | agent-a | 2026-07-01 |\n"
    rc, doc = run(repo, cli, "plain id", {COORD: coord})
    assert rc == 0, [(i["id"], i["findings"], i["reason"]) for i in doc["items"]]


def test_a_claim_naming_no_row_is_red_at_its_line(repo, cli):
    coord = fx.coordination() + "| `CLAIM-DOCS` | docs-only: fold the bench notes into a spec | agent-b | 2026-07-02 |\n"
    rc, doc = run(repo, cli, "docs claim", {COORD: coord})
    assert rc == 1
    (finding,) = findings(doc)
    assert finding["rule"] == "claim-empty" and finding["line"] == line_of(coord, "CLAIM-DOCS")
    assert "CLAIM-DOCS" in finding["message"]


def test_a_claim_listed_twice_is_red_at_the_second(repo, cli):
    coord = fx.coordination() + f"| `CLAIM-ASYNC-1` | `{fx.ACTIVE_ROW}` | agent-b | 2026-07-02 |\n"
    rc, doc = run(repo, cli, "claim twice", {COORD: coord})
    assert rc == 1
    (finding,) = findings(doc)
    assert finding["rule"] == "claim-duplicate" and finding["line"] == len(coord.split("\n")) - 1
    assert f"{COORD}:{line_of(coord, 'CLAIM-ASYNC-1')}" in finding["message"]


def test_an_active_row_whose_owner_claim_does_not_list_it_is_red_at_the_row(repo, cli):
    """The row says CLAIM-ASYNC-1 owns it; coordination.md has that claim on another row only."""
    coord = HEAD + "| `CLAIM-ASYNC-1` | `ENG-1` | agent-a | 2026-07-01 |\n" \
                   f"| `CLAIM-OTHER` | `{fx.ACTIVE_ROW}` | agent-b | 2026-07-01 |\n"
    rc, doc = run(repo, cli, "move the claim", {COORD: coord})
    assert rc == 1
    found = sorted((f["rule"], f["file"]) for f in findings(doc))
    # ENG-1 is INVENTORIED: the claim on it is the existing claim-state finding; the row's owner is the new one
    assert ("owner-claim", fx.ENGINE) in found and ("claim-state", COORD) in found, found
    (owner,) = [f for f in findings(doc) if f["rule"] == "owner-claim"]
    engine_text = (repo.path / fx.ENGINE).read_text()
    assert owner["line"] == line_of(engine_text, f"| `{fx.ACTIVE_ROW}`")
    assert "CLAIM-ASYNC-1" in owner["message"] and fx.ACTIVE_ROW in owner["message"]


def test_an_active_row_whose_owner_claim_is_absent_is_red(repo, cli):
    rc, doc = run(repo, cli, "drop the claim", {COORD: HEAD + "| `CLAIM-OTHER` | `ENG-1` | agent-b | 2026-07-01 |\n"})
    assert rc == 1
    rules = sorted(f["rule"] for f in findings(doc))
    assert rules == ["claim-state", "owner-claim"], rules


def test_a_claim_naming_only_rows_of_a_matrix_the_tree_lacks_is_not_empty(repo, cli):
    """The preset's matrices this tree does not keep are off (a snapshot keeps one); a claim on their
    rows still names row ids."""
    fx.build(repo)
    repo.git("rm", "-q", ".agents/model-matrix.md")
    repo.commit(MESSAGE.format(what="no model matrix here"))
    repo.git("checkout", "-q", "-b", "feature")
    coord = fx.coordination() + "| `CLAIM-MODELS` | `MODEL-3`, `MODEL-4` | agent-b | 2026-07-02 |\n"
    repo.commit(MESSAGE.format(what="claim model rows"), {COORD: coord})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")
    assert findings(doc) == [] and rc == 0, [(i["id"], i["findings"], i["reason"]) for i in doc["items"]]


STRAY = "\nClaims below were added after a note; vllm.cpp's script reads every `| `CLAIM-` line.\n\n"


def test_a_claim_row_below_prose_after_the_table_still_claims_its_row(repo, cli):
    coord = HEAD + "| `CLAIM-OTHER` | `ENG-2` | agent-b | 2026-07-01 |\n" + STRAY + \
        f"| `CLAIM-ASYNC-1` | `{fx.ACTIVE_ROW}` | agent-a | 2026-07-01 |\n"
    rc, doc = run(repo, cli, "claim below a note", {COORD: coord})
    rules = sorted(f["rule"] for f in findings(doc))
    assert rules == ["claim-state"], rules  # ENG-2 is INVENTORIED; SERVE-ASYNC-1 is claimed by its owner


def test_a_claim_row_below_prose_is_judged_like_one_in_the_table(repo, cli):
    coord = fx.coordination() + STRAY + "| `CLAIM-STRAY` | `ENG-3` | agent-c | 2026-07-03 |\n" \
        "| `CLAIM-NONE` | docs only | agent-c | 2026-07-03 |\n"
    rc, doc = run(repo, cli, "stray claims", {COORD: coord})
    assert rc == 1
    found = sorted((f["rule"], f["line"]) for f in findings(doc))
    assert found == [("claim-empty", line_of(coord, "CLAIM-NONE")), ("claim-state", line_of(coord, "CLAIM-STRAY"))]


def test_deleting_a_canonical_record_file_is_red(repo, cli):
    """check-agent-record.py fails when a file of its REQUIRED list is missing; the preset names them."""
    fx.build(repo)
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "docs/BENCHMARKS.md")
    repo.commit(MESSAGE.format(what="drop the benchmarks page"))
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")
    assert rc == 1
    (finding,) = findings(doc, "matrices:required")
    assert finding["rule"] == "required-removed" and finding["file"] == "docs/BENCHMARKS.md"


def test_a_table_line_with_a_pipe_too_many_is_red_in_a_matrix_and_in_the_claims(repo, cli):
    """check_table_shapes: each `|` line has the pipe count of the first line of its table."""
    fx.build(repo)
    repo.git("checkout", "-q", "-b", "feature")
    engine = (repo.path / fx.ENGINE).read_text()
    row = next(x for x in engine.split("\n") if x.startswith("| `ENG-2`"))
    coord = fx.coordination() + "| `CLAIM-X` | `ENG-1` | a | b | extra |\n"
    repo.commit(MESSAGE.format(what="shapes"), {fx.ENGINE: engine.replace(row, row + " stray |"), COORD: coord})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main", "--only", "matrices")
    assert rc == 1
    shapes = sorted((f["file"], f["line"]) for i in doc["items"] for f in i["findings"] if f["rule"] == "table-shape")
    assert shapes == sorted([(fx.ENGINE, line_of(engine, "| `ENG-2`")), (COORD, line_of(coord, "CLAIM-X"))])


def test_a_row_id_in_the_coordination_prose_that_is_no_row_is_red(repo, cli):
    """check_roadmap: every backticked row id in roadmap_v1.md and coordination.md is a row."""
    coord = fx.coordination() + "\nNext: `ENG-99` after `ENG-1`, then `W2` (a work item, not a row id).\n"
    rc, doc = run(repo, cli, "mention a row", {COORD: coord})
    assert rc == 1
    (finding,) = [f for i in doc["items"] for f in i["findings"]]
    assert (finding["rule"], finding["file"], finding["line"]) == ("unknown-row", COORD, line_of(coord, "ENG-99"))
