"""Huge inputs end, with a verdict or a clear NO_DECISION, in bounded time: an append-only file of
many equal lines (the diff that locates an edit must not be quadratic), and a record too large to
parse as markdown. Real git, the real CLI in a process of its own under a time limit."""

from __future__ import annotations

import json
import subprocess
import sys

LIMIT_S = 120  # each run below ends in seconds; a quadratic one runs for hours


def _run(repo, *argv: str) -> tuple[int, dict]:
    proc = subprocess.run([sys.executable, "-m", "redfirst.checkers.cli", "run", "--root", str(repo.path), *argv,
                           "--format", "json"], capture_output=True, text=True, timeout=LIMIT_S)
    return proc.returncode, json.loads(proc.stdout)


def test_an_edit_in_an_append_only_file_of_many_equal_lines_is_red_in_bounded_time(repo):
    # 200k lines, half of them one separator line: difflib's matcher over them is quadratic.
    old = "|---|\n" * 100_000 + "".join(f"| {i} | row |\n" for i in range(100_000))
    new = "x\n" + "|---|\n" * 99_999 + "".join(f"| {i} | row |\n" for i in range(0, 100_000, 2))
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  append_only:\n    - {path: index.md}\n", "index.md": old})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("rewrite", {"index.md": new})
    rc, doc = _run(repo, "--base", "main")
    assert rc == 1
    findings = doc["items"][0]["findings"]
    assert any("('| 1 | row |')" in f["message"] for f in findings), findings[:3]
    assert len(findings) == 101 and "more places" in findings[-1]["message"]  # not one per lost line


def test_a_spec_section_holding_a_long_table_is_read_in_linear_time():
    # Each table line looked for the next non-blank line in a copy of the rest of the section: 300k
    # short rows made 45G list copies. Its own process, under the time limit.
    code = ("from redfirst.checkers.specs import _table_values\n"
            "body = '| a | b |\\n|---|---|\\n' + '| k | v |\\n' * 300_000\n"
            "assert _table_values(body).count('v') == 300_000\n")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=LIMIT_S)


SPEC_POLICY = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope]}\n"


def _table(rows: int) -> str:
    return "| ID | Note |\n|---|---|\n" + "".join(f"| `ENG-{i}` | words to fill row {i} |\n" for i in range(rows))


def test_a_record_too_large_to_parse_is_no_decision_naming_it(repo):
    # Markdown is parsed at well under 1 MB/s: a 50 MB record would hold a CI job for many minutes.
    # Past the limit (4 MiB characters; the corpus' largest record is 0.3 MB) each checker that would
    # parse it says so, naming it, and decides nothing about it.
    big = "# A\n\n## Scope\n\n" + "x" * 70 + "\n" + "filler line of text to pass the limit\n" * 112_000
    assert len(big) > 4 * 2**20
    policy = SPEC_POLICY + ("  matrices:\n    states: [READY]\n    files:\n      - {path: specs/a.md, "
                            "id_pattern: \"ENG-[0-9]+\"}\n  caps:\n    - {paths: [\"specs/*.md\"], cell_chars: 10}\n")
    repo.commit("seed", {"redfirst.yaml": policy, "specs/a.md": "# A\n\n## Scope\n\nx\n\n" + _table(1).replace(
        "| `ENG-0` | words to fill row 0 |", "| `ENG-0` | `READY` |").replace("Note", "State")})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("huge", {"specs/a.md": big})
    rc, doc = _run(repo, "--base", "main")
    assert rc == 3, doc["items"]
    for item in doc["items"]:
        assert item["verdict"] == "NO_DECISION" and "specs/a.md" in item["reason"], item
        assert "characters, over the" in item["reason"], item


def test_many_citations_into_a_large_file_are_judged_in_bounded_time(repo):
    # Each citation decoded, split and scanned the whole cited file again: 3000 citations of a 1.4 MB
    # source took minutes. The last citation names a symbol the file lacks.
    source = "".join(f"int sym{i};\n" for i in range(100_000))
    notes = "".join(f"`src/a.c::sym{i}` at `src/a.c:{i + 1}`\n" for i in range(3_000)) + "`src/a.c::gone`\n"
    repo.commit("seed", {"redfirst.yaml": "checkers:\n  symbol_anchors:\n    - {records: [\"notes/*.md\"], roots: [src/]}\n",
                         "src/a.c": source, "notes/n.md": notes})
    rc, doc = _run(repo)
    assert rc == 1, doc["items"]
    (finding,) = doc["items"][0]["findings"]
    assert (finding["line"], finding["rule"]) == (3_001, "anchor-symbol")
    assert doc["items"][0]["counts"]["checked"] == 6_001


def test_many_rows_linking_one_large_spec_are_judged_in_bounded_time(repo):
    # Each row decoded the linked 14 MB spec again, counted its lines and searched it for the row's id:
    # 2000 rows took minutes. The last row links a line past the spec's end.
    policy = ("checkers:\n  matrices:\n    states: [READY]\n    obligations:\n"
              "      - {rule: spec, states: [READY], column: spec, spec_link: \"^specs/\", names_row: true,"
              " sections: {Scope: [scope]}}\n"
              "      - {rule: line, states: [READY], column: owner, link_line: \"^specs/\"}\n"
              "    files:\n      - {path: m.md, id_pattern: \"ENG-[0-9]+\"}\n")
    spec = "# S\n\n## Scope\n\nreal\n\n" + "".join(f"row ENG-{i} and a few words more\n" for i in range(400_000))
    rows = "".join(f"| `ENG-{i}` | `READY` | [s](specs/s.md) | [l](specs/s.md#L{i + 7}) |\n" for i in range(2_000))
    matrix = "| ID | State | Spike/spec | Owner |\n|---|---|---|---|\n" + rows
    matrix += "| `ENG-2000` | `READY` | [s](specs/s.md) | [l](specs/s.md#L900000) |\n"
    repo.commit("seed", {"redfirst.yaml": policy, "specs/s.md": spec, "m.md": matrix})
    rc, doc = _run(repo)
    assert rc == 1, doc["items"]
    (finding,) = doc["items"][0]["findings"]
    assert (finding["line"], finding["rule"]) == (2_003, "line"), finding
