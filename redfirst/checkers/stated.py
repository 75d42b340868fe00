"""Rules whose numbers a repository states in its own files (e.g. its checker script): a matrix's
inventory totals and a portfolio's block order. Read at the head, where the change that moves them
states the new value; a statement the merge base makes and the head drops is a finding, and a rule
the repository states nowhere is not its rule (off)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any, Protocol

from redfirst.checkers.markdown import Cell, Table, strip_inline
from redfirst.checkers.model import Finding
from redfirst.checkers.tree import Tree

_STR_LIST = {"type": "array", "items": {"type": "string"}}
_HEADER = {"anyOf": [{"type": "string"}, _STR_LIST]}
# group 1 of `pattern`'s first match in file `from`
STATED = {"type": "object", "required": ["from", "pattern"], "additionalProperties": False,
          "properties": {"from": {"type": "string"}, "pattern": {"type": "string", "format": "regex"}}}
MEASURES = ["rows", "members", "distinct_members", "distinct_targets", "distinct_target_prefixes"]
def _doc(node: dict[str, Any], description: str, example: Any, **more: Any) -> dict[str, Any]:
    return {**node, "description": description, "examples": [example], **more}


_HEADER_DOC = "a column header written exactly so, or a list of words one of which the header holds"
INVENTORY_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["members", "target", "totals"], "additionalProperties": False,
    "properties": {
        "members": _doc(_HEADER, f"the column whose code spans are a row's members; {_HEADER_DOC}", "Aliases"),
        "target": _doc(_HEADER, f"the column whose last code span holding `separator` is a row's target; "
                                f"{_HEADER_DOC}", "Target"),
        "separator": _doc({"type": "string", "minLength": 1}, "what a target's code span holds; its prefix is "
                          "the text before it", "/", default="::"),
        # label (as the message names it) -> what is counted, and where the repository states it
        "totals": _doc({"type": "object", "minProperties": 1, "additionalProperties": {
            "type": "object", "required": ["measure", "from", "pattern"], "additionalProperties": False,
            "properties": {
                "measure": _doc({"enum": MEASURES}, "what is counted over the rows that name members and a target",
                                "distinct_members"),
                "from": _doc({"type": "string"}, "the file that states the total", "README.md"),
                "pattern": _doc({"type": "string", "format": "regex"}, "a regex whose group 1 (first match) is the "
                                "stated total; a total no longer stated where the merge base stated it is a finding",
                                r"(\d+) architectures")}}},
            "label (as the message names it) -> what is counted and where the repository states it",
            {"archs": {"measure": "distinct_members", "from": "README.md", "pattern": r"(\d+) architectures"}}),
    },
}
ORDER_SCHEMA: dict[str, Any] = {
    "type": "object", "required": ["path", "position", "id", "id_pattern", "expected"], "additionalProperties": False,
    "properties": {
        "path": _doc({"type": "string"}, "the portfolio file", "PORTFOLIO.md"),
        "position": _doc(_HEADER, f"the column holding each block's position number; {_HEADER_DOC}", "#"),
        "id": _doc(_HEADER, f"the column holding each block's id; {_HEADER_DOC}", "Block"),
        "state": _doc(_HEADER, f"the column holding each block's one lifecycle state; {_HEADER_DOC}", "State"),
        "id_pattern": _doc({"type": "string", "format": "regex"}, "what a block id looks like (full match)",
                           "^B[0-9]+$"),
        # the ids in order: every match of `item` (its group 1) inside group 1 of `pattern` in `from`
        "expected": _doc({"type": "object", "required": ["from", "pattern", "item"], "additionalProperties": False,
                          "properties": {
                              "from": _doc({"type": "string"}, "the file that states the order", "tools/order.txt"),
                              "pattern": _doc({"type": "string", "format": "regex"}, "a regex whose group 1 holds "
                                              "the ids in order", r"(?s)ORDER = \[(.*?)\]"),
                              "item": _doc({"type": "string", "format": "regex"}, "a regex whose group 1 is one id, "
                                           "matched throughout that text", r"'(B[0-9]+)'")}},
                         "the order as the repository states it: every `item` inside group 1 of `pattern` in `from`",
                         {"from": "tools/order.txt", "pattern": r"(?s)ORDER = \[(.*?)\]", "item": r"'(B[0-9]+)'"}),
    },
}


class Row(Protocol):
    cells: dict[str, Cell]


def stated_text(tree: Tree | None, spec: dict[str, str]) -> str | None:
    """Group 1 of the statement in `tree`, None when the tree does not make it."""
    if tree is None:
        return None
    match = re.search(spec["pattern"], tree.read(spec["from"]) or "", re.M)
    return None if match is None else match.group(1)


def dropped(spec: dict[str, str], head: Tree, base: Tree | None, what: str) -> Finding | None:
    """A finding when the merge base states `what` and the head no longer does (a change may not
    delete the rule that judges it); None when the head states it or neither does."""
    if stated_text(head, spec) is not None or stated_text(base, spec) is None:
        return None
    return Finding(spec["from"], 1, "stated-removed",
                   f"{spec['from']} no longer states {what} (no match for {spec['pattern']}), which the merge base "
                   f"states: keep the statement, or drop the rule in its own reviewed change")


def inventory_totals(rows: Iterable[Row], separator: str) -> dict[str, int]:
    """The measures over the rows that name members and a target (the others are not inventory)."""
    counted = []
    for row in rows:
        members = list(row.cells["_members"].code) if "_members" in row.cells else []
        targets = [c for c in row.cells["_target"].code if separator in c] if "_target" in row.cells else []
        if members and targets:
            counted.append((members, targets[-1]))
    return {
        "rows": len(counted),
        "members": sum(len(m) for m, _ in counted),
        "distinct_members": len({a for m, _ in counted for a in m}),
        "distinct_targets": len({t for _, t in counted}),
        "distinct_target_prefixes": len({t.split(separator, 1)[0] for _, t in counted}),
    }


def check_inventory(path: str, rows: list[Any], cfg: dict[str, Any], head: Tree, base: Tree | None,
                    findings: list[Finding]) -> None:
    totals = cfg["totals"]
    measured = inventory_totals(rows, cfg.get("separator", "::"))
    actual: dict[str, int] = {}
    expected: dict[str, int] = {}
    for label, spec in totals.items():
        value = stated_text(head, spec)
        if value is None:
            gone = dropped(spec, head, base, f"the {label} total of {path}")
            if gone:
                findings.append(gone)
            continue  # not stated: not the repository's rule
        actual[label], expected[label] = measured[spec["measure"]], int(value)
    if actual != expected:
        where = ", ".join(dict.fromkeys(f"{s['from']}@{head.label}" for s in totals.values()))
        findings.append(Finding(path, 1, "inventory",
                                f"inventory {actual}; {where} states {expected}: update the statement in the "
                                f"same change that adds or removes inventory rows"))


def check_order(cfg: dict[str, Any], tables: list[Table], states: list[str], head: Tree, base: Tree | None,
                findings: list[Finding]) -> int | None:
    """Blocks seen in order; None when the repository states no order (the rule is off)."""
    spec = cfg["expected"]
    body = stated_text(head, spec)
    if body is None:
        gone = dropped(spec, head, base, f"the block order of {cfg['path']}")
        if gone:
            findings.append(gone)
            return 0
        return None
    expected = [m.group(1) for m in re.finditer(spec["item"], body)]
    id_rx = re.compile(cfg["id_pattern"])
    seen: list[tuple[int, str, int]] = []  # (position, id, line)
    for table in tables:
        pos_col, id_col = table.column(cfg["position"]), table.column(cfg["id"])
        state_col = table.column(cfg["state"]) if "state" in cfg else None
        if pos_col is None or id_col is None:
            continue
        for row in table.rows:
            if max(pos_col, id_col) >= len(row.cells):
                continue
            position, block = strip_inline(row.cells[pos_col].text), strip_inline(row.cells[id_col].text)
            if not position.isdigit() or not id_rx.fullmatch(block):
                continue
            seen.append((int(position), block, row.line))
            if state_col is not None:
                cell = row.cells[state_col] if state_col < len(row.cells) else Cell("", (), ())
                found = [c for c in cell.code if c in states]
                if len(found) != 1 or strip_inline(cell.text) != found[0]:
                    findings.append(Finding(cfg["path"], row.line, "order-state",
                                            f"block {block} needs exactly one lifecycle state in its state cell"))
    want = list(enumerate(expected))
    if [(p, b) for p, b, _ in seen] != want:
        first = next((line for k, (p, b, line) in enumerate(seen) if k >= len(want) or (p, b) != want[k]), 1)
        findings.append(Finding(cfg["path"], first, "order",
                                f"block order {[(p, b) for p, b, _ in seen]}; {spec['from']}@{head.label} states "
                                f"{want}: renumber the blocks, or change the stated order in the same change"))
    return len(seen)
