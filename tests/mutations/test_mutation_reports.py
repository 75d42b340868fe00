"""`mutate --html` as Stryker's and PIT's reports are read (a source view with each mutant inline
at its real line, filters by outcome, a score per file and in total, real hunk headers), rendered
by real headless Chromium, offline; and `mutate --format mutation-testing-report`, validated
against the schema of npm's `mutation-testing-report-schema` (.ci/setup installs it in build/npm)."""

from __future__ import annotations

import html.parser
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mutate_helpers import git, require_git, write

sys.path.insert(0, str(Path(__file__).parents[1] / "gates"))
from test_html_report import png_pixels, rgb  # noqa: E402  (the gate page's Chromium helpers)

from redfirst.gates.html_report import COLOURS  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
SCHEMA = REPO / "build/npm/node_modules/mutation-testing-report-schema/dist/src/mutation-testing-report-schema.json"
CALC = """\
def add(a, b):
    return a + b


def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x
"""
UTIL = "def double(x):\n    return x * 2\n"
MUTATIONS = {   # id -> file, anchor, replace, the gate that must go red
    "add-minus": ("calc/__init__.py", "a + b", "a - b", "add"),          # KILLED at line 2
    "clamp-edge": ("calc/__init__.py", "x > hi", "x >= hi", "clamp"),    # SURVIVED at line 8: no test at hi
    "double-triple": ("calc/util.py", "x * 2", "x * 3", "util"),         # KILLED at line 2
}


def need(what: str, found: Any, how: str) -> Any:
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)(f"{what} is missing: {how}")
    return found


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One real `mutate` run of three mutations over two files: its page, its report, its output."""
    require_git()
    tmp = tmp_path_factory.mktemp("reports")
    root = tmp / "repo"
    write(root, "calc/__init__.py", CALC)
    write(root, "calc/util.py", UTIL)
    write(root, "tests/test_add.py", "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n")
    write(root, "tests/test_clamp.py", "from calc import clamp\n\n\ndef test_clamp():\n    assert clamp(5, 0, 10) == 5\n"
          "    assert clamp(11, 0, 10) == 10\n")
    write(root, "tests/test_util.py", "from calc.util import double\n\n\ndef test_double():\n    assert double(2) == 4\n")
    for gate in ("add", "clamp", "util"):
        write(root, f"gates/{gate}.yaml", f"gate: {gate}\ndriver: {{type: pytest, run: [tests/test_{gate}.py]}}\n")
    for mid, (file, anchor, replace, gate) in MUTATIONS.items():
        write(root, f"mutations/{mid}.yaml", json.dumps({"mutation": mid, "file": file, "anchor": anchor,
                                                         "replace": replace, "expect": {"red": [gate]}}))
    write(root, ".gitignore", "__pycache__/\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "calc")
    page = tmp / "out" / "mutate.html"
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(root), "-n", "2",
                           "--html", str(page), "--format", "mutation-testing-report"], capture_output=True,
                          text=True, timeout=300, env={**os.environ, "XDG_CACHE_HOME": str(tmp / "cache")})
    return {"root": root, "page": page, "proc": proc, "tmp": tmp}


def chromium(url: str, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    browser = need("chromium", shutil.which("chromium") or shutil.which("chromium-browser"), "apt-get install chromium")
    return subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={out / 'chromium-profile'}", *args, url],
                          capture_output=True, text=True, timeout=120)


class Rows(html.parser.HTMLParser):
    """Each source view's rows, (file, kind, line number or mutant id, outcome, hidden), the files
    table's cells, the total score and whatever the page would fetch."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[str, str, str, str, bool]] = []
        self.files: list[list[str]] = []
        self.fetches: list[str] = []
        self.score = ""
        self._file = self._cell = None  # type: str | None
        self._row: tuple[str, str, bool] | None = None
        self._in: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        self.fetches += [f"{tag} {k}={v}" for k, v in a.items() if k in ("src", "href") and v]
        self.fetches += ["@import/url()"] if tag == "link" else []
        if tag == "section" and a.get("data-file"):
            self._file = a["data-file"]
        elif tag == "tr" and self._file and a.get("class") in ("line", "hit", "mutant"):
            self._row = (a["class"] or "", a.get("data-outcome") or "", "hidden" in a)
            self._cell = ""
        elif tag == "table" and a.get("id") == "files":
            self._in = "files"
        elif tag == "tr" and self._in == "files":
            self.files.append([])
        elif tag == "td" and self._in == "files":
            self._cell = ""
        elif tag == "b" and a.get("id") == "score":
            self._in, self._cell = "score", ""
        elif tag == "div" and self._row and self._row[0] == "mutant" and (a.get("id") or "").startswith("m-"):
            self.rows.append((self._file or "", "mutant", (a["id"] or "")[2:], self._row[1], self._row[2]))
            self._row = self._cell = None

    def handle_endtag(self, tag: str) -> None:
        if tag == "section":
            self._file = None
        elif tag == "td" and self._row and self._row[0] != "mutant" and self._cell is not None:
            self.rows.append((self._file or "", self._row[0], self._cell.strip(), self._row[1], self._row[2]))
            self._row = self._cell = None
        elif tag == "td" and self._in == "files" and self._cell is not None:
            self.files[-1].append(self._cell.strip())
            self._cell = None
        elif tag == "table" and self._in == "files":
            self._in = None
        elif tag == "b" and self._in == "score":
            self.score, self._in, self._cell = (self._cell or "").strip(), None, None

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell += data
        if "@import" in data or "url(" in data:
            self.fetches.append(data[:80])


