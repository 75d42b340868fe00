"""What each rule a checker reports means: the SARIF rule descriptions and help (GitHub code
scanning shows them beside each alert). A rule a checker reports must be here
(tests/checkers/test_sarif.py reads every `Finding(...)` of the checkers to hold that)."""

from __future__ import annotations

from redfirst import sarif

GUIDE = "docs/guide.md, section \"Record checkers\""

RULES: dict[str, str] = {
    # append_only, doc_checkpoint, caps, shapes, tree
    "append-only": "An append-only file changed a line it already had, or was deleted or renamed.",
    "doc-checkpoint": "Files a checkpoint watches changed but the document that must follow them did not.",
    "cap-file": "A file is over its size cap in bytes.",
    "cap-paragraph": "A paragraph is over its cap in characters.",
    "cap-cell": "A table cell is over its cap in characters.",
    "caps": "A caps entry matches no file.",
    "table-shape": "A table line has a different pipe count from its table's first line.",
    "blob-mode": "A file the policy reads is not a regular file at the revision read (a link, a submodule).",
    # specs, matrices
    "spec-content": "A required spec section is empty or a placeholder.",
    "spec-sections": "No spec file matches the configured glob.",
    "spec-section": "A matrix row's spec lacks a filled section that its state requires.",
    "matrix": "A configured matrix file is not in the tree.",
    "row-id": "A matrix row id does not match the configured id pattern.",
    "unique-id": "A matrix row id is used twice; ids are stable and never reused.",
    "row-count": "A matrix has a different number of rows than its summary states (a row was deleted or the "
                 "count not raised).",
    "state": "A matrix row has no state cell.",
    "summary": "A matrix file lacks its summary table.",
    "required": "A file the record keeps is missing at the head.",
    "required-removed": "The range deleted or renamed a file the record keeps.",
    "claims": "The configured claims file is not in the tree.",
    "claim-duplicate": "A claim is listed twice in the claims file.",
    "claim-empty": "A claim names no matrix row id.",
    "claim-row": "A claim names an id that is not a row of the matrices.",
    "claim-state": "A claim names a row whose state cannot be claimed.",
    "owner-claim": "A claimable row names an owner claim that does not list it.",
    "references": "A configured references file is not in the tree.",
    "unknown-row": "A code span names a row id that no matrix holds.",
    "order": "A configured order file is not in the tree.",
    "order-state": "A block of an ordered file needs exactly one lifecycle state.",
    "inventory": "A stated inventory count differs from the count in the tree.",
    "stated-removed": "A file no longer states what the merge base stated (a count or a claim was removed).",
    # commits
    "subject-pattern": "A commit subject does not match the configured pattern.",
    "subject-period": "A commit subject ends with a period.",
    "subject-length": "A commit subject is longer than the configured maximum.",
    "body-required": "A commit has no body saying what changed and why.",
    "trailer-required": "A commit lacks a required trailer.",
    "trailer-forbidden": "A commit carries a trailer the policy forbids.",
    "trailer-format": "A commit trailer's value does not match its pattern.",
    "trailer-identity": "A sign-off or co-author trailer names a forbidden identity.",
    "message-required": "A commit message lacks a text the policy requires.",
    # symbol_anchors, ratchets, env_documented, script
    "anchor-file": "A source link names a file that does not exist.",
    "anchor-line": "A source link names lines past the end of its file.",
    "anchor-symbol": "A source link's file no longer holds the symbol it cites.",
    "anchor-floor": "Fewer citations could be checked than the configured floor.",
    "symbol-anchors": "Cited source roots are not in the tree.",
    "ratchet": "A ratchet's baseline file cannot be read.",
    "ratchet-regression": "A ratcheted count went above its baseline.",
    "ratchet-lower": "A ratcheted count went below its baseline, which must be lowered in the same change.",
    "ratchet-raised": "A ratchet baseline was raised; a baseline only goes down.",
    "ratchet-below-count": "A ratchet baseline was lowered below the current count.",
    "ratchet-baseline": "A ratchet baseline file at the head is not a valid baseline.",
    "ratchet-allowlist": "An allowlisted bucket's match count differs from the allowlist.",
    "env-undocumented": "Code reads an environment variable that no doc file documents.",
    "env-unread": "A doc file documents an environment variable no code reads.",
    "env-doc": "No doc file matches the configured globs.",
    "env-read": "No code file matches the configured globs.",
    "env-allowlist": "The configured allowlist file is not in the tree.",
    "env-files": "The files of the env_documented check cannot be read.",
    "script": "A project check script exited non-zero.",
}


def describe(rule: str) -> dict[str, object]:
    """The SARIF `reportingDescriptor` of a rule: id, short and full description and help in text
    and Markdown. A rule not in RULES (a new one) still gets all four, naming it, never none."""
    text = RULES.get(rule, f"A finding of the checkers' rule `{rule}`.")
    fix = f"Each finding's message says how to repair the record; the rule is described in {GUIDE}."
    return sarif.rule(rule, text, fix, "error")
