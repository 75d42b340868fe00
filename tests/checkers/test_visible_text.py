"""A spec section is judged by the text a reader sees: markup that renders as nothing (a zero-width
space, `&nbsp;`, `<br>`, a link definition, a BOM, a backslash escape) is not content, and an
invisible character inside a placeholder (`T\u200bBD`) does not hide it. Real git, the real CLI."""

from __future__ import annotations

import pytest

POLICY = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates]}\n"
SPEC = "# A\n\n## Scope\n\nRows ENG-A.\n\n## Gates\n\n{gates}\n"


@pytest.mark.parametrize("gates", ["\u200b", "&nbsp;", "<br>", "T\u200bBD", "[x]: https://example.invalid",
                                   "\\.\\.\\.", "\\-", "\ufeff", "&#8203;", "<span></span>",
                                   # default-ignorable (rendered as nothing) without being a format character,
                                   # and the braille blank, which renders as a space
                                   "\u034f", "\ufe0f", "\u3164", "\uffa0", "\u115f\u1160", "\u2800",
                                   "T\u034fBD", "&#x34f;",
                                   # an HTML comment or processing instruction left open hides the rest of the page
                                   "<!--\nmake test", "<!-- make test -- ", "<?\nmake test"])
def test_a_section_that_renders_empty_or_as_a_placeholder_is_a_finding(repo, cli, gates):
    repo.commit("seed", {"redfirst.yaml": POLICY, "specs/a.md": SPEC.format(gates="`make test`")})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("empty the gates", {"specs/a.md": SPEC.format(gates=gates)})
    assert repo.git("diff", "--stat", "main", "HEAD")  # git shows the edit
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = [f for i in doc["items"] for f in i["findings"]]
    assert finding["rule"] == "spec-content" and finding["line"] == 7, finding


@pytest.mark.parametrize("gates", ["`make test`", "<details><summary>Gates</summary>make test</details>",
                                   "```sh\nmake test\n```", "| Gate | Cmd |\n|---|---|\n| g1 | `make` |",
                                   "![the gate table](gates.png)", "R&amp;D gate: `make test`"])
def test_a_section_with_visible_content_stays_green(repo, cli, gates):
    repo.commit("seed", {"redfirst.yaml": POLICY, "specs/a.md": SPEC.format(gates="`make test`")})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("rewrite the gates", {"specs/a.md": SPEC.format(gates=gates)})
    rc, out, _err = cli("run", "--root", str(repo.path), "--base", "main")
    assert rc == 0, out
    assert "All 1 checks green" in out


MATRIX_POLICY = ("checkers:\n  matrices:\n    states: [READY, DONE]\n    obligations:\n"
                 "      - {rule: done-owner, states: [DONE], column: owner, pattern: '^`?[0-9a-f]{7,40}`?$'}\n"
                 "    files:\n      - {path: m.md, id_pattern: \"ENG-[A-Z]+\"}\n")
MATRIX = ("# M\n\n| ID | State | Owner |\n|---|---|---|\n| `ENG-A` | `READY` | x |\n\n## Two\n\n"
          "| {header} | State | Owner |\n|---|---|---|\n| `ENG-B` | `{state}` | {owner} |\n")


@pytest.mark.parametrize("header", ["I\u200bD", "ID&nbsp;", "ID<!-- -->", "&#73;D", "<b>ID</b>"])
def test_a_matrix_header_that_reads_id_is_the_id_column_whatever_its_markup(repo, cli, header):
    """A header a reader sees as `ID` must not take its table's rows out of the matrix."""
    repo.commit("seed", {"redfirst.yaml": MATRIX_POLICY,
                         "m.md": MATRIX.format(header="ID", state="READY", owner="x")})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("mark ENG-B done without its owner",
                {"m.md": MATRIX.format(header=header, state="DONE", owner="nobody")})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = [f for i in doc["items"] for f in i["findings"]]
    assert (finding["rule"], finding["line"]) == ("done-owner", 11), finding


@pytest.mark.parametrize("who", ["Cl\u200baude", "\uff23laude", "Clau\u00addebot", "Cl\u034faude",
                                 "Cla\ufe0fude", "Cl\U000e0100aude", "Cl\u3164aude"])
def test_a_forbidden_identity_is_matched_as_a_reader_sees_it(repo, cli, who):
    """A zero-width character, a soft hyphen or a full-width letter in `Signed-off-by:` shows the
    forbidden name to every reader of `git log`; it must not slip past `forbid_in`."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  trailers:\n    forbid_in: {Signed-off-by: '(?i)\\b(claude|claudebot)\\b'}\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit(f"feat: x\n\nbody\n\nSigned-off-by: {who} <c@example.invalid>", {"x": "1\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = [f for i in doc["items"] for f in i["findings"]]
    assert finding["rule"] == "trailer-identity", finding


@pytest.mark.parametrize(("message", "rule"), [("feat: x\n\n\u200b", "body-required"),
                                               ("feat: x\n\n\u2028\u00a0\u3000", "body-required"),
                                               ("feat: x.\u200b\n\nwhy it changed", "subject-period")])
def test_a_commit_body_or_subject_is_judged_as_git_log_shows_it(repo, cli, message, rule):
    """A body of only invisible or Unicode-space characters is no body, and a period before a
    zero-width space still ends the subject, for every reader of `git log`."""
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  commit_style: {body: required}\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.git("commit", "-q", "--allow-empty", "--cleanup=verbatim", "-F", "-", input=message)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    (finding,) = [f for i in doc["items"] for f in i["findings"]]
    assert finding["rule"] == rule, finding


CLAIM_POLICY = ("checkers:\n  matrices:\n    states: [ACTIVE, DONE]\n    obligations:\n"
                "      - {rule: closed-in-history, states: [DONE], column: owner, commit: true}\n"
                "    files:\n      - {path: m.md, id_pattern: \"X-[A-Z]+\"}\n"
                "    claims:\n      - {path: claims.md, table: Claim, rows_column: Rows, states: [ACTIVE]}\n")


@pytest.mark.parametrize(("files", "rule"), [
    ({"m.md": "| ID | State | Owner |\n|---|---|---|\n| `X-C` | `DONE` | x |\n| `X-D` | `ACTIVE` | x |\n",
      "claims.md": "| Claim | Rows |\n|---|---|\n| `CLAIM-C` | `X-\u200bC` |\n| `CLAIM-D` | `X-D` |\n"}, "claim-state"),
    ({"m.md": "| ID | State | Owner |\n|---|---|---|\n| `X-C` | `DONE` | `deadbee\u200b` |\n",
      "claims.md": "| Claim | Rows |\n|---|---|\n"}, "closed-in-history"),
])
def test_a_code_span_is_read_as_a_reader_sees_it(repo, cli, files, rule):
    """A zero-width character inside `X-C` or a commit id shows the same id to every reader; it must
    not make the claim of a DONE row, or a closing commit that is not in the history, invisible."""
    repo.commit("seed", {"redfirst.yaml": CLAIM_POLICY,
                         "m.md": "| ID | State | Owner |\n|---|---|---|\n| `X-C` | `ACTIVE` | x |\n",
                         "claims.md": "| Claim | Rows |\n|---|---|\n| `CLAIM-C` | `X-C` |\n"})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("close X-C", files)
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1, doc
    assert rule in [f["rule"] for i in doc["items"] for f in i["findings"]], doc
