"""Files and messages are read as git reads them: lines end at LF only, so a U+2028, a NEL, a form
feed or a lone CR inside a line is part of that line, and every line number is git's."""

from __future__ import annotations

import pytest

APPEND_POLICY = "checkers:\n  append_only:\n    - {path: index.md, mode: insert}\n"
INDEX = "# Index\n\n| Issue | Title |\n|---|---|\n| 1 | first |\n| 2 | second |\n"
SPEC_POLICY = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates, Owed]}\n"


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


def _git_removed_lines(repo, path: str) -> list[str]:
    """What `git diff main HEAD` shows as removed from `path` (the oracle)."""
    diff = repo.git("diff", "--no-ext-diff", "--no-textconv", "--minimal", "-a", "main", "HEAD", "--", path)
    return [ln[1:] for ln in diff.split("\n") if ln.startswith("-") and not ln.startswith("---")]


@pytest.mark.parametrize("rewrite", [
    pytest.param(lambda row: row.replace("first", "fir\u2028st"), id="u2028-inside-the-row"),
    pytest.param(lambda row: row.replace("first", "fir\x85st"), id="nel-inside-the-row"),
    pytest.param(lambda row: row.replace("first", "fir\x0cst"), id="form-feed-inside-the-row"),
    pytest.param(lambda row: row.replace("first", "fir\rst"), id="lone-cr-inside-the-row"),
])
def test_a_row_rewritten_with_a_python_line_break_inside_is_an_edit(repo, cli, rewrite):
    old = INDEX.replace("| 1 | first |", "| 1 | fir\nst |")  # two git lines: `| 1 | fir` and `st |`
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": old})
    repo.git("checkout", "-q", "-b", "feature")
    new = INDEX.replace("| 1 | first |", rewrite("| 1 | first |"))
    repo.commit("rewrite", {"index.md": new})
    assert _git_removed_lines(repo, "index.md"), "git diff shows the old rows removed"
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "append-only")
    assert f["line"] == 5  # git's line 5 of the new file, where the two old lines were


def test_a_row_whose_lf_became_crlf_is_an_edit(repo, cli):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("crlf", {"index.md": INDEX.replace("| 2 | second |\n", "| 2 | second |\r\n") + "| 3 | third |\n"})
    assert _git_removed_lines(repo, "index.md") == ["| 2 | second |"]
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    (f,) = _findings(doc, "append-only")
    assert f["line"] == 6


def test_appending_a_row_that_holds_a_u2028_is_green(repo, cli):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("append", {"index.md": INDEX + "| 3 | thi\u2028rd |\n"})
    assert _git_removed_lines(repo, "index.md") == []
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out


def test_distinct_invalid_bytes_in_an_old_row_are_not_read_as_one_character(repo, cli):
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY})
    (repo.path / "index.md").write_bytes(INDEX.encode() + b"| 3 | caf\xe9 |\n")
    repo.commit("latin-1 row")
    repo.git("checkout", "-q", "-b", "feature")
    (repo.path / "index.md").write_bytes(INDEX.encode() + b"| 3 | caf\xe8 |\n")
    repo.commit("another latin-1 byte")
    assert _git_removed_lines(repo, "index.md")
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "append-only")[0]["line"] == 7


@pytest.mark.parametrize("sep", ["\u2028", "\x85", "\x0c", "\x1c"])
def test_python_line_breaks_in_the_first_section_do_not_shift_later_sections(repo, cli, sep):
    spec = (f"# S\n\n## Scope\n\nRows A{sep}B{sep}C{sep}D.\n\n## Gates\n\nTBD\n\n"
            "## Owed\n\nThe parity test of row A.\n\nMore text.\n\nStill more.\n")
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": spec})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    (f,) = _findings(doc)
    assert (f["rule"], f["line"]) == ("spec-content", 7)  # git's line of `## Gates`


def test_a_lone_cr_is_a_markdown_line_break_but_findings_carry_git_line_numbers(repo, cli):
    # CommonMark ends a line at a lone CR (GitHub renders `Gates` as its own heading); git does not.
    spec = "# S\r\r## Scope\n\nRows A.\r\r## Gates\n\nTBD\n\n## Owed\n\nThe test.\n"
    repo.commit("seed", {"redfirst.yaml": SPEC_POLICY, "specs/a.md": spec})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    (f,) = _findings(doc)
    assert (f["rule"], f["line"]) == ("spec-content", 3)  # `Rows A.\r\r## Gates` is git's line 3


