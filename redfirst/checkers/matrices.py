"""matrices: row ids, one lifecycle state per row, state obligations, row-count pins, summaries, claims."""

from __future__ import annotations

import functools
import posixpath
import re
from collections import Counter, defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redfirst.checkers import matrices_schema, spec_fields
from redfirst.checkers import stated as stated_rules
from redfirst.checkers.anchors import LineCounts, line_anchors
from redfirst.checkers.context import Context
from redfirst.checkers.markdown import Cell, Table, TooLarge, escaped_split, strip_inline, tables
from redfirst.checkers.model import CheckResult, Finding, Undecided, decide
from redfirst.checkers.records import read_file, removed
from redfirst.checkers.shapes import table_shapes

name = "matrices"
needs = "tree"
summary = "row ids, one lifecycle state per row, state obligations, row pins, summary tables, claims"
schema: dict[str, Any] = matrices_schema.SCHEMA

DEFAULT_COLUMNS = {"id": "ID", "state": "State", "owner": "Owner", "spec": "Spike/spec", "evidence": "Tests/evidence"}
HEX = re.compile(r"^[0-9a-f]{7,40}$")


@dataclass(frozen=True)
class MatrixRow:
    id: str
    state: str | None
    line: int
    path: str
    section: str
    cells: dict[str, Cell]  # semantic column name -> cell


class _Collector:
    """Findings and undecided inputs of one result; missing inputs are grouped per rule."""

    def __init__(self) -> None:
        self.findings: list[Finding] = []
        self.missing: dict[str, list[str]] = defaultdict(list)

    def miss(self, rule: str, what: str) -> None:
        if what not in self.missing[rule]:
            self.missing[rule].append(what)

    def undecided(self) -> list[Undecided]:
        out = []
        for rule, items in self.missing.items():
            shown = ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
            out.append(Undecided(rule, shown))
        return out


OFF = "_off_id_patterns"  # set by keep_present only, never by a redfirst.yaml (the schema refuses it)


def keep_present(config: dict[str, Any], exists: Any) -> dict[str, Any] | None:
    """The matrices (and claims files) of a preset that this repository keeps; None when none."""
    files = [entry for entry in config["files"] if exists(entry["path"])]
    if not files:
        return None
    # the id patterns of the matrices left off: a claim naming only their rows still names row ids
    off = [entry["id_pattern"] for entry in config["files"] if not exists(entry["path"])]
    return {**config, "files": files, "claims": [c for c in config.get("claims", []) if exists(c["path"])],
            "orders": [o for o in config.get("orders", []) if exists(o["path"])], OFF: off,
            "required": [p for p in config.get("required", []) if exists(p)],
            "references": [p for p in config.get("references", []) if exists(p)]}


