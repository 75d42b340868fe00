"""specs, matrices, doc_checkpoint, symbol_anchors, caps, ratchets, env_documented on small real repositories."""

from __future__ import annotations

import json
import textwrap

import pytest


def _yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip()


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


SPEC_POLICY = _yaml("""
    checkers:
      specs:
        - {glob: "specs/*.md", sections: [Scope, Gates, Risks/decisions]}
    """)
SPEC_OK = "# S\n\n## Scope\n\nRows ENG-A.\n\n## Gates\n\n`make test`\n\n## Risks and decisions\n\nNone taken yet, see ENG-A.\n"


def test_spec_with_real_sections_is_green(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": SPEC_OK})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out


def test_spec_missing_section_or_placeholder_is_red(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY,
                         "specs/a.md": SPEC_OK.replace("## Gates\n\n`make test`", "## Gates\n\nTBD"),
                         "specs/b.md": SPEC_OK.replace("## Scope\n\nRows ENG-A.\n\n", "")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    got = {(f["file"], f["rule"], f["line"]) for f in _findings(doc)}
    assert got == {("specs/a.md", "spec-content", 7), ("specs/b.md", "spec-section", 1)}


def test_placeholders_in_other_dress_are_not_content(repo, cli):
    bodies = ["(TBD)", "[TBD]", "<TBD>", "TODO: fill in", "TBD - later", "To be determined.", "WIP",
              "- TBD\n- TBD", "### Details\n", "TBD\n\nTODO"]
    files = {f"specs/p{i}.md": SPEC_OK.replace("`make test`", body) for i, body in enumerate(bodies)}
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/ok.md": SPEC_OK, **files})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert sorted(f["file"] for f in _findings(doc, "spec-content")) == sorted(files)


def test_no_spec_file_is_no_decision(repo, cli):
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 3 and "no file matches specs/*.md" in out


MATRIX_POLICY = _yaml("""
    checkers:
      matrices:
        states: [INVENTORIED, READY, ACTIVE, DONE]
        columns: {evidence: Evidence}
        files:
          - path: m.md
            id_pattern: "X-[A-Z]+"
            rows: 3
            summary: {first_column: Area, rows_column: Rows, total_row: Total}
        obligations:
          - {rule: spec-link, states: [READY, ACTIVE, DONE], column: spec, spec_link: "specs/.*\\\\.md$", names_row: true}
          - {rule: done-evidence, states: [DONE], column: evidence, pattern: "tests/\\\\S+:\\\\d+", message: "a test anchor"}
          - {rule: done-commit, states: [DONE], column: owner, commit: true}
        claims:
          - {path: claims.md, table: Claim, rows_column: Rows, states: [ACTIVE]}
    """)


def _matrix(rows: list[str], summary: str = "| One | 3 | 1 | 1 | 1 | 0 |") -> str:
    return "\n".join([
        "# M", "", "| Area | Rows | `INVENTORIED` | `READY` | `ACTIVE` | `DONE` |", "|---|---:|---:|---:|---:|---:|",
        summary, "| **Total** | **3** | **1** | **1** | **1** | **0** |", "", "## One", "",
        "| ID | Spike/spec | Evidence | State | Owner |", "|---|---|---|---|---|", *rows, ""])


ROWS = ["| `X-A` | - | - | `INVENTORIED` | - |",
        "| `X-B` | [b](specs/b.md) | - | `READY` | - |",
        "| `X-C` | [c](specs/c.md) | - | `ACTIVE` | `CLAIM-C` |"]
FILES = {"redfirst.yaml": MATRIX_POLICY, "specs/b.md": "# X-B\n", "specs/c.md": "# X-C\n",
         "claims.md": "| Claim | Rows |\n|---|---|\n| `CLAIM-C` | `X-C` |\n"}


def test_consistent_matrix_is_green(repo, cli):
    repo.commit("seed", {**FILES, "m.md": _matrix(ROWS)})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out


def test_two_states_duplicate_id_and_pin(repo, cli):
    rows = [ROWS[0].replace("`INVENTORIED`", "`INVENTORIED` `READY`"), ROWS[1], ROWS[2], ROWS[1]]
    repo.commit("seed", {**FILES, "m.md": _matrix(rows)})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    rules = {f["rule"] for f in _findings(doc)}
    assert {"state", "unique-id", "row-count"} <= rules


def test_summary_must_equal_the_counted_rows(repo, cli):
    repo.commit("seed", {**FILES, "m.md": _matrix(ROWS, summary="| One | 3 | 2 | 0 | 1 | 0 |")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    messages = [f["message"] for f in _findings(doc, "summary")]
    assert any("inventoried=2; actual 1" in m for m in messages)


def test_a_summary_without_its_rows_column_is_not_compared_silently(repo, cli):
    text = _matrix(ROWS, summary="| One | 9 | 1 | 1 | 1 | 0 |").replace("| Area | Rows |", "| Area | Count |")
    repo.commit("seed", {**FILES, "m.md": text.replace("| **Total** | **3** |", "| **Total** | **9** |")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert any("no `Rows` column" in f["message"] for f in _findings(doc, "summary"))


def test_ready_row_needs_a_spec_that_names_it(repo, cli):
    rows = [ROWS[0], ROWS[1].replace("[b](specs/b.md)", "`planned: specs/b.md`"), ROWS[2]]
    repo.commit("seed", {**FILES, "specs/c.md": "# about something else\n", "m.md": _matrix(rows)})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    spec = _findings(doc, "spec-link")
    assert {f["line"] for f in spec} == {13, 14}
    assert any("links no spec" in f["message"] for f in spec)
    assert any("none of which names X-C" in f["message"] for f in spec)


def test_done_obligations_and_claim_on_a_done_row(repo, cli):
    head = repo.commit("seed", {**FILES, "m.md": _matrix(ROWS)})
    done = ROWS[2].replace("`ACTIVE` | `CLAIM-C`", "`DONE` | `0000000`")
    summary = "| One | 3 | 1 | 1 | 0 | 1 |"
    text = _matrix([ROWS[0], ROWS[1], done], summary).replace("**1** | **0** |", "**0** | **1** |")
    repo.commit("close", {"m.md": text})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert [f["line"] for f in _findings(doc, "done-evidence")] == [14]
    assert "0000000" in _findings(doc, "done-commit")[0]["message"]
    assert "in state DONE" in _findings(doc, "claim-state")[0]["message"]
    fixed = done.replace("`0000000`", f"`{head[:10]}`").replace("| - | `DONE`", "| tests/t.py:3 | `DONE`")
    repo.commit("fix", {"m.md": _matrix([ROWS[0], ROWS[1], fixed], summary).replace("**1** | **0** |", "**0** | **1** |"),
                        "claims.md": "| Claim | Rows |\n|---|---|\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--only", "matrices")
    assert _findings(doc) == []


def test_a_closing_commit_off_the_history_is_not_in_the_history(repo, cli):
    # A commit that exists only on another branch did not close the row in this history.
    repo.commit("seed", {**FILES, "m.md": _matrix(ROWS)})
    repo.git("checkout", "-q", "-b", "elsewhere")
    other = repo.commit("an unmerged experiment", {"x.txt": "x\n"})
    repo.git("checkout", "-q", "main")
    done = ROWS[2].replace("`ACTIVE` | `CLAIM-C`", f"`DONE` | `{other[:10]}`").replace("| - | `DONE`",
                                                                                      "| tests/t.py:3 | `DONE`")
    text = _matrix([ROWS[0], ROWS[1], done], "| One | 3 | 1 | 1 | 0 | 1 |").replace("**1** | **0** |", "**0** | **1** |")
    repo.commit("close", {"m.md": text, "claims.md": "| Claim | Rows |\n|---|---|\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--only", "matrices")
    assert rc == 1
    (f,) = _findings(doc)
    assert f["rule"] == "done-commit" and other[:10] in f["message"]


def test_doc_checkpoint_judged_on_the_squashed_shape(repo, cli):
    policy = "checkers:\n  doc_checkpoint:\n    - {when: [\"include/**\"], require: [docs/USAGE.md]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "include/a.h": "int a;\n", "docs/USAGE.md": "usage\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("api", {"include/a.h": "int a;\nint b;\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (f,) = _findings(doc, "doc-checkpoint")
    assert f["file"] == "docs/USAGE.md" and "include/a.h" in f["message"]
    repo.commit("docs in a later commit of the same change", {"docs/USAGE.md": "usage\nb\n"})
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out


def test_deleting_the_required_doc_does_not_update_it(repo, cli):
    policy = "checkers:\n  doc_checkpoint:\n    - {when: [\"include/**\"], require: [docs/USAGE.md]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "include/a.h": "int a;\n", "docs/USAGE.md": "usage\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("rm", "-q", "docs/USAGE.md")
    repo.commit("api, and the usage doc removed", {"include/a.h": "int a;\nint b;\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (f,) = _findings(doc, "doc-checkpoint")
    assert f["file"] == "docs/USAGE.md"


def test_symbol_anchor_is_blanked_and_lines_checked(repo, cli):
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/], min_checked: 2}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "src/a.py": "def present():\n    pass\n",
                         "notes/n.md": "See `src/a.py::present` and `src/a.py:2`.\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out
    # The symbol is gone; only the file citing it (itself under src/) still mentions it.
    repo.commit("rename", {"src/a.py": "# was src/a.py::present\ndef renamed():\n    pass\n",
                           "notes/n.md": "See `src/a.py::present` and `src/a.py:9`.\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert {f["rule"] for f in _findings(doc)} == {"anchor-symbol", "anchor-line"}


def test_a_citation_in_another_spelling_or_the_file_name_is_not_the_symbol(repo, cli):
    # Neither a citation of the symbol in a shorter spelling nor the file's own name (an include,
    # a module path) is the symbol: only its code is.
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"
    repo.commit("seed", {"redfirst.yaml": policy,
                         "src/a.py": "# moved: see a.py::present in the notes\ndef other():\n    pass\n",
                         "src/sampler.cpp": '#include "sampler.h"\n// src/sampler.cpp is built by CMake\nint x;\n',
                         "notes/n.md": "`src/a.py::present` and `src/sampler.cpp::sampler`\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert sorted(f["message"].split(":", 2)[0] for f in _findings(doc, "anchor-symbol")) == \
        ["src/a.py", "src/sampler.cpp"]
    repo.commit("define them", {"src/a.py": "def present():\n    pass\n",
                                "src/sampler.cpp": '#include "sampler.h"\nstruct sampler {};\n'})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out


def test_symbol_anchor_floor_is_no_decision(repo, cli):
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/], min_checked: 5}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "src/a.py": "def f(): pass\n", "notes/n.md": "`src/a.py::f`\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 3 and "1 of 1 citations checked, floor 5" in out


def test_caps(repo, cli):
    policy = "checkers:\n  caps:\n    - {paths: [\"*.md\"], paragraph_chars: 40, cell_chars: 10, file_bytes: 500}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "a.md": "short\n\n| a | b |\n|---|---|\n| x | y |\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out
    repo.commit("grow", {"a.md": "word " * 20 + "\n\n| a | b |\n|---|---|\n| " + "x" * 20 + " | y |\n" + "z" * 600})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert {f["rule"] for f in _findings(doc)} == {"cap-paragraph", "cap-cell", "cap-file"}


RATCHET = "checkers:\n  ratchets:\n    - {baseline: base.json, paths: [\"src/**\"], buckets: {cuda: \"kCUDA\"}}\n"


def _baseline(n: int) -> str:
    return json.dumps({"_comment": "only down", "total": n, "buckets": {"cuda": n}}, indent=2) + "\n"


def test_ratchet_regression_and_lowering_in_the_same_change(repo, cli):
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": _baseline(2), "src/a.c": "kCUDA kCUDA\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("regress", {"src/a.c": "kCUDA kCUDA kCUDA\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "ratchet-regression")
    repo.commit("improve", {"src/a.c": "kCUDA\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "ratchet-lower")
    rc, _out, _err = cli("run", "--root", str(repo.path), "--base", "main", "--write-baseline")
    assert rc == 0 and json.loads((repo.path / "base.json").read_text())["total"] == 1
    repo.commit("lower the baseline")
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out


def test_raising_the_baseline_in_the_change_is_red_and_write_baseline_refuses(repo, cli):
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": _baseline(1), "src/a.c": "kCUDA\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("regress and raise", {"src/a.c": "kCUDA kCUDA\n", "base.json": _baseline(2)})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert _findings(doc, "ratchet-raised") and _findings(doc, "ratchet-regression")
    rc, _out, err = cli("run", "--root", str(repo.path), "--base", "main", "--write-baseline")
    assert rc == 2 and "refusing to raise" in err


@pytest.mark.parametrize("raised", [
    '{"total": 1, "buckets": {"cuda": 9.0}}', '{"total": 1, "buckets": {"cuda": "9"}}', '{"total": 1, "buckets": {}}',
    '{"buckets": {"cuda": 1}}', '{"total": 1, "buckets": {"cuda": 9, "cuda": 1}}', '{"total": 1, "buckets": {"cuda": 9},}',
    '{"total": true, "buckets": {"cuda": 1}}', '{"total": 1, "buckets": [1]}', '[1]', None])
def test_a_baseline_the_head_makes_unreadable_raised_or_unbounded_is_red(repo, cli, raised):
    # The merge base's baseline bounds this change; the head's bounds the next one. A head baseline
    # redfirst cannot read as the same integer counts (a float, a string, a bucket or total dropped,
    # a duplicate key, a JSON error, the file deleted) is the ratchet raised, never ignored.
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": _baseline(1), "src/a.c": "kCUDA\n"})
    repo.git("checkout", "-q", "-b", "feature")
    if raised is None:
        repo.git("rm", "-q", "base.json")
        repo.commit("no baseline")
    else:
        repo.commit("raise in disguise", {"base.json": raised + "\n"})
    assert repo.git("diff", "main", "feature", "--", "base.json")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = _findings(doc, "ratchet-baseline")
    assert finding["file"] == "base.json"


ENV_POLICY = _yaml("""
    checkers:
      env_documented:
        code: ["src/**"]
        docs: ["docs/*.md"]
        names: "^VT_[A-Z0-9_]+$"
        allowlist: allow.txt
    """)


def test_env_vars_read_and_documented_both_ways(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ENV_POLICY, "allow.txt": "VT_INTERNAL\n",
                         "src/a.cpp": 'auto a = getenv("VT_A");\nauto i = getenv("VT_INTERNAL");\n',
                         "docs/env.md": "`VT_A` does a.\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out
    repo.commit("drift", {"src/a.cpp": 'auto b = getenv("VT_B");\n', "docs/env.md": "`VT_A` does a.\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    got = {(f["rule"], f["file"]) for f in _findings(doc)}
    assert got == {("env-undocumented", "src/a.cpp"), ("env-unread", "docs/env.md")}


def test_an_allowlist_entry_added_in_the_range_does_not_excuse_the_range(repo, cli):
    # The allowlist is policy: read from the merge base, like redfirst.yaml and ratchet baselines.
    repo.commit("seed", {"redfirst.yaml": ENV_POLICY, "allow.txt": "VT_INTERNAL\n",
                         "src/a.cpp": 'auto a = getenv("VT_A");\n', "docs/env.md": "`VT_A` does a.\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("read VT_NEW, exempt it", {"src/b.cpp": 'auto n = getenv("VT_NEW");\n',
                                           "allow.txt": "VT_INTERNAL\nVT_NEW\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert {(f["rule"], f["file"]) for f in _findings(doc)} == {("env-undocumented", "src/b.cpp")}


def test_a_configured_bucket_missing_from_the_baseline_is_never_green(repo, cli):
    # `{}` or a misspelt bucket bounds nothing: the ratchet has no baseline to compare with.
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": "{}\n", "src/a.c": "kCUDA kCUDA\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 3 and "cuda" in out and "green" not in out.lower()
    repo.commit("misspelt", {"base.json": json.dumps({"buckets": {"cdua": 0}}) + "\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 3 and "cuda" in out and "green" not in out.lower()


def test_a_baseline_lowered_below_the_measured_count_is_red(repo, cli):
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": _baseline(2), "src/a.c": "kCUDA kCUDA\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("claims less debt than there is", {"base.json": _baseline(0)})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "ratchet-below-count")


def test_a_second_section_of_the_same_name_does_not_cover_an_empty_first(repo, cli):
    spec = SPEC_OK.replace("## Gates\n\n`make test`", "## Gates\n\nTBD") + "\n## Gates\n\n`make test` passes.\n"
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": spec})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    assert [(f["rule"], f["line"]) for f in _findings(doc)] == [("spec-content", 7)]


ENV = textwrap.dedent("""
    checkers:
      env_documented:
        code: ["src/**"]
        docs: ["docs/*.md"]
        names: "^VT_[A-Z0-9_]+$"
    """).lstrip()

ANCHORS = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"

SPECS = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates]}\n"


def test_a_variable_named_only_in_an_html_comment_is_not_documented(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ENV, "src/a.cpp": 'auto a = getenv("VT_A");\nauto b = getenv("VT_B");\n',
                         "docs/env.md": "`VT_A` does a.\n\n<!-- VT_B: to be written\n-->\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    (finding,) = _findings(doc, "env-undocumented")
    assert "VT_B" in finding["message"] and finding["line"] == 2


def test_a_line_link_past_the_end_of_the_file_is_red(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ANCHORS, "src/a.py": "a = 1\nb = 2\n",
                         "notes/n.md": "See [b](../src/a.py#L2) and [range](../src/a.py#L1-L2).\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc
    repo.commit("drift", {"notes/n.md": "See [b](../src/a.py#L99) and [range](../src/a.py#L1-L7).\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert len(_findings(doc, "anchor-line")) == 2


def test_a_table_header_and_one_tbd_row_is_not_spec_content(repo, cli):
    empty = "# S\n\n## Scope\n\nThe rows.\n\n## Gates\n\n| Gate | Command |\n|---|---|\n| unit | TBD |\n"
    repo.commit("seed", {"redfirst.yaml": SPECS, "specs/a.md": empty})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    (finding,) = _findings(doc, "spec-content")
    assert "Gates" in finding["message"]
    repo.commit("fill", {"specs/a.md": empty.replace("| unit | TBD |", "| unit | `ctest -R unit` |")})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc


def test_a_ratchet_counts_a_file_in_a_folder_whose_name_holds_a_newline(repo, cli):
    """git paths may hold LF: `src/**` covers `src/x<LF>y/b.c`, so a regression there is red, not
    "All checks green" (a glob's `**` was a regex `.` that stops at LF)."""
    repo.commit("seed", {"redfirst.yaml": RATCHET, "base.json": _baseline(1), "src/a.c": "kCUDA\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("regress out of sight", {"src/x\ny/b.c": "kCUDA kCUDA\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "ratchet-regression"), doc
