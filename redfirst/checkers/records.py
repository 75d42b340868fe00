"""Records as git stores them: read one only if it is a file, and name the ones a change removed."""

from __future__ import annotations

from redfirst.checkers.context import Context
from redfirst.checkers.model import Finding
from redfirst.checkers.tree import NotAFile, Tree, regular, select


def read_file(tree: Tree, path: str) -> tuple[str | None, NotAFile | None]:
    """(text, None) for a file, (None, None) when absent, (None, refusal) when git stores no file
    there (a link, a submodule, or under one): a checker never judges the link's text."""
    try:
        return tree.read(path), None
    except NotAFile as exc:
        return None, exc


def removed(ctx: Context, path: str, rule: str, what: str) -> Finding | None:
    """A finding when the base holds `path` as a file and the head does not (deleted, renamed, or
    replaced by a link or submodule); None in a run without a base or when nothing was removed."""
    if ctx.base is None:
        return None
    try:
        if ctx.base.read_bytes(path) is None:
            return None
    except NotAFile:
        return None  # not a file at the base either; what the head holds is judged there
    try:
        if ctx.head.read_bytes(path) is not None:
            return None
    except NotAFile as exc:
        return exc.finding()
    return Finding(path, 1, rule, f"{what} {path} at {ctx.base.label} was deleted or renamed at {ctx.head.label}: "
                                  f"records keep their path; restore it (a renamed record is a new record "
                                  f"beside the old one)")


def hidden(ctx: Context, patterns: list[str]) -> list[NotAFile]:
    """Files of the base matched by `patterns` that now lie under a link or submodule (their folder
    became one): absent from the head's listing, yet never simply deleted, so never just left out."""
    if ctx.base is None:
        return []
    kept = set(ctx.head.paths())
    return regular(ctx.head, [p for p in select(ctx.base.paths(), patterns) if p not in kept])[1]