def check(config: dict[str, Any], ctx: Context) -> list[CheckResult]:
    states = list(config["states"])
    results = []
    all_rows: dict[str, MatrixRow] = {}
    patterns: list[tuple[re.Pattern[str], str, bool]] = []  # (id pattern, file, file present)
    for entry in config["files"]:
        columns = {**DEFAULT_COLUMNS, **config.get("columns", {}), **entry.get("columns", {})}
        if "inventory" in entry:
            columns.update(_members=entry["inventory"]["members"], _target=entry["inventory"]["target"])
        text, refused = read_file(ctx.head, entry["path"])
        patterns.append((re.compile(entry["id_pattern"]), entry["path"], text is not None))
        gone = refused.finding() if refused else removed(ctx, entry["path"], "matrix-removed", "matrix")
        if gone:
            results.append(decide(f"{name}:{entry['path']}", [gone]))
            continue
        if text is None:
            results.append(decide(f"{name}:{entry['path']}", [], [Undecided(
                "matrix", f"{entry['path']} is not in the tree at {ctx.head.label}")]))
            continue
        out = _Collector()
        try:
            rows = parse_rows(entry["path"], text, re.compile(entry["id_pattern"]), columns, states, out,
                              entry.get("other_rows", "finding") == "skip")
        except TooLarge as exc:
            results.append(decide(f"{name}:{entry['path']}", [], [Undecided("matrix", f"{entry['path']} is {exc}")]))
            continue
        if config.get("shapes"):
            out.findings.extend(table_shapes(entry["path"], text))
        for row in rows:
            if row.id in all_rows:
                first = all_rows[row.id]
                out.findings.append(Finding(row.path, row.line, "unique-id",
                                            f"row id {row.id} is already used at {first.path}:{first.line}: "
                                            f"ids are stable and never reused; give this row a new id"))
            else:
                all_rows[row.id] = row
        if "rows" in entry:
            check_row_count(entry, len(rows), ctx, out)
        if "inventory" in entry:
            stated_rules.check_inventory(entry["path"], rows, entry["inventory"], ctx.head, ctx.base, out.findings)
        if "summary" in entry:
            check_summary(entry["path"], text, entry["summary"], rows, states, out)
        for obligation in config.get("obligations", []):
            for row in rows:
                if row.state in obligation["states"]:
                    apply_obligation(obligation, row, ctx, out)
        counts = {"rows": len(rows), **{s.lower(): sum(r.state == s for r in rows) for s in states}}
        results.append(decide(f"{name}:{entry['path']}", out.findings, out.undecided(), counts, len(rows), "rows"))
    for claims in config.get("claims", []):
        results.append(check_claims({**claims, "shapes": config.get("shapes", False)}, all_rows, patterns, ctx,
                                    [re.compile(p) for p in config.get(OFF, [])]))
    results.extend(check_orders([{**o, "shapes": config.get("shapes", False)} for o in config.get("orders", [])],
                                states, ctx))
    if config.get("required"):
        results.append(check_required(config["required"], ctx))
    if config.get("references"):
        results.append(check_references(config["references"], all_rows, patterns, ctx))
    return results


def check_references(paths: list[str], rows: dict[str, MatrixRow], patterns: list[tuple[re.Pattern[str], str, bool]],
                     ctx: Context) -> CheckResult:
    """In each of `paths`, a code span that is an id of a matrix in the tree names one of its rows
    (`unknown-row`, once per id and file, at its first line); a path the head lacks is undecided."""
    findings: list[Finding] = []
    missing: list[Undecided] = []
    checked = read = 0  # ids checked; files read (a file naming no row id is judged too)
    for path in paths:
        text, refused = read_file(ctx.head, path)
        if refused or text is None:
            gone = refused.finding() if refused else removed(ctx, path, "references-removed", "record")
            findings.extend([gone] if gone else [])
            missing.extend([] if gone else [Undecided("references", f"{path} is not in the tree at {ctx.head.label}")])
            continue
        read += 1
        seen: set[str] = set()
        for match in re.finditer(r"`([^`\n]+)`", text):
            ref = match.group(1)
            owner = next((p for rx, p, present in patterns if present and rx.fullmatch(ref)), None)
            if owner is None or ref in seen:
                continue
            seen.add(ref)
            checked += 1
            if ref not in rows:
                findings.append(Finding(path, text.count("\n", 0, match.start()) + 1, "unknown-row",
                                        f"{ref} is not a row of {owner}: fix the id or add the row"))
    return decide(f"{name}:references", findings, missing, {"ids": checked, "files": read}, read, "files")


def check_required(paths: list[str], ctx: Context) -> CheckResult:
    """Each of `paths` is a regular file at the head: one deleted or renamed in the range is
    `required-removed`, one the head simply lacks `required`, a link or submodule `blob-mode`."""
    findings: list[Finding] = []
    for path in paths:
        text, refused = read_file(ctx.head, path)
        if refused:
            findings.append(refused.finding())
        elif text is None:
            findings.append(removed(ctx, path, "required-removed", "canonical record") or
                            Finding(path, 1, "required", f"canonical record {path} is missing at {ctx.head.label}: "
                                                         f"restore it"))
    return decide(f"{name}:required", findings, counts={"files": len(paths)}, checked=len(paths), what="files")