def test_a_line_anchor_past_a_file_of_form_feeds_is_past_its_end(repo, cli):
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"
    source = "int a;\x0c\nint b;\x0c\x0c\nint c;\u2028\nint d;\x85\nint e;\n"  # five git lines
    repo.commit("seed", {"redfirst.yaml": policy, "src/file.c": source, "notes/n.md": "See `src/file.c:5`.\n"})
    rc, out, _ = cli("run", "--root", str(repo.path))
    assert rc == 0, out
    repo.commit("cite past the end", {"notes/n.md": "Intro\u2028more.\nSee `src/file.c:7`.\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1, doc
    (f,) = _findings(doc, "anchor-line")
    assert f["line"] == 2 and "(5 lines)" in f["message"]


def test_a_matrix_row_cut_off_its_table_after_a_u2028_keeps_its_git_line(repo, cli):
    policy = ("checkers:\n  matrices:\n    states: [READY, DONE]\n"
              "    files:\n      - {path: m.md, id_pattern: \"ENG-[A-Z]+\"}\n")
    # ENG-B is cut off its table by a blank line: read as a row of the table above (from the lines).
    matrix = ("# M\u2028\u2028\n\n| ID | State |\n|---|---|\n| `ENG-A` | `READY` |\n\n"
              "| `ENG-B` | `READY` `DONE` |\n")
    repo.commit("seed", {"redfirst.yaml": policy, "m.md": matrix})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    (f,) = _findings(doc, "state")
    assert f["line"] == 7


def test_a_ratchet_counts_a_match_across_a_u2028_as_git_and_a_compiler_see_one_line(repo, cli):
    policy = ("checkers:\n  ratchets:\n    - {baseline: base.json, paths: [\"src/**\"], "
              "buckets: {vt: \"#\\\\s*ifdef\\\\b.*\\\\bVT_CUDA\\\\b\"}}\n")
    repo.commit("seed", {"redfirst.yaml": policy, "base.json": '{"buckets": {"vt": 0}}\n', "src/a.h": "int a;\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("debt", {"src/a.h": "#ifdef X \u2028 VT_CUDA\nint a;\n#endif\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert _findings(doc, "ratchet-regression")


def _message_range(repo, messages: list[str], policy: str) -> None:
    repo.commit("docs: seed\n\nseed body\n", {"redfirst.yaml": policy})
    repo.git("checkout", "-q", "-b", "feature")
    for i, message in enumerate(messages):
        repo.commit(message, {f"f{i}.txt": str(i)})


def test_a_u2028_inside_a_trailer_value_does_not_forge_a_second_trailer(repo, cli):
    policy = "checkers:\n  trailers:\n    require: {Assisted-by: \"^\\\\S+ \\\\[.+\\\\]$\"}\n"
    _message_range(repo, ["feat: x\n\nbody\n\nNote: x\u2028Assisted-by: Tool:m [T]\n"], policy)
    trailers = repo.git("log", "-1", "--format=%(trailers:only,unfold)")
    assert "Note: x\u2028Assisted-by" in trailers  # git reads one trailer, `Note`
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert _findings(doc, "trailer-required")


def test_the_subject_ends_where_git_ends_it_at_a_blank_line_holding_a_cr(repo, cli):
    policy = "checkers:\n  commit_style:\n    subject: \"^feat: \"\n    body: required\n"
    repo.commit("docs: seed\n\nseed body\n", {"redfirst.yaml": policy})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("commit", "-q", "--allow-empty", "--cleanup=verbatim", "-m", "feat: add x.\n\r\nWhy it is needed.\n")
    assert repo.git("log", "-1", "--format=%s") == "feat: add x.\n"
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert [f["rule"] for f in _findings(doc)] == ["subject-period"]


def test_appending_after_a_last_row_without_its_newline_keeps_that_row(repo, cli):
    # git diff shows the last row removed and re-added (`\ No newline at end of file`); its text is
    # unchanged, so the one place the line model departs from git's diff is the final terminator.
    repo.commit("seed", {"redfirst.yaml": APPEND_POLICY, "index.md": INDEX.rstrip("\n")})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("append", {"index.md": INDEX + "| 3 | third |\n"})
    assert _git_removed_lines(repo, "index.md") == ["| 2 | second |"]
    rc, out, _ = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out
    repo.commit("edit that row", {"index.md": INDEX.replace("second", "2nd") + "| 3 | third |\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1 and _findings(doc, "append-only")[0]["line"] == 6


@pytest.mark.parametrize("mode", ["insert", "tail"])
def test_removing_the_last_rows_newline_is_an_edit_and_appending_after_a_missing_one_is_not(repo, cli, mode):
    """git compares a last line without its LF as a different line (`\\ No newline at end of file`):
    dropping the final LF edits that row. A file that lacked it may gain it when a row is appended."""
    policy = APPEND_POLICY.replace("insert", mode)
    repo.commit("seed", {"redfirst.yaml": policy, "index.md": INDEX})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("drop the final newline", {"index.md": INDEX.removesuffix("\n")})
    assert _git_removed_lines(repo, "index.md") == ["| 2 | second |"]
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "append-only")
    assert f["line"] == 6, f
    repo.git("checkout", "-q", "-b", "append-after", "HEAD")
    repo.git("branch", "-f", "main", "HEAD")  # the base now lacks the final newline
    repo.commit("append a row", {"index.md": INDEX + "| 3 | third |\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, doc


def test_the_commit_msg_hook_reads_trailers_after_a_dashes_line_as_the_commit_will_hold_them(repo, cli, tmp_path):
    """`interpret-trailers --parse` stops at a `---` line (a patch divider), but the commit keeps the
    whole message and `git log`'s %(trailers) reads the trailer: the hook must judge the same."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  trailers:\n    forbid_in: {Signed-off-by: '(?i)\\bclaude\\b'}\n"})
    msg = tmp_path / "COMMIT_EDITMSG"
    msg.write_text("feat: x\n\nbody\n---\nSigned-off-by: Claude <c@example.invalid>\n", encoding="utf-8")
    repo.git("commit", "-q", "--allow-empty", "-F", str(msg))
    assert "Signed-off-by: Claude" in repo.git("log", "-1", "--format=%(trailers:only,unfold)")
    rc, _doc = cli.json("run", "--root", str(repo.path), "--base", "HEAD~1")
    assert rc == 1
    rc, out, _err = cli("commit-msg", str(msg), "--root", str(repo.path))
    assert rc == 1, out
    assert "trailer-identity" in out


@pytest.mark.parametrize("citation", ["see src/x.c:99.", "src/x.c:9-99.", "(src/x.c:99.)"])
def test_a_line_citation_that_ends_a_sentence_is_still_checked(repo, cli, citation):
    """A period after `src/x.c:99` ends the sentence; only a digit after it (`x.c:1.2`) makes it not a
    line citation. The 3-line file has no line 99."""
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "src/x.c": "int a;\nint b;\nint c;\n",
                         "notes/n.md": "cites `src/x.c:2`\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("cite", {"notes/n.md": f"cites `src/x.c:2`\n{citation}\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "anchor-line")
    assert f["line"] == 2, f


def test_a_paragraph_with_hash_words_is_one_paragraph_for_the_cap(repo, cli):
    """`#tag` at a line start is text (an ATX heading needs a space after its #s): markdown renders
    the 20 lines as one paragraph of about 1000 characters, over the 200 cap."""
    policy = "checkers:\n  caps:\n    - {paths: [\"notes/*.md\"], paragraph_chars: 200}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "notes/a.md": "short\n"})
    repo.git("checkout", "-q", "-b", "feature")
    para = "\n".join(("#tag " if i % 2 else "") + "word " * 10 for i in range(20)) + "\n"
    repo.commit("a long paragraph", {"notes/a.md": "# Notes\n\n" + para})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (f,) = _findings(doc, "cap-paragraph")
    assert f["line"] == 3, f


@pytest.mark.parametrize("cite", ["`src/file.c:\u0667`", "[c](../src/file.c#L\u0667)", "`src/file.c:\uff17`"])
def test_digits_of_other_scripts_are_no_line_number(repo, cli, cite):
    # `\d` in Python's str patterns takes every Unicode digit: `file.c:٧` read as line 7 of a 5-line
    # file. Neither git nor GitHub reads those as a line; only 0-9 make a line number.
    policy = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"
    source = "int a;\nint b;\nint c;\nint d;\nint e;\n"
    repo.commit("seed", {"redfirst.yaml": policy, "src/file.c": source, "notes/n.md": f"See {cite}.\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert _findings(doc, "anchor-line") == [], doc
