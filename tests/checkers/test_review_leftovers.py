"""Leftovers of the last review: look-alike letters in a forbidden identity, a variable documented
only where no reader sees it, a `#L99` link past the file's end, a spec section that is a table
header and one TBD row."""

from __future__ import annotations

import textwrap


def _findings(doc: dict, rule: str | None = None) -> list[dict]:
    return [f for i in doc["items"] for f in i["findings"] if rule is None or f["rule"] == rule]


IDENTITY = textwrap.dedent("""
    checkers:
      trailers:
        forbid_in: {Signed-off-by: "(?i)\\\\b(claude|copilot)\\\\b"}
    """).lstrip()


def test_cyrillic_and_greek_look_alikes_do_not_hide_a_forbidden_identity(repo, cli):
    repo.commit("seed", {"redfirst.yaml": IDENTITY})
    repo.git("checkout", "-q", "-b", "feature")
    # U+0421 CYRILLIC CAPITAL ES, U+0430 CYRILLIC SMALL A; U+03BF GREEK SMALL OMICRON
    repo.commit("one\n\nSigned-off-by: \u0421l\u0430ude <c@example.invalid>\n", {"a.txt": "1\n"})
    repo.commit("two\n\nSigned-off-by: C\u03bfpilot <c@example.invalid>\n", {"b.txt": "1\n"})
    repo.commit("three\n\nSigned-off-by: \u0410nna Person <p@example.invalid>\n", {"c.txt": "1\n"})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    assert rc == 1
    assert len(_findings(doc, "trailer-identity")) == 2  # a person's name in Cyrillic is no finding


ENV = textwrap.dedent("""
    checkers:
      env_documented:
        code: ["src/**"]
        docs: ["docs/*.md"]
        names: "^VT_[A-Z0-9_]+$"
    """).lstrip()


def test_a_variable_named_only_in_an_html_comment_is_not_documented(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ENV, "src/a.cpp": 'auto a = getenv("VT_A");\nauto b = getenv("VT_B");\n',
                         "docs/env.md": "`VT_A` does a.\n\n<!-- VT_B: to be written\n-->\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    (finding,) = _findings(doc, "env-undocumented")
    assert "VT_B" in finding["message"] and finding["line"] == 2


ANCHORS = "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n"


def test_a_line_link_past_the_end_of_the_file_is_red(repo, cli):
    repo.commit("seed", {"redfirst.yaml": ANCHORS, "src/a.py": "a = 1\nb = 2\n",
                         "notes/n.md": "See [b](../src/a.py#L2) and [range](../src/a.py#L1-L2).\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 0, doc
    repo.commit("drift", {"notes/n.md": "See [b](../src/a.py#L99) and [range](../src/a.py#L1-L7).\n"})
    rc, doc = cli.json("run", "--root", str(repo.path))
    assert rc == 1
    assert len(_findings(doc, "anchor-line")) == 2


SPECS = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates]}\n"


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