def check_orders(orders: list[dict[str, Any]], states: list[str], ctx: Context) -> list[CheckResult]:
    results = []
    for cfg in orders:
        check_id = f"{name}:order:{cfg['path']}"
        text, refused = read_file(ctx.head, cfg["path"])
        gone = refused.finding() if refused else removed(ctx, cfg["path"], "order-removed", "portfolio")
        if gone:
            results.append(decide(check_id, [gone]))
            continue
        if text is None:
            results.append(decide(check_id, [], [Undecided("order", f"{cfg['path']} is not in the tree at "
                                                                     f"{ctx.head.label}")]))
            continue
        findings: list[Finding] = []
        try:
            parsed = tables(text)
        except TooLarge as exc:
            results.append(decide(check_id, [], [Undecided("order", f"{cfg['path']} is {exc}")]))
            continue
        seen = stated_rules.check_order(cfg, parsed, states, ctx.head, ctx.base, findings)
        if cfg.get("shapes"):
            findings.extend(table_shapes(cfg["path"], text))
        if seen is not None:
            results.append(decide(check_id, findings, counts={"blocks": seen}, checked=seen, what="blocks"))
    return results


def check_row_count(entry: dict[str, Any], counted: int, ctx: Context, out: _Collector) -> None:
    """A pin in redfirst.yaml, or one the repository states (read at the head, where the change that adds a
    row raises it, and never below the merge base's: rows are not deleted)."""
    pin = entry["rows"]
    if isinstance(pin, int):
        if counted != pin:
            out.findings.append(Finding(entry["path"], 1, "row-count",
                                        f"{counted} rows; the pin says {pin}: never delete a row, and raise the "
                                        f"pin in redfirst.yaml in the same change that adds one"))
        return
    head, where = stated(ctx.head, pin)
    if head is None:
        out.miss("row-count", where)
        return
    if counted != head:
        out.findings.append(Finding(entry["path"], 1, "row-count",
                                    f"{counted} rows; {where} says {head}: never delete a row, and raise the count "
                                    f"there in the same change that adds one"))
    before, _ = stated(ctx.base, pin) if ctx.base is not None else (None, "")
    if before is not None and head < before:
        out.findings.append(Finding(pin["from"], 1, "row-count",
                                    f"the stated row count of {entry['path']} went down {before} -> {head}: rows "
                                    f"are never deleted"))


def stated(tree: Any, pin: dict[str, str]) -> tuple[int | None, str]:
    """The count `pin` reads from `tree`, and where it was read (for messages)."""
    where = f"{pin['from']}@{tree.label}"
    text = tree.read(pin["from"])
    match = re.search(pin["pattern"], text or "", re.M)
    if match is None:
        return None, f"{where} (no match for {pin['pattern']})"
    return int(match.group(1)), where


def parse_rows(path: str, text: str, id_pattern: re.Pattern[str], columns: dict[str, Any], states: list[str],
               out: _Collector, skip_other: bool = False) -> list[MatrixRow]:
    rows = []
    for table in tables(text):
        id_col = table.column(columns["id"])
        if id_col is None:
            continue
        index = {key: table.column(header) for key, header in columns.items()}
        for row in table.rows:
            if id_col >= len(row.cells):
                continue
            row_id = strip_inline(row.cells[id_col].text)
            if not id_pattern.fullmatch(row_id) and skip_other:
                continue
            if not id_pattern.fullmatch(row_id):
                out.findings.append(Finding(path, row.line, "row-id",
                                            f"row id {row_id!r} does not match {id_pattern.pattern}: "
                                            f"use a stable id with the area prefix"))
                continue
            cells = {key: row.cells[i] for key, i in index.items() if i is not None and i < len(row.cells)}
            state = None
            state_cell = cells.get("state")
            if state_cell is None:
                out.findings.append(Finding(path, row.line, "state", f"row {row_id} has no `{columns['state']}` cell"))
            else:
                found = [c for c in state_cell.code if c in states] or \
                    ([strip_inline(state_cell.text)] if strip_inline(state_cell.text) in states else [])
                if len(found) == 1:
                    state = found[0]
                else:
                    problem = "no lifecycle state" if not found else f"{len(found)} lifecycle states ({', '.join(found)})"
                    out.findings.append(Finding(path, row.line, "state",
                                                f"row {row_id} has {problem}: write exactly one of "
                                                f"{', '.join(states)} in `{columns['state']}`"))
            rows.append(MatrixRow(row_id, state, row.line, path, table.section, cells))
    return rows


