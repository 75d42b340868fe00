"""Fuzz (hypothesis): each checker's line model against git's own, on text full of the characters
that Python ends lines at and git does not (U+2028, U+2029, U+0085, FF, VT, FS/GS/RS/US, lone CR)
and of CRLF. The oracles are real git: `git diff --minimal`, `git grep -n`, `git log --format`."""

from __future__ import annotations

import tempfile
from pathlib import Path

import git
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.configuration import set_hypothesis_home_dir

from redfirst.checkers.commits import _paragraphs, read_range
from redfirst.checkers.lines import count, is_blank
from tests.checkers.conftest import Repo

PYTHON_BREAKS = ["\u2028", "\u2029", "\x85", "\x0c", "\x0b", "\x1c", "\x1d", "\x1e", "\x1f"]
FUZZ = settings(max_examples=20, deadline=None, database=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# Pieces of a line: words, cell separators, every Python-only line break, and a lone CR.
line_piece = st.sampled_from(["a", "b", "row", " ", "|", "`x`", "\r", *PYTHON_BREAKS])
text_line = st.lists(line_piece, max_size=6).map("".join)


@pytest.fixture(scope="module")
def fuzz_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This module's folder for its examples' repositories (one each), under pytest's own temporary
    folder: none is left in /tmp. Hypothesis keeps its caches there too, never in the checkout."""
    base = tmp_path_factory.mktemp("fuzz")
    set_hypothesis_home_dir(str(base / "hypothesis"))
    return base


def _fresh(base: Path) -> Repo:
    return Repo(Path(tempfile.mkdtemp(prefix="fuzz-", dir=base)) / "repo")


def _git_removed(repo: Repo) -> list[str]:
    diff = repo.git("diff", "--no-ext-diff", "--no-textconv", "--minimal", "--diff-algorithm=myers", "-a",
                    "main", "HEAD", "--", "index.md")
    return [ln for ln in diff.split("\n") if ln.startswith("-") and not ln.startswith("---")]


@FUZZ
@given(old=st.lists(text_line, min_size=1, max_size=6), edits=st.lists(
    st.tuples(st.sampled_from(["keep", "insert", "replace", "drop", "crlf"]), text_line), max_size=8))
def test_append_only_finds_an_edit_exactly_when_git_diff_shows_a_removed_line(fuzz_dir, cli, old, edits):
    repo = _fresh(fuzz_dir)
    new: list[str] = []
    rest = list(old)
    for op, piece in edits:
        if op == "insert" or not rest:
            new.append(piece)
        elif op == "keep":
            new.append(rest.pop(0))
        elif op == "replace":
            rest.pop(0)
            new.append(piece)
        elif op == "drop":
            rest.pop(0)
        else:
            new.append(rest.pop(0) + "\r")  # LF became CRLF
    new += rest
    policy = "checkers:\n  append_only:\n    - {path: index.md}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "index.md": "".join(f"{ln}\n" for ln in old)})
    repo.git("checkout", "-q", "-b", "feature")
    repo.commit("change", {"index.md": "".join(f"{ln}\n" for ln in new)})
    rc, doc = cli.json("run", "--root", str(repo.path), "--base", "main")
    findings = doc["items"][0]["findings"]
    assert bool(findings) == bool(_git_removed(repo)), (old, new, findings)
    assert rc == (1 if findings else 0)
    assert all(1 <= f["line"] <= max(len(new), 1) for f in findings)


@FUZZ
@given(text=st.lists(st.sampled_from(["a", "\n", "\r\n", "\r", *PYTHON_BREAKS]), max_size=20).map("".join))
def test_the_line_count_is_the_count_git_diff_adds(fuzz_dir, text):
    repo = _fresh(fuzz_dir)
    blob = repo.git("hash-object", "-w", "--stdin", input=text).strip()
    empty = repo.git("hash-object", "-w", "--stdin", input="").strip()
    numstat = repo.git("diff", "--numstat", "-a", empty, blob).split()
    assert count(text) == (int(numstat[0]) if numstat else 0), repr(text)


@FUZZ
@given(scope=st.lists(text_line, min_size=1, max_size=5), gates=st.sampled_from(["TBD", "`make test` passes"]),
       crlf=st.booleans())
def test_a_spec_section_is_found_and_judged_on_git_s_line(fuzz_dir, cli, scope, gates, crlf):
    repo = _fresh(fuzz_dir)
    eol = "\r\n" if crlf else "\n"
    lines = ["# S", "", "## Scope", "", *(f"real words {ln}" for ln in scope), "", "## Gates", "", gates, "",
             "## Owed", "", "The parity test.", ""]
    policy = "checkers:\n  specs:\n    - {glob: \"specs/*.md\", sections: [Scope, Gates, Owed]}\n"
    repo.commit("seed", {"redfirst.yaml": policy, "specs/a.md": eol.join(lines)})
    rc, doc = cli.json("run", "--root", str(repo.path))
    findings = doc["items"][0]["findings"]
    if gates == "TBD":
        (hit,) = repo.git("grep", "-n", "-e", "^## Gates", "HEAD", "--", "specs/a.md").rstrip("\n").split("\n")
        assert [(f["rule"], f["line"]) for f in findings] == [("spec-content", int(hit.split(":")[2]))], scope
    else:
        assert findings == [] and rc == 0, (scope, findings)


cell_text = st.lists(st.sampled_from(["a", "b", " ", *PYTHON_BREAKS]), max_size=5).map("".join)


@FUZZ
@given(rows=st.lists(st.tuples(cell_text, st.booleans(), st.booleans()), min_size=1, max_size=6),
       preamble=st.lists(text_line, max_size=3))
def test_a_matrix_row_is_reported_on_git_s_line(fuzz_dir, cli, rows, preamble):
    repo = _fresh(fuzz_dir)
    body = [f"| `ENG-R{i}` | {cell} | `READY` `DONE` |" + ("\r" if crlf else "") + ("\n\n" if cut else "\n")
            for i, (cell, crlf, cut) in enumerate(rows)]
    text = "".join(f"p {ln}\n\n" for ln in preamble) + "| ID | Item | State |\n|---|---|---|\n" + "".join(body)
    policy = ("checkers:\n  matrices:\n    states: [READY, DONE]\n"
              "    files:\n      - {path: m.md, id_pattern: \"ENG-R[0-9]+\"}\n")
    repo.commit("seed", {"redfirst.yaml": policy, "m.md": text})
    _rc, doc = cli.json("run", "--root", str(repo.path))
    got = sorted(f["line"] for f in doc["items"][0]["findings"] if f["rule"] == "state")
    want = sorted(int(hit.split(":")[2]) for hit in
                  repo.git("grep", "-n", "-e", "^| `ENG-R", "HEAD", "--", "m.md").split("\n") if hit)
    assert got == want, (text, doc["items"][0]["findings"])


message_piece = st.sampled_from(["feat: x", "body", "Signed-off-by: A <a@b>", "Assisted-by: T:m [T]", "Note: v",
                                 " ", "\t", ".", "\n", "\n\n", "\r", "\r\n", *PYTHON_BREAKS])


@FUZZ
@given(messages=st.lists(st.lists(message_piece, min_size=1, max_size=10).map("".join), min_size=1, max_size=4))
def test_subject_body_and_trailers_are_read_as_git_reads_them(fuzz_dir, messages):
    repo = _fresh(fuzz_dir)
    base = repo.commit("base")
    tip = base
    for message in messages:
        tree = repo.git("rev-parse", f"{tip}^{{tree}}").strip()
        tip = repo.git("commit-tree", tree, "-p", tip, input=message).strip()  # verbatim, no clean-up
    ours = read_range(git.Repo(repo.path), base, tip)
    fmt = "%H%x00%s%x00%b%x00%(trailers:only,unfold,separator=%x01)%x00"
    fields = repo.git("log", "-z", f"--format={fmt}", f"{base}..{tip}").split("\0")
    theirs = [fields[i:i + 4] for i in range(0, len(fields) - 1, 5)]
    assert len(ours) == len(theirs) == len(messages)
    for commit, (sha, subject, body, trailers) in zip(ours, theirs, strict=True):
        assert commit.sha == sha.strip("\n")
        assert commit.subject == subject, repr(commit.message)
        git_body = [ln for ln in body.split("\n") if not is_blank(ln)]
        assert [ln for p in _paragraphs(commit.message)[1:] for ln in p] == git_body, repr(commit.message)
        assert len(commit.trailers) == len([t for t in trailers.split("\x01") if t]), repr(commit.message)
