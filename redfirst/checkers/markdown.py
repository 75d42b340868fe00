"""Markdown read with markdown-it-py: sections by heading and tables with their source lines."""

from __future__ import annotations

import functools
import html
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from redfirst.checkers.lines import markdown_to_git, visible

if TYPE_CHECKING:
    from markdown_it import MarkdownIt
    from markdown_it.token import Token


# markdown-it reads well under 1 MB a second: a text past this is not parsed (a 50 MB record held a
# run for many minutes). 4 Mi characters is over ten times the largest record of the corpus.
MAX_CHARS = 4 * 2**20


class TooLarge(Exception):
    """A text over MAX_CHARS characters: not parsed as markdown, so nothing about it is decided."""

    def __init__(self, chars: int) -> None:
        super().__init__(f"{chars:,} characters, over the {MAX_CHARS:,} a record is parsed up to as markdown: "
                         f"split it")


def _bounded(text: str) -> str:
    if len(text) > MAX_CHARS:
        raise TooLarge(len(text))
    return text


class Cell:
    """A table cell: its inline source as written, the contents of its `code spans` and the targets
    of its [links](...). Immutable; the inline parse behind `code` and `links` runs on first use
    (a checker reads a few columns of a matrix, and parsing every cell was most of its time)."""

    __slots__ = ("_parse", "_parsed", "text")

    def __init__(self, text: str, code: tuple[str, ...] = (), links: tuple[str, ...] = (),
                 parse: Callable[[str], tuple[tuple[str, ...], tuple[str, ...]]] | None = None) -> None:
        self.text = text
        self._parsed = None if parse else (tuple(code), tuple(links))
        self._parse = parse

    def _value(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if self._parsed is None:
            assert self._parse is not None
            self._parsed, self._parse = self._parse(self.text), None
        return self._parsed

    @property
    def code(self) -> tuple[str, ...]:
        return self._value()[0]

    @property
    def links(self) -> tuple[str, ...]:
        return self._value()[1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Cell) and (self.text, self.code, self.links) == (other.text, other.code, other.links)

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"Cell(text={self.text!r}, code={self.code!r}, links={self.links!r})"


@dataclass(frozen=True)
class Row:
    line: int  # 1-based git line
    cells: tuple[Cell, ...]


@dataclass(frozen=True)
class Table:
    line: int
    section: str  # text of the nearest `## ` heading above, "" before the first
    header: tuple[Cell, ...]
    rows: tuple[Row, ...]

    def column(self, header_name: str | list[str]) -> int | None:
        """A header written exactly so (a string), or by meaning (a list): the first header whose
        words contain one of the alternatives' words (`Our tests/evidence` for `tests evidence`)."""
        if isinstance(header_name, list):
            wanted_words = [f" {words(alt)} " for alt in header_name]
            for i, cell in enumerate(self.header):
                have = f" {words(strip_inline(cell.text))} "
                if any(alt in have for alt in wanted_words):
                    return i
            return None
        wanted = header_name.strip().lower()
        for i, cell in enumerate(self.header):
            if strip_inline(cell.text).lower() == wanted:
                return i
        return None


def words(text: str) -> str:
    """Lowercase words of a header or title, punctuation dropped: `Risks / decisions` -> `risks decisions`."""
    return " ".join(re.sub(r"[^a-z0-9]+", " ", text.lower()).split())


@dataclass(frozen=True)
class Section:
    title: str
    line: int  # git line of the heading
    body: str  # text under it up to the next heading of the same or a higher level
    body_line: int


@functools.lru_cache(maxsize=1)
def _parser() -> MarkdownIt:
    # Imported on first use: commit-message runs never parse markdown and start faster without it.
    from markdown_it import MarkdownIt

    return MarkdownIt("commonmark").enable("table")


@functools.lru_cache(maxsize=1)
def _block_parser() -> MarkdownIt:
    """Blocks only: inline markup is parsed for table cells alone (prose is most of a record's text),
    and there without emphasis: a Cell keeps code spans and links, which emphasis never changes
    (its rule skips nothing when a link label is scanned, and its pairing runs after both)."""
    from markdown_it import MarkdownIt

    _fast_table_split()
    md = MarkdownIt("commonmark").enable("table").disable("inline")
    md.inline.ruler.disable(["emphasis"])
    md.inline.ruler2.disable(["balance_pairs", "emphasis"])
    return md


def escaped_split(line: str) -> list[str]:
    """markdown-it's `escapedSplit` (a table row into cells at each pipe not right after a backslash,
    that backslash dropped), with str methods instead of a Python loop over every character: it was
    the largest cost of parsing a matrix. Equal to the original on every string (tests/checkers)."""
    if "\\" not in line:
        return line.split("|")
    return [part.replace("\\|", "|") for part in _UNESCAPED_PIPE.split(line)]


_UNESCAPED_PIPE = re.compile(r"(?<!\\)\|")


# Rows on which markdown-it's split must give ours before ours replaces it: escapes, doubled
# backslashes, empty cells, edges (a release that splits otherwise keeps its own).
_SPLIT_PROBES = ("", "|", "a|b", "|a|b|", "a\\|b", "a\\\\|b", "\\", "a\\", "\\|\\|", "||", "`a|b`", "a \\| b | c\\")


def _fast_table_split() -> None:
    """Put `escaped_split` in markdown-it's table rule, only where its `escapedSplit` is there and
    splits every probe as ours does: an internal renamed, gone or changed is left as it is."""
    import importlib

    try:
        table: Any = importlib.import_module("markdown_it.rules_block.table")  # the package's `table` is the rule
    except ImportError:
        return
    original = getattr(table, "escapedSplit", None)
    if original is escaped_split or not callable(original):
        return
    try:
        same = all(original(probe) == escaped_split(probe) for probe in _SPLIT_PROBES)
    except Exception:  # noqa: BLE001 - a changed signature: keep it
        return
    if same:
        table.escapedSplit = escaped_split


class _Source:
    """A text as markdown-it reads it (lines end at LF, CRLF or a lone CR) and the git line of each
    of those lines, so structure is CommonMark's and every reported line number is git's."""

    def __init__(self, text: str) -> None:
        self.lines = re.split(r"\r\n|\r|\n", text)
        self._git = markdown_to_git(text)

    def git_line(self, index0: int) -> int:
        return self._git[min(index0, len(self._git) - 1)]


def strip_inline(text: str) -> str:
    """A cell's source as a reader sees it: code and emphasis marks, HTML tags and comments and
    invisible characters (Unicode format characters) removed, entities decoded."""
    text = html.unescape(re.sub(r"<!--.*?-->|</?[A-Za-z][^>]*>", "", text, flags=re.S))
    return re.sub(r"[`*_]", "", visible(text)).strip()


# Every code span starts with a backtick, every link or image with `[` (a reference one too) and every
# autolink with `<`; a cell holding none of them needs no inline parse (Cell keeps only those).
_MARKUP = re.compile(r"[`\[<]")


def _cell(inline: Token) -> Cell:
    return Cell(inline.content, *_code_and_links(inline.children or []))


def _code_and_links(children: list[Token]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    code: list[str] = []
    links: list[str] = []
    for child in children:
        if child.type == "code_inline":
            code.append(visible(child.content))  # an id as a reader sees it, no zero-width disguise
        elif child.type == "link_open":
            links.append(str(child.attrs.get("href", "")))
    return tuple(code), tuple(links)


def _inline(md: MarkdownIt, env: dict[str, Any]) -> Callable[[str], tuple[tuple[str, ...], tuple[str, ...]]]:
    """The inline parse of one cell of a document (`env` holds its link reference definitions)."""

    def parse(content: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
        if not _MARKUP.search(content):  # a cell without these yields no code span and no link
            return (), ()
        children: list[Token] = []
        md.inline.parse(content, md, env, children)
        return _code_and_links(children)

    return parse


def tables(text: str) -> list[Table]:
    """Every table with its rows; rows split off a table by a blank line stay with it (see _continuation)."""
    return list(_tables(_bounded(text)))


@functools.lru_cache(maxsize=32)
def _tables(text: str) -> tuple[Table, ...]:
    # Several checkers read the same matrix; parse each text once per process.
    md = _block_parser()
    env: dict[str, Any] = {}  # link reference definitions, which the cells' inline parse resolves
    tokens = md.parse(text, env)
    parse = _inline(md, env)
    src = _Source(text)
    out: list[Table] = []
    section = ""
    i = 0
    after_table = False
    while i < len(tokens):
        tok = tokens[i]
        if tok.type == "heading_open" and tok.tag == "h2":
            section = tokens[i + 1].content
        if tok.type == "paragraph_open" and after_table and out and tok.map:
            extra = _continuation(out[-1], src.lines[tok.map[0]:tok.map[1]], tok.map[0], src.git_line)
            if extra:
                last = out[-1]
                out[-1] = Table(last.line, last.section, last.header, last.rows + extra)
                i += 3
                continue
        if tok.type != "table_open":
            after_table = False
            i += 1
            continue
        i, table = _table(tokens, i, section, src.git_line, parse=parse)
        out.append(table)
        after_table = True
    return tuple(out)


def _table(tokens: list[Token], i: int, section: str, git_line: Callable[[int], int], offset: int = 0,
           parse: Callable[[str], tuple[tuple[str, ...], tuple[str, ...]]] | None = None) -> tuple[int, Table]:
    """The table opening at tokens[i]; its cells parsed inline on use with `parse`, else from the
    tokens' children (a full parse)."""
    header: tuple[Cell, ...] = ()
    rows: list[Row] = []
    current: list[Cell] = []
    in_head = False
    opening = tokens[i].map
    start = git_line(opening[0] + offset) if opening else 0
    row_line = start
    i += 1
    while tokens[i].type != "table_close":
        t = tokens[i]
        if t.type == "thead_open":
            in_head = True
        elif t.type == "thead_close":
            in_head = False
        elif t.type == "tr_open":
            current = []
            row_line = git_line(t.map[0] + offset) if t.map else start
        elif t.type == "inline":
            current.append(Cell(t.content, parse=parse) if parse else _cell(t))
        elif t.type == "tr_close":
            if in_head:
                header = tuple(current)
            else:
                rows.append(Row(row_line, tuple(current)))
        i += 1
    return i + 1, Table(start, section, header, tuple(rows))


def _continuation(table: Table, block: list[str], first: int, git_line: Callable[[int], int]) -> tuple[Row, ...]:
    """Rows a stray blank line cut off a table render as text, but the record means them as rows of
    the table above; parse each such line (with markdown-it, under that table's header) as its row."""
    if not block or not block[0].lstrip().startswith("|") or not table.header:
        return ()
    head = "| " + " | ".join(c.text for c in table.header) + " |"
    rule = "|" + "---|" * len(table.header)
    rows: list[Row] = []
    for k, line in enumerate(block):
        if not line.lstrip().startswith("|"):
            continue  # prose wrapped out of a row; it was never a row
        md = _block_parser()
        env: dict[str, Any] = {}  # a document of its own: no reference definitions
        tokens = md.parse("\n".join([head, rule, line]), env)
        start = next((n for n, t in enumerate(tokens) if t.type == "table_open"), None)
        if start is not None:
            rows.extend(_table(tokens, start, table.section, git_line, offset=first + k - 2,
                               parse=_inline(md, env))[1].rows)
    return tuple(rows)


def sections(text: str, level: int = 2) -> list[Section]:
    tokens = _parser().parse(_bounded(text))
    src = _Source(text)
    lines = src.lines
    heads: list[tuple[int, int, str, int]] = []  # (level, line0, title, body_start0)
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open" and tok.map:
            heads.append((int(tok.tag[1]), tok.map[0], tokens[i + 1].content, tok.map[1]))
    out = []
    for k, (lvl, line0, title, body0) in enumerate(heads):
        if lvl != level:
            continue
        end = len(lines)
        for lvl2, line2, _t, _b in heads[k + 1:]:
            if lvl2 <= level:
                end = line2
                break
        out.append(Section(title, src.git_line(line0), "\n".join(lines[body0:end]), src.git_line(body0)))
    return out


# What a browser shows nothing of in an HTML block: a comment, processing instruction, CDATA section or
# declaration (each to its end, or to the end of the page when left open, as CommonMark's block runs on),
# and every tag.
_UNSEEN_HTML = re.compile(r"<!--.*?(?:-->|\Z)|<\?.*?(?:\?>|\Z)|<!\[CDATA\[.*?(?:\]\]>|\Z)|<![A-Za-z].*?(?:>|\Z)|"
                          r"<[^>]*>", re.S)

# Inline tokens whose content is what a reader sees (an entity or an escape arrives as text_special).
_SEEN = ("text", "text_special", "code_inline")


def visible_text(text: str) -> str:
    """What a reader of the rendered markdown sees, a line per source line: markup, HTML tags and
    comments, link definitions and headings dropped, entities decoded, invisible characters (a
    zero-width space, a BOM: Unicode's format characters) removed."""
    out: list[str] = []
    in_heading = False
    for tok in _parser().parse(_bounded(text)):
        if tok.type in ("heading_open", "heading_close"):
            in_heading = tok.type == "heading_open"
        elif tok.type == "inline" and not in_heading:
            out.append("".join(c.content if c.type in _SEEN else "[image]" if c.type == "image" else
                               "\n" if c.type in ("softbreak", "hardbreak") else "" for c in tok.children or []))
        elif tok.type in ("fence", "code_block"):
            out.append(tok.content)
        elif tok.type == "html_block":
            out.append(html.unescape(_UNSEEN_HTML.sub("", tok.content)))
    return visible("\n".join(out))