def check_summary(path: str, text: str, cfg: dict[str, Any], rows: list[MatrixRow], states: list[str],
                  out: _Collector) -> None:
    first = cfg.get("first_column", "Area")
    rows_col_name = cfg.get("rows_column", "Rows")
    total_name = cfg.get("total_row", "Total").lower()
    table = next((t for t in tables(text) if t.header and strip_inline(t.header[0].text) == first), None)
    if table is None:
        out.findings.append(Finding(path, 1, "summary", f"no summary table (first column `{first}`): add one "
                                                        f"with a row per section and a {cfg.get('total_row', 'Total')} row"))
        return
    state_cols: list[tuple[int, str]] = []
    for i, cell in enumerate(table.header[1:], start=1):
        label = strip_inline(cell.text)
        if label in states:
            state_cols.append((i, label))
    seen = Counter(label for _i, label in state_cols)
    for label, n in seen.items():
        if n > 1:
            out.findings.append(Finding(path, table.line, "summary",
                                        f"summary has {n} `{label}` columns: one column per lifecycle state"))
    for state in states:
        if state not in seen and any(r.state == state for r in rows):
            out.findings.append(Finding(path, table.line, "summary",
                                        f"summary has no `{state}` column: add it with the counted rows"))
    rows_col = table.column(rows_col_name)
    if rows_col is None:
        out.findings.append(Finding(path, table.line, "summary", f"summary has no `{rows_col_name}` column: add it "
                                                                 f"with the counted rows ({len(rows)})"))
    sections: list[str] = []
    for row in rows:
        if row.section not in sections:
            sections.append(row.section)
    total = next((r for r in table.rows if total_name in strip_inline(r.cells[0].text).lower()), None)
    areas = [r for r in table.rows if r is not total]
    if cfg.get("areas", True) and len(areas) != len(sections):
        out.findings.append(Finding(path, table.line, "summary",
                                    f"summary has {len(areas)} area rows for {len(sections)} sections with rows: "
                                    f"one summary row per section, in order"))

    def compare(srow: Any, scope: list[MatrixRow], label: str, where: str) -> None:
        wanted = [(rows_col, "rows", len(scope))] if rows_col is not None else []
        wanted += [(i, s.lower(), sum(r.state == s for r in scope)) for i, s in state_cols]
        for col, key, actual in wanted:
            raw = strip_inline(srow.cells[col].text) if col < len(srow.cells) else ""
            if not raw.isdigit():
                out.findings.append(Finding(path, srow.line, "summary", f"{label} {key} is {raw!r}, not a number: "
                                                                       f"write the counted value {actual}"))
            elif int(raw) != actual:
                out.findings.append(Finding(path, srow.line, "summary",
                                            f"{label} {key}={raw}; actual {actual}{where}: "
                                            f"update the summary to the counted rows"))

    for srow, section in zip(areas, sections, strict=False) if cfg.get("areas", True) else ():
        compare(srow, [r for r in rows if r.section == section], f"summary row '{strip_inline(srow.cells[0].text)}'",
                f" in section '{section}'")
    if total is None:
        out.findings.append(Finding(path, table.line, "summary", f"summary has no {cfg.get('total_row', 'Total')} row"))
    else:
        compare(total, rows, "summary", "")


