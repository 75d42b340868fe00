"""`gates run --html` and `mutate --html`: one self-contained page, rendered by real headless
Chromium (Debian's `chromium`): the DOM it builds holds the expected table cells, and its
screenshot shows the verdict colours."""

from __future__ import annotations

import html.parser
import os
import shutil
import struct
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from redfirst.gates.html_report import COLOURS


def chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if not found:
        (pytest.fail if os.environ.get("CI") else pytest.skip)("chromium is not installed (apt-get install chromium)")
    return str(found)


def headless(page: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                           f"--user-data-dir={page.parent / 'chromium-profile'}", *args, page.as_uri()],
                          capture_output=True, text=True, timeout=120)


class Cells(html.parser.HTMLParser):
    """The text of every cell of each table, by table id."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: dict[str, list[list[str]]] = {}
        self.table: str | None = None
        self.cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "table":
            self.table = dict(attrs).get("id") or ""
            self.tables[self.table] = []
        elif tag == "tr" and self.table is not None:
            self.tables[self.table].append([])
        elif tag in ("td", "th"):
            self.cell = []

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None and self.table is not None:
            self.tables[self.table][-1].append("".join(self.cell).strip())
            self.cell = None
        elif tag == "table":
            self.table = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell.append(data)


def dom_tables(page: Path) -> dict[str, list[list[str]]]:
    proc = headless(page, "--dump-dom")
    assert proc.returncode == 0 and "<table" in proc.stdout, proc.stderr[-2000:]
    parser = Cells()
    parser.feed(proc.stdout)
    return parser.tables


def png_pixels(path: Path) -> set[tuple[int, int, int]]:
    """Every colour of a non-interlaced 8-bit RGB/RGBA PNG (what Chromium writes)."""
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    at, idat, header = 8, b"", b""
    while at < len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        body = data[at + 8:at + 8 + length]
        header = body if kind == b"IHDR" else header
        idat += body if kind == b"IDAT" else b""
        at += 12 + length
    width, height, depth, colour_type = struct.unpack(">IIBB", header[:10])
    assert depth == 8 and colour_type in (2, 6)
    bpp = 3 if colour_type == 2 else 4
    raw, stride = zlib.decompress(idat), width * bpp
    previous, colours, pos = bytearray(stride), set(), 0
    for _ in range(height):
        kind, line = raw[pos], bytearray(raw[pos + 1:pos + 1 + stride])
        pos += 1 + stride
        for i in range(stride):
            left = line[i - bpp] if i >= bpp else 0
            up, corner = previous[i], previous[i - bpp] if i >= bpp else 0
            if kind == 1:
                line[i] = (line[i] + left) & 255
            elif kind == 2:
                line[i] = (line[i] + up) & 255
            elif kind == 3:
                line[i] = (line[i] + (left + up) // 2) & 255
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                line[i] = (line[i] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 255
        colours.update(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        previous = line
    return colours


def rgb(hex_colour: str) -> tuple[int, int, int]:
    return tuple(int(hex_colour[i:i + 2], 16) for i in (1, 3, 5))  # type: ignore[return-value]


@pytest.fixture
def project(make_project) -> Path:
    return make_project({
        "red.yaml": "gate: broken\ndriver: {type: command, run: \"echo '1 passed, 1 failed'; exit 1\", format: plain}\n",
        "none.yaml": "gate: skipped-all\ndriver: {type: command, run: \"echo '0 passed, 0 failed'\", format: plain}\n"})


def test_gates_run_html_page_holds_the_verdict_table_in_real_chromium(project: Path, tmp_path: Path):
    page = tmp_path / "out" / "gates.html"
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.gates.cli", "run", "-q", "--root", str(project),
                           "--html", str(page)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    tables = dom_tables(page)
    header, *rows = tables["verdicts"]
    assert header == ["item", "verdict", "cause", "counts", "time", "evidence", "reason"]
    by_id = {row[0]: row for row in rows}
    assert by_id["value-check"][1:3] == ["GREEN", ""]
    assert by_id["broken"][1:3] == ["RED", "exit"]
    assert by_id["skipped-all"][1:3] == ["NO_DECISION", "evidence"] and "0 cases" in by_id["skipped-all"][6]
    assert all(row[4].endswith("s") and len(row[5]) == 12 for row in rows)   # a time and an evidence id each
    shot = tmp_path / "out" / "gates.png"
    proc = headless(page, f"--screenshot={shot}", "--window-size=1200,800")
    assert shot.is_file(), proc.stderr[-2000:]
    colours = png_pixels(shot)
    for verdict in ("GREEN", "RED", "NO_DECISION"):
        assert rgb(COLOURS[verdict]) in colours, verdict
    assert rgb(COLOURS["ERROR"]) not in colours   # no ERROR row, so no ERROR colour


def test_mutate_html_page_holds_the_matrix_and_each_diff_in_real_chromium(project: Path, tmp_path: Path):
    page = tmp_path / "out" / "mutate.html"
    proc = subprocess.run([sys.executable, "-P", "-m", "redfirst.mutations.cli", "--root", str(project), "--file", "value.txt",
                           "--anchor", "good", "--replace", "bad", "--gate", "value-check", "--html", str(page)],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tables = dom_tables(page)
    assert tables["verdicts"][1][:2] == ["ad-hoc", "KILLED"]
    assert tables["matrix"] == [["mutation", "value-check"], ["ad-hoc", "RED"]]
    text = page.read_text()
    assert "-good" in text and "+bad" in text and "a/value.txt" in text
    shot = tmp_path / "out" / "mutate.png"
    headless(page, f"--screenshot={shot}", "--window-size=1200,800")
    colours = png_pixels(shot)
    assert rgb(COLOURS["KILLED"]) in colours and rgb(COLOURS["RED"]) in colours