def dom(run: dict[str, Any], fragment: str = "") -> tuple[Rows, str]:
    proc = chromium(run["page"].as_uri() + fragment, run["tmp"], "--dump-dom")
    assert proc.returncode == 0 and "<table" in proc.stdout, proc.stderr[-2000:]
    rows = Rows()
    rows.feed(proc.stdout)
    return rows, proc.stdout


def test_each_mutant_is_inline_at_its_real_line_with_scores_in_real_chromium(run):
    assert run["proc"].returncode == 1, run["proc"].stdout + run["proc"].stderr   # one SURVIVED
    rows, text = dom(run)
    # the line a mutant sits at is the row just before it, in its own file's source
    before = {r[2]: (rows.rows[i - 1][0], rows.rows[i - 1][2], r[3]) for i, r in enumerate(rows.rows) if r[1] == "mutant"}
    assert before == {"add-minus": ("calc/__init__.py", "2", "KILLED"),
                      "clamp-edge": ("calc/__init__.py", "8", "SURVIVED"),
                      "double-triple": ("calc/util.py", "2", "KILLED")}
    assert sum(r[1] != "mutant" for r in rows.rows) == CALC.count("\n") + UTIL.count("\n")   # every source line
    assert [r for r in rows.files if r] == [["calc/__init__.py", "2", "1", "1", "50.0%"], ["calc/util.py", "1", "1", "0", "100.0%"]]
    assert rows.score == "66.7%"
    assert not any(r[4] for r in rows.rows)        # no filter asked: every mutant shown
    # real hunk headers: the whole file's diff, not the anchor's `@@ -1 +1 @@`
    assert "@@ -5,6 +5,6 @@" in text and "@@ -1,2 +1,2 @@" in text and "@@ -1 +1 @@" not in text
    assert rows.fetches == []     # offline: nothing to fetch when it is viewed


def test_the_outcome_filters_hide_the_other_mutants_in_real_chromium(run):
    rows, _ = dom(run, "#show=SURVIVED")
    hidden = {r[2]: r[4] for r in rows.rows if r[1] == "mutant"}
    assert hidden == {"add-minus": True, "clamp-edge": False, "double-triple": True}


def test_the_screenshot_shows_the_source_view_in_the_outcome_colours(run):
    shot = run["tmp"] / "mutate-report.png"
    proc = chromium(run["page"].as_uri(), run["tmp"], f"--screenshot={shot}", "--window-size=1000,760")
    assert shot.is_file(), proc.stderr[-2000:]
    colours = png_pixels(shot)
    assert rgb(COLOURS["KILLED"]) in colours and rgb(COLOURS["SURVIVED"]) in colours
    if os.environ.get("REDFIRST_DOCS_SCREENSHOTS"):    # how docs/mutate-report.png is made
        shutil.copyfile(shot, REPO / "docs" / "mutate-report.png")


def test_mutation_testing_report_is_valid_against_the_npm_schema(run):
    schema = json.loads(need("the mutation-testing-report-schema npm package", SCHEMA.is_file() and SCHEMA.read_text(),
                             f"run .ci/setup (npm installs it into {SCHEMA.parents[4]})"))
    doc = json.loads(run["proc"].stdout)
    jsonschema.validate(doc, schema)
    mutants = {m["id"]: (f, m["status"], m["location"]) for f, v in doc["files"].items() for m in v["mutants"]}
    assert mutants == {
        "add-minus": ("calc/__init__.py", "Killed", {"start": {"line": 2, "column": 12}, "end": {"line": 2, "column": 17}}),
        "clamp-edge": ("calc/__init__.py", "Survived", {"start": {"line": 8, "column": 8}, "end": {"line": 8, "column": 14}}),
        "double-triple": ("calc/util.py", "Killed", {"start": {"line": 2, "column": 12}, "end": {"line": 2, "column": 17}})}
    assert doc["files"]["calc/util.py"]["source"] == UTIL and doc["files"]["calc/util.py"]["language"] == "python"


def test_a_report_never_reads_a_harness_failure_as_killed():
    from redfirst.mutations.testing_report import STATUS, score

    assert {o for o, s in STATUS.items() if s == "Killed"} == {"KILLED"}
    assert score(["ERROR", "DISCARDED", "EQUIVALENT"]) is None            # nothing decided: no score, not 100
    assert score(["KILLED", "ERROR", "UNSCOPED"]) == 50.0                 # UNSCOPED counts against it


def test_a_mutant_is_placed_only_where_its_anchor_occurs_as_it_names():
    from redfirst.gates.model import Source
    from redfirst.mutations.model import Mutation
    from redfirst.mutations.placed import place

    text = "x = 1\ny = x + 1\nz = x + 1\n"

    def at(anchor: str, occurrence: int | None = None, file: str = "f.py") -> Any:
        return place(Mutation("m", file, anchor, "x - 1", Source(Path("m.yaml"), 1), occurrence=occurrence),
                     {"f.py": text})

    assert at("x + 1") is None                        # ambiguous: no line is guessed
    assert at("x + 1", occurrence=3) is None and at("w") is None and at("x + 1", 1, "gone.py") is None
    second = at("x + 1", occurrence=2)
    assert (second.start, second.end) == ((3, 5), (3, 10))
    assert "@@ -1,3 +1,3 @@\n x = 1\n y = x + 1\n-z = x + 1\n+z = x - 1" in second.diff


def test_two_formats_for_stdout_are_a_usage_error(tmp_path):
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(tmp_path), "--json",
                           "--format", "mutation-testing-report"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2 and proc.stdout == "" and "give one" in proc.stderr