def apply_obligation(ob: dict[str, Any], row: MatrixRow, ctx: Context, out: _Collector) -> None:
    rule = ob["rule"]
    cell = row.cells.get(ob["column"])
    text = cell.text if cell else ""
    advice = ob.get("message", "")
    if "pattern" in ob:
        if not re.search(ob["pattern"], text):
            out.findings.append(Finding(row.path, row.line, rule, f"{row.state} row {row.id} lacks {advice or ob['pattern']}"))
        return
    links = [link.split("#", 1) for link in (cell.links if cell else ())]
    if "spec_link" in ob:
        check_spec_link(ob, row, links, ctx, out)
        return
    if "anchor" in ob:
        anchor = ob["anchor"]
        absent: list[str] = []
        if not line_anchors(row.path, cell.links if cell else (), text, _line_counts(ctx),
                            anchor.get("prefixes", ()), anchor.get("files", ()), absent):
            if absent:  # it cites a file this tree lacks (a snapshot without the ledger): undecidable
                for path in absent:
                    gone = _cited_gone(ctx, row, path, rule, "cites")
                    if gone:
                        out.findings.append(gone)
                    else:
                        out.miss(rule, path)
                return
            wanted = ", ".join([*anchor.get("prefixes", ()), *anchor.get("files", ())])
            out.findings.append(Finding(row.path, row.line, rule,
                                        f"{row.state} row {row.id} lacks {advice or 'an exact line anchor'}: cite "
                                        f"an existing line of {wanted} as path:N or [..](path#LN)"))
        return
    if ob.get("commit"):
        shas = [c for c in (cell.code if cell else ()) if HEX.match(c)] or \
            ([strip_inline(text)] if HEX.match(strip_inline(text)) else [])
        for sha in shas:
            if ctx.shallow:
                out.miss(rule, f"closing commit {sha} (shallow clone: history absent)")
            elif not ctx.in_history(sha):
                out.findings.append(Finding(row.path, row.line, rule,
                                            f"{row.state} row {row.id} names closing commit {sha}, which is not in "
                                            f"the history: name the commit that closed the row"))
        return
    for target, *frag in links:
        if not re.search(ob["link_line"], target) or not frag or not re.fullmatch(r"L[0-9]+", frag[0]):
            continue
        path = posixpath.normpath(posixpath.join(posixpath.dirname(row.path), target))
        body, refused = read_file(ctx.head, path)
        line = int(frag[0][1:])
        if refused:
            out.findings.append(refused.finding(row.path, row.line, f"{row.state} row {row.id} links {path}"))
        elif body is None and (gone := _cited_gone(ctx, row, path, rule, "links")):
            out.findings.append(gone)
        elif body is None:
            out.miss(rule, path)
        elif not 1 <= line <= (count := _line_counts(ctx).of(path) or 0):
            out.findings.append(Finding(row.path, row.line, rule,
                                        f"{row.state} row {row.id} links {path}#L{line}, past its "
                                        f"{count} lines: link the exact line"))


def _cited_gone(ctx: Context, row: MatrixRow, path: str, rule: str, verb: str) -> Finding | None:
    """A finding at the row when the file it cites is no file at the head because the range made it
    so: a link or submodule (or under one), or deleted or renamed since the merge base. None when
    the tree simply lacks it (a snapshot without the ledger): a missing input, not a verdict."""
    _text, refused = read_file(ctx.head, path)
    if refused:
        return refused.finding(row.path, row.line, f"{row.state} row {row.id} {verb} {path}")
    if removed(ctx, path, rule, "cited file") is None:
        return None
    return Finding(row.path, row.line, rule, f"{row.state} row {row.id} {verb} {path}, which was deleted or renamed "
                                             f"at {ctx.head.label}: cite the file where it lives now")


def _line_counts(ctx: Context) -> LineCounts:
    """One cache of line counts per run: many rows cite the same files."""
    counts = getattr(ctx, "_line_counts", None)
    if counts is None or counts.tree is not ctx.head:
        counts = LineCounts(ctx.head)
        ctx._line_counts = counts  # type: ignore[attr-defined]
    return counts


