"""The shortcuts that make the checkers fast give the answers of the slow paths they skip: each is
checked against the real library result it replaces (markdown-it's own table split and full inline
parse, Python's re on the whole text), on generated inputs with hypothesis."""

from __future__ import annotations

import importlib
import importlib.util
import re
import sys
import unicodedata

import pytest
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from redfirst.checkers import literals, markdown
from redfirst.checkers.context import Mode, build, open_repo
from redfirst.checkers.lines import visible

FUZZ = settings(max_examples=200, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])


def _original_escaped_split():
    """markdown-it's own escapedSplit, loaded afresh from its file (the one in sys.modules is replaced)."""
    table = importlib.import_module("markdown_it.rules_block.table")
    spec = importlib.util.spec_from_file_location("markdown_it.rules_block._reference_table", table.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.escapedSplit


ORIGINAL_SPLIT = _original_escaped_split()


@FUZZ
@given(st.text(alphabet="|\\ab `:-", max_size=40))
def test_escaped_split_is_markdown_its(line):
    assert markdown.escaped_split(line) == ORIGINAL_SPLIT(line)


def test_the_table_rule_uses_the_fast_split():
    markdown._block_parser()
    assert sys.modules["markdown_it.rules_block.table"].escapedSplit is markdown.escaped_split


FRAGMENTS = ["a", " ", "`x`", "`", "``y``", "[a](specs/a.md)", "[ref]", "[ref][]", "![i](p.png)", "<http://h.invalid>",
             "<ab:c>", "<b>", "*e*", "_u_", "**", "\\|", "\\", "|", "&#96;", "&amp;", "[", "]", "(", ")", "<", "!",
             "\u200b", "[*a](b)*", "`[a](b)`"]
CELL = st.lists(st.sampled_from(FRAGMENTS) | st.text(alphabet="ab `[]()<>*_\\|!&#;:/.-", max_size=3),
                max_size=6).map("".join)


@st.composite
def documents(draw):
    """Markdown with tables (escaped pipes, code spans, links, autolinks, emphasis, a reference
    definition, rows cut off by a blank line) among prose."""
    width = draw(st.integers(1, 4))
    out = []
    for _ in range(draw(st.integers(1, 3))):
        out.append(draw(st.sampled_from(["", "## Area", "Some *prose* with `code`.", "[ref]: specs/a.md",
                                         "> quote | x", "- item | y", "```", "    | indented |"])))
        rows = [[draw(CELL) for _ in range(width)] for _ in range(draw(st.integers(0, 4)))]
        out.append("| " + " | ".join(draw(CELL) or "h" for _ in range(width)) + " |")
        out.append("|" + "---|" * width)
        out.extend("| " + " | ".join(r) + " |" for r in rows)
        if draw(st.booleans()):
            out.extend(["", "| " + " | ".join(draw(CELL) for _ in range(width)) + " |"])
    return "\n".join(out) + "\n"


def _slow_tables(text, monkeypatch):
    """markdown.tables with every shortcut off: the full parser (emphasis on), every cell parsed
    inline, markdown-it's own split."""
    from markdown_it import MarkdownIt

    with monkeypatch.context() as m:
        m.setattr(sys.modules["markdown_it.rules_block.table"], "escapedSplit", ORIGINAL_SPLIT)
        full = MarkdownIt("commonmark").enable("table").disable("inline")
        m.setattr(markdown, "_block_parser", lambda: full)
        m.setattr(markdown, "_MARKUP", re.compile(""))
        markdown._tables.cache_clear()
        try:
            out = markdown.tables(text)
            for table in out:  # the cells parse on first use: inside this context, with the shortcuts off
                for cell in [*table.header, *(c for row in table.rows for c in row.cells)]:
                    assert cell.code is not None and cell.links is not None
            return out
        finally:
            markdown._tables.cache_clear()


@FUZZ
@given(documents())
def test_tables_equal_the_full_markdown_it_parse(text):
    with pytest.MonkeyPatch.context() as monkeypatch:
        slow = _slow_tables(text, monkeypatch)
    markdown._tables.cache_clear()
    assert markdown.tables(text) == slow


def test_a_cell_with_markup_keeps_its_code_spans_and_links():
    (table,) = markdown.tables("| ID | Spec |\n|---|---|\n| `ENG-A` | [s](specs/a.md) *x* <http://h.invalid> |\n")
    (cell_id, cell_spec), = [r.cells for r in table.rows]
    assert cell_id.code == ("ENG-A",)
    assert cell_spec.links == ("specs/a.md", "http://h.invalid")


def _unseen(ch: str) -> bool:
    """Default_Ignorable_Code_Point, as DerivedCoreProperties.txt lists it, or a format character."""
    ignorable = [(0x34F, 0x34F), (0x115F, 0x1160), (0x17B4, 0x17B5), (0x180B, 0x180F), (0x2065, 0x2065),
                 (0x3164, 0x3164), (0xFE00, 0xFE0F), (0xFFA0, 0xFFA0), (0xFFF0, 0xFFF8), (0xE0000, 0xE0FFF)]
    return unicodedata.category(ch) == "Cf" or any(lo <= ord(ch) <= hi for lo, hi in ignorable)


@FUZZ
@given(st.text(alphabet=st.characters(codec="utf-8"), max_size=30))
def test_visible_is_the_text_without_format_characters(text):
    assert visible(text) == "".join(" " if ch == "\u2800" else "" if _unseen(ch) else ch for ch in text)


# a small regex grammar: literals, classes, anchors, groups, alternation, repeats
ATOMS = st.sampled_from(["a", "b", "#", "ab", "\\s", "\\b", "^", "$", ".", "[ab]", "[^a]", "\\w", "(?=a)", "\\#"])


@st.composite
def patterns(draw, depth=0):
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        if depth < 2 and draw(st.integers(0, 4)) == 0:
            alts = [draw(patterns(depth + 1)) for _ in range(draw(st.integers(1, 3)))]
            parts.append(draw(st.sampled_from(["(?:{})", "({})", "(?i:{})", "(?>{})"])).format("|".join(alts)))
        else:
            parts.append(draw(ATOMS))
        parts[-1] += draw(st.sampled_from(["", "", "*", "+", "?", "{0,2}", "{2}", "+?", "*+"]))
    return "".join(parts)


@FUZZ
@given(patterns(), st.text(alphabet="ab# \nAB", max_size=20), st.sampled_from([0, re.M, re.I]))
def test_a_required_literal_is_in_every_match(pattern, text, flags):
    try:
        rx = re.compile(pattern, flags)
    except re.error:
        assume(False)  # the grammar can write `\\b*`: not a regex
    if rx.search(text):
        assert literals.may_match(rx, text), (pattern, text, literals.required(rx))


@pytest.mark.parametrize(("pattern", "want"), [
    (r"\bkCUDA\b", ("kCUDA",)), (r"\bis_cuda\s*\(\s*\)", ("is_cuda",)),
    (r'^\s*#\s*include\s*[<"](?:vt/cuda/|cuda_runtime)', ("cuda_runtime", "vt/cuda/")),
    (r"a|b*", None), (r"(?i)kcuda", None), (r"x?", None)])
def test_required_literals_of_the_preset_patterns(pattern, want):
    assert literals.required(re.compile(pattern)) == want


def test_the_worktree_state_is_read_per_run_never_reused(repo):
    """The script checker's `git status` is read once per Context: a later run sees a later edit."""
    repo.commit("seed", {"a.txt": "one\n"})
    git_repo = open_repo(repo.path)
    first = build(git_repo, Mode())
    assert first.worktree == (repo.git("rev-parse", "HEAD").strip(), False)
    (repo.path / "a.txt").write_text("two\n")
    assert first.worktree[1] is False  # the run's own view stays what it read
    assert build(git_repo, Mode()).worktree[1] is True


def test_a_cell_parsed_on_use_resolves_links_of_its_own_document():
    """The parse behind a cell is its document's: the same row under another reference definition
    (another tree's version of the file) links elsewhere, never to the first document's target."""
    row = "| ID | Spec |\n|---|---|\n| `ENG-A` | [spec][s] |\n"
    first = markdown.tables(row + "\n[s]: specs/a.md\n")
    second = markdown.tables(row + "\n[s]: specs/b.md\n")
    assert first[0].rows[0].cells[1].links == ("specs/a.md",)
    assert second[0].rows[0].cells[1].links == ("specs/b.md",)


def _filled_fields_per_heading(text):
    """spec_fields.filled_fields as it was: each heading's body judged again line by line."""
    from redfirst.checkers import spec_fields as sf
    from redfirst.checkers.lines import lines as git_lines

    lines = git_lines(text)
    fields = set()
    for i, line in enumerate(lines):
        heading = sf._HEADING.match(line)
        if heading:
            level = len(heading[1])
            end = next((j for j in range(i + 1, len(lines))
                        if (h := sf._HEADING.match(lines[j])) and len(h[1]) <= level), len(lines))
            if sf.has_content(lines[i + 1:end]):
                fields.add(markdown.words(heading[2]))
        elif line.startswith("|") and sf._value_row(lines, i):
            fields.add(markdown.words(sf.cells(line)[0]))
    return frozenset(fields)


SPEC_LINES = st.sampled_from(["# Spec", "## Scope", "### Sub", "## Gates", "  ## Indented", "", "TBD", "none", "-",
                              "Real prose.", "| Field | Value |", "|---|---|", "| --- | --- |", "| Owner | TBD |",
                              "| Scope | rows A |", "| a \\| b | c |", "```", "```sh", "| only |", "|", "#NoSpace"])


@FUZZ
@given(st.lists(SPEC_LINES, max_size=25), st.sampled_from(["\n", "\r\n"]))
def test_filled_fields_judges_each_line_once_with_the_same_answer(lines, newline):
    from redfirst.checkers import spec_fields

    text = newline.join(lines) + newline
    assert spec_fields.filled_fields(text) == _filled_fields_per_heading(text)


GLOBS = st.sampled_from(["*.md", "/README.md", "README.md", "docs/**", "/src/**/*.cpp", "**/*.h", "a?c", "/a/*",
                         "src/", "**", "/x/**/y/*.h"])
PATHS = st.lists(st.sampled_from(["README.md", "docs/README.md", "docs/a/b.md", "src/x.cpp", "src/a/b/c.cpp",
                                  "include/a.h", "abc", "a/abc", "a/b", "x/y/z.h", "x/q/y/z.h", "src/"]), max_size=8)


@FUZZ
@given(PATHS, st.lists(GLOBS, max_size=4))
def test_select_with_one_combined_regex_is_matches_per_pattern(paths, patterns):
    from redfirst.checkers.tree import matches, select

    assert select(paths, patterns) == [p for p in paths if any(matches(p, pat) for pat in patterns)]


def _restore_split(monkeypatch: pytest.MonkeyPatch) -> None:
    # Whatever the test does to markdown-it's table module is undone (the real one stays patched).
    table = importlib.import_module("markdown_it.rules_block.table")
    monkeypatch.setattr(table, "escapedSplit", table.escapedSplit)


def test_the_fast_split_is_skipped_when_markdown_its_internal_is_absent(monkeypatch: pytest.MonkeyPatch):
    """A markdown-it-py without `escapedSplit` (renamed or inlined in a later release): no patch, no crash."""
    _restore_split(monkeypatch)
    table = importlib.import_module("markdown_it.rules_block.table")
    monkeypatch.delattr(table, "escapedSplit")
    markdown._fast_table_split()
    assert not hasattr(table, "escapedSplit")
    monkeypatch.setitem(sys.modules, "markdown_it.rules_block.table", None)  # the module itself gone
    markdown._fast_table_split()


def test_the_fast_split_is_skipped_when_markdown_its_split_changed(monkeypatch: pytest.MonkeyPatch):
    """A later `escapedSplit` of the same name that splits otherwise (here: `\\|` no longer escapes
    the pipe) is kept: the fast one would give a different split than the parser's own."""
    _restore_split(monkeypatch)
    table = importlib.import_module("markdown_it.rules_block.table")

    def escapedSplit(string: str) -> list[str]:  # noqa: N802 - markdown-it's name
        return string.split("|")  # a release that no longer honours `\\|`

    monkeypatch.setattr(table, "escapedSplit", escapedSplit)
    markdown._fast_table_split()
    assert table.escapedSplit is escapedSplit


def _symbol_found_by_scanning(citation: re.Match, target: str) -> bool:
    """symbol_anchors' per-citation scan as it was: blank the citation and every citation, then search."""
    from redfirst.checkers.symbol_anchors import _FILE_EXT, SYMBOL

    haystack = SYMBOL.sub(lambda c: " " * len(c.group(0)), target.replace(citation.group(0), " " * len(citation.group(0))))
    leaf = citation.group("symbol").split("::")[-1]
    return re.search(rf"(?<![A-Za-z0-9_/]){re.escape(leaf)}(?![A-Za-z0-9_])(?!{_FILE_EXT})", haystack) is not None


TARGET_PIECES = st.sampled_from(["foo", "bar", "~foo", "a.c", "src/a.c", "::", "/", ".h", ".hx", " ", "\n", "_",
                                 "9", "-", "x.py", "src/a.c::foo", "src/a.c::foo::bar", "a.c::~foo", "(", "é"])


@FUZZ
@example("foo.h", "src/a.c::foo")
@example("x src/a.c::foo::foo", "src/a.c::foo")
@example("/foo ~foo", "a.c::~foo")
@given(st.lists(TARGET_PIECES, max_size=12).map("".join),
       st.sampled_from(["src/a.c::foo", "src/a.c::bar", "a.c::foo", "src/a.c::foo::bar", "a.c::~foo", "x.py::foo"]))
def test_a_symbol_is_found_from_the_words_of_its_file_as_by_scanning_it(target, cited):
    from redfirst.checkers.symbol_anchors import SYMBOL, _symbol, _Target

    (citation,) = SYMBOL.finditer(cited)
    found = not _symbol("notes.md", 1, citation, _Target(target))
    assert found == _symbol_found_by_scanning(citation, target)


@FUZZ
@given(st.lists(st.sampled_from(["ENG-1", "ENG-12", "x", "-", "_", " ", "\n", ".", "é", "ENG-1.2", "`"]),
                max_size=10).map("".join),
       st.sampled_from(["ENG-1", "ENG-12", "ENG-1.2", "x"]))
def test_a_row_id_is_found_in_the_words_of_a_spec_as_by_searching_it(body, row_id):
    from redfirst.checkers.matrices import _names

    searched = re.search(rf"(?<![A-Za-z0-9_-]){re.escape(row_id)}(?![A-Za-z0-9_-])", body) is not None
    assert _names(body, row_id) == searched
