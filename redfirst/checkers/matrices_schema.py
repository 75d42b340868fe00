"""The `matrices:` entry of redfirst.yaml, every key with its meaning and an example (docs/reference.md
is generated from it); redfirst.checkers.matrices checks against it."""

from __future__ import annotations

from typing import Any

from redfirst.checkers import stated as stated_rules


def _doc(node: dict[str, Any], description: str, example: Any, **more: Any) -> dict[str, Any]:
    return {**node, "description": description, "examples": [example], **more}


_STR_LIST = {"type": "array", "items": {"type": "string"}}
# a header written exactly so (a string), or by meaning: any header holding one of these words (a list)
_COLUMNS = {"type": "object", "additionalProperties": {"anyOf": [{"type": "string"}, _STR_LIST]}}
# a count the repository states: group 1 of `pattern`'s first match in file `from` (e.g. its checker script)
_STATED = {"type": "object", "required": ["from", "pattern"], "additionalProperties": False,
           "properties": {
               "from": _doc({"type": "string"}, "the file that states the count", "tools/check_matrix.py"),
               "pattern": _doc({"type": "string", "format": "regex"}, "a regex whose group 1 (first match) is the "
                               "count", r"EXPECTED_ROWS = (\d+)")}}
_COLUMNS_DOC = ("the header of each column the checker reads, by role (`id`, `state`, `owner`, `spec`, `evidence`): "
                "a header written exactly so, or a list of words one of which the header holds; unset: ID, State, "
                "Owner, Spike/spec, Tests/evidence")

SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["states", "files"],
    "additionalProperties": False,
    "examples": [{"states": ["SPIKE", "ACTIVE", "DONE"], "files": [{"path": "matrix.md", "id_pattern": "^M-[0-9]+$"}]}],
    "properties": {
        "states": _doc({**_STR_LIST, "minItems": 1}, "the lifecycle states; each row holds exactly one",
                       ["SPIKE", "ACTIVE", "DONE"]),
        "columns": _doc(_COLUMNS, _COLUMNS_DOC, {"state": "Status", "evidence": ["tests", "evidence"]}),
        "files": _doc({
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path", "id_pattern"],
                "additionalProperties": False,
                "properties": {
                    "path": _doc({"type": "string"}, "the matrix file", "docs/matrix.md"),
                    "id_pattern": _doc({"type": "string", "format": "regex"}, "what a row id looks like (full "
                                       "match of the id cell)", "^M-[0-9]+$"),
                    "rows": _doc({"anyOf": [{"type": "integer", "minimum": 0}, _STATED]},
                                 "the number of rows the file must have: a number, or the count a file states",
                                 {"from": "tools/check_matrix.py", "pattern": r"EXPECTED_ROWS = (\d+)"}),
                    "other_rows": _doc({"enum": ["finding", "skip"]}, "rows of an id table whose first cell is "
                                       "no id: a finding, or skipped", "skip", default="finding"),
                    "columns": _doc(_COLUMNS, "this file's column headers, over the matrices-wide `columns`",
                                    {"id": "Row"}),
                    "inventory": _doc(stated_rules.INVENTORY_SCHEMA, "totals over the rows (members, targets), "
                                      "checked against what the repository states",
                                      {"members": "Aliases", "target": "Target", "totals": {"archs": {
                                          "measure": "distinct_members", "from": "README.md",
                                          "pattern": r"(\d+) architectures"}}}),
                    "summary": _doc({
                        "type": "object",
                        "additionalProperties": False,
                        "properties": {
                            "first_column": _doc({"type": "string"}, "the first header of the summary table",
                                                 "Section", default="Area"),
                            "rows_column": _doc({"type": "string"}, "the column counting each area's rows", "Count",
                                                default="Rows"),
                            "total_row": _doc({"type": "string"}, "the first cell of the total row", "All",
                                              default="Total"),
                            "areas": _doc({"type": "boolean"}, "one summary row per section with rows, in order",
                                          False, default=True)},
                    }, "a summary table in the file whose counts per section and state must be the counted rows",
                        {"first_column": "Area", "total_row": "Total"}),
                },
            },
        }, "the matrix files and their row ids", [{"path": "docs/matrix.md", "id_pattern": "^M-[0-9]+$"}]),
        "obligations": _doc({
            "type": "array",
            "items": {
                "type": "object",
                "required": ["rule", "states", "column"],
                "additionalProperties": False,
                "properties": {
                    "rule": _doc({"type": "string"}, "the rule name findings carry", "active-has-spec"),
                    "states": _doc(_STR_LIST, "the states the obligation applies to", ["ACTIVE"]),
                    "column": _doc({"type": "string"}, "the column role whose cell must meet it", "spec"),
                    "pattern": _doc({"type": "string", "format": "regex"}, "the cell's text must match this",
                                    r"\S"),
                    "spec_link": _doc({"type": "string", "format": "regex"}, "the cell must link an existing spec "
                                      "whose path matches this", r"^specs/.+\.md$"),
                    "names_row": _doc({"type": "boolean"}, "with `spec_link`: a linked spec names the row's id",
                                      True, default=False),
                    "commit": _doc({"type": "boolean"}, "the cell's commit ids must be in the history", True,
                                   default=False),
                    "link_line": _doc({"type": "string", "format": "regex"}, "links to files matching this must "
                                      "name an existing line (`#L12`)", r"\.py$"),
                    # a local line anchor: a [link](path#L12) or a bare path:12 into an existing file,
                    # inside its length, whose path starts with one of `prefixes` or is one of `files`
                    "anchor": _doc({"type": "object", "additionalProperties": False,
                                    "properties": {
                                        "prefixes": _doc(_STR_LIST, "path prefixes an anchor may point under",
                                                         ["src/"]),
                                        "files": _doc(_STR_LIST, "files an anchor may point into", ["README.md"])}},
                                   "the cell must cite an existing line (`path:12` or `[..](path#L12)`)",
                                   {"prefixes": ["src/"]}),
                    # with spec_link: sections (label -> accepted titles) the linked spec must fill
                    "sections": _doc({"type": "object", "additionalProperties": _STR_LIST},
                                     "with `spec_link`: sections (label -> accepted titles) the spec must fill",
                                     {"goal": ["Goal", "Why"]}),
                    "message": _doc({"type": "string"}, "what the finding says the row lacks", "a linked spec"),
                },
                "oneOf": [{"required": ["pattern"]}, {"required": ["spec_link"]}, {"required": ["commit"]},
                          {"required": ["link_line"]}, {"required": ["anchor"]}],
            },
        }, "what a row in a given state must hold in a given column (one of pattern, spec_link, commit, "
           "link_line, anchor)", [{"rule": "active-has-spec", "states": ["ACTIVE"], "column": "spec",
                                   "spec_link": r"^specs/"}]),
        "orders": _doc({"type": "array", "items": stated_rules.ORDER_SCHEMA},
                       "a portfolio's blocks in the order the repository states",
                       [{"path": "PORTFOLIO.md", "position": "#", "id": "Block", "id_pattern": "^B[0-9]+$",
                         "expected": {"from": "tools/order.txt", "pattern": r"(?s)(.*)", "item": r"(B[0-9]+)"}}]),
        "shapes": _doc({"type": "boolean"}, "every table line of the matrices, claims and portfolio files has its "
                       "table's pipe count", True, default=False),
        "references": _doc(_STR_LIST, "files in which every `code span` that is a row id (of a matrix in the tree) "
                           "names a row", ["README.md"]),
        "required": _doc(_STR_LIST, "files the record keeps: each missing at the head is a finding",
                         ["docs/matrix.md"]),
        "claims": _doc({
            "type": "array",
            "items": {
                "type": "object",
                "required": ["path"],
                "additionalProperties": False,
                "properties": {
                    "path": _doc({"type": "string"}, "the claims file", "CLAIMS.md"),
                    "table": _doc({"type": "string"}, "the first header of the claims table", "Claim",
                                  default="Claim"),
                    "rows_column": _doc({"type": "string"}, "the column naming each claim's row ids", "Rows",
                                        default="Row IDs"),
                    "states": _doc(_STR_LIST, "the states a claimed row may be in", ["ACTIVE"],
                                   default=["SPIKE", "ACTIVE"]),
                    "owner": _doc({"type": "string", "format": "regex"}, "a claim's id, in its first cell and in a "
                                  "claimable row's owner cell", "^C-[0-9]+$", default="CLAIM-[A-Za-z0-9_.-]+")},
            },
        }, "claims tables that must agree with the matrices both ways", [{"path": "CLAIMS.md"}]),
    },
}