def check_spec_link(ob: dict[str, Any], row: MatrixRow, links: list[list[str]], ctx: Context,
                    out: _Collector) -> None:
    """The row links an existing spec; with `names_row`, one linked spec names the row's id; with
    `sections`, that spec fills each of them."""
    rule, advice = ob["rule"], ob.get("message", "")
    specs = [posixpath.normpath(posixpath.join(posixpath.dirname(row.path), target))
             for target, *_ in links if re.search(ob["spec_link"], target)]
    if not specs:
        out.findings.append(Finding(row.path, row.line, rule,
                                    f"{row.state} row {row.id} links no spec ({advice or 'a `planned:` mention is not a spec'}): "
                                    f"link the accepted spec"))
        return
    bodies: list[tuple[str, str]] = []
    for spec in dict.fromkeys(specs):
        body, refused = read_file(ctx.head, spec)
        if refused:
            out.findings.append(refused.finding(row.path, row.line, f"{row.state} row {row.id} links {spec}"))
        elif body is None and (gone := _cited_gone(ctx, row, spec, rule, "links")):
            out.findings.append(gone)
        elif body is None:
            out.miss(rule, spec)
        else:
            bodies.append((spec, body))
    if not bodies:
        return
    if ob.get("names_row"):
        bodies = [(spec, body) for spec, body in bodies if _names(body, row.id)]
        if not bodies:
            out.findings.append(Finding(row.path, row.line, rule,
                                        f"{row.state} row {row.id} links {', '.join(dict.fromkeys(specs))}, none of "
                                        f"which names {row.id}: link the spec of this row, or name the row in it"))
            return
    spec, body = bodies[0]
    for label in spec_fields.missing(body, ob.get("sections", {})):
        out.findings.append(Finding(spec, 1, "spec-section",
                                    f"spec for {row.id} ({row.state}) lacks a filled `{label}` section: write it, "
                                    f"not a placeholder"))


_ID_CHARS = r"[A-Za-z0-9_-]"
_ID_WORD = re.compile(rf"{_ID_CHARS}+")


def _names(body: str, row_id: str) -> bool:
    """`body` holds `row_id` standing alone (no id character on either side)."""
    if _ID_WORD.fullmatch(row_id):  # then a match is one whole word of id characters
        return row_id in _id_words(body)
    return re.search(rf"(?<!{_ID_CHARS}){re.escape(row_id)}(?!{_ID_CHARS})", body) is not None


@functools.lru_cache(maxsize=64)
def _id_words(body: str) -> frozenset[str]:
    # a spec many rows link is split once, not searched once per row
    return frozenset(_ID_WORD.findall(body))


CLAIM_ID = r"CLAIM-[A-Za-z0-9_.-]+"
_NOT_ID_CHAR = r"[A-Za-z0-9_.-]"


def row_refs(cell: Cell, patterns: list[tuple[re.Pattern[str], str, bool]]) -> list[str]:
    """The row ids a claim's cell names, in order, once each: its code spans that are ids, and ids
    written in its text (with or without backticks) standing alone."""
    found = [c for c in cell.code if any(rx.fullmatch(c) for rx, _p, _present in patterns)]
    for rx, _p, _present in patterns:
        found += [m.group(0) for m in re.finditer(rf"(?<!{_NOT_ID_CHAR})(?:{rx.pattern})(?!{_NOT_ID_CHAR})", cell.text)]
    return list(dict.fromkeys(found))


def claim_rows(text: str, claim_tables: list[Table], cfg: dict[str, Any],
               owner_rx: re.Pattern[str]) -> list[tuple[int, str, str, Cell | None]]:
    """Every claim of a claims file, as (line, claim as written, claim id, its row ids cell): the rows of
    its claims tables, and each other table-looking line whose first cell starts with a claim id (a
    claim row left below prose after the table renders as text, yet vllm.cpp's script reads it as a
    claim; its row ids cell is at the claims table's column)."""
    out: list[tuple[int, str, str, Cell | None]] = []
    col = next((c for t in claim_tables if (c := t.column(cfg.get("rows_column", "Row IDs"))) is not None), None)
    seen = {trow.line for t in claim_tables for trow in t.rows}
    for table in claim_tables:
        if (tcol := table.column(cfg.get("rows_column", "Row IDs"))) is None:
            continue
        for trow in table.rows:
            named = owner_rx.search(trow.cells[0].text)
            claim = strip_inline(trow.cells[0].text)
            out.append((trow.line, claim, named.group(0) if named else claim,
                        trow.cells[tcol] if tcol < len(trow.cells) else None))
    for number, raw in enumerate(text.split("\n"), 1):
        if number in seen or col is None or not raw.startswith("|"):
            continue
        cells = [c.strip() for c in escaped_split(raw.strip())[1:]]
        named = owner_rx.match(cells[0].strip("` ")) if cells else None
        if named:
            out.append((number, named.group(0), named.group(0), Cell(cells[col]) if col < len(cells) else None))
    return sorted(out, key=lambda claim: claim[0])


def check_claims(cfg: dict[str, Any], rows: dict[str, MatrixRow], patterns: list[tuple[re.Pattern[str], str, bool]],
                 ctx: Context, off: Sequence[re.Pattern[str]] = ()) -> CheckResult:
    """Claims and rows agree both ways. A caller may rely on: every claim of the claims tables names
    at least one row id (`claim-empty`) and is listed once (`claim-duplicate`); every id it names is a
    row of its matrix (`claim-row`) in a claimable state (`claim-state`); and every row in a claimable
    state whose owner cell names a claim (`owner`, CLAIM-* by default) is named by that claim
    (`owner-claim`, at the row). A matrix not in the tree leaves its references undecided; one a preset
    left off (`off`, its id patterns) is not judged, though a claim naming only its rows names ids."""
    path = cfg["path"]
    check_id = f"{name}:claims:{path}"
    allowed = cfg.get("states", ["SPIKE", "ACTIVE"])
    owner_rx = re.compile(cfg.get("owner", CLAIM_ID))
    text, refused = read_file(ctx.head, path)
    gone = refused.finding() if refused else removed(ctx, path, "claims-removed", "claims file")
    if gone:
        return decide(check_id, [gone])
    if text is None:
        return decide(check_id, [], [Undecided("claims", f"{path} is not in the tree at {ctx.head.label}")])
    out = _Collector()
    checked = 0
    absent: dict[str, str] = {}  # matrix not in the tree -> first reference into it
    try:
        parsed = tables(text)
    except TooLarge as exc:
        return decide(check_id, [], [Undecided("claims", f"{path} is {exc}")])
    claim_tables: list[Table] = [t for t in parsed if t.header and
                                 strip_inline(t.header[0].text) == cfg.get("table", "Claim")]
    if cfg.get("shapes"):
        out.findings.extend(table_shapes(path, text))
    claimed: dict[str, tuple[int, set[str]]] = {}  # claim id -> (its line, the row ids it names)
    for line, claim, key, cell in claim_rows(text, claim_tables, cfg, owner_rx):
        refs = row_refs(cell, patterns) if cell is not None else []
        if key in claimed:
            out.findings.append(Finding(path, line, "claim-duplicate",
                                        f"{claim} is already claimed at {path}:{claimed[key][0]}: one row per "
                                        f"claim; merge the two"))
        else:
            claimed[key] = (line, set(refs))
        if not refs and not (cell is not None and row_refs(cell, [(rx, "", False) for rx in off])):
            out.findings.append(Finding(path, line, "claim-empty",
                                        f"{claim} names no stable row id: name the matrix rows it claims"))
        for ref in refs:
            owner = next(((p, present) for rx, p, present in patterns if rx.fullmatch(ref)), None)
            if owner is None:
                continue
            row = rows.get(ref)
            if row is None:
                if owner[1]:
                    out.findings.append(Finding(path, line, "claim-row",
                                                f"{claim} references {ref}, which is not a row of {owner[0]}: "
                                                f"fix the id or add the row"))
                else:
                    absent.setdefault(owner[0], ref)
                continue
            checked += 1
            if row.state not in allowed:
                out.findings.append(Finding(path, line, "claim-state",
                                            f"{claim} references {ref} in state {row.state}, not "
                                            f"{'/'.join(allowed)}: release the claim, or return the row to a "
                                            f"claimable state"))
    for matrix, ref in absent.items():
        out.miss("claim-row", f"{matrix} (rows such as {ref})")
    if not claim_tables:
        out.miss("claims", f"no `{cfg.get('table', 'Claim')}` table in {path}")
    else:
        for row in rows.values():
            owner_cell = row.cells.get("owner")
            match = owner_rx.search(owner_cell.text) if owner_cell and row.state in allowed else None
            if match and row.id not in claimed.get(match.group(0), (0, set()))[1]:
                checked += 1
                out.findings.append(Finding(row.path, row.line, "owner-claim",
                                            f"{row.state} row {row.id} names owner {match.group(0)}, which does not "
                                            f"claim it in {path}: list the row under that claim, or name the claim "
                                            f"that holds it"))
            elif match:
                checked += 1
    return decide(check_id, out.findings, out.undecided(), {"references": checked}, checked, "claim references")
