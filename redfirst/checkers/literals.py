"""Literal strings one of which every match of a regex contains: a prefilter as cheap as `in`."""

from __future__ import annotations

import functools
import importlib
import re
from typing import Any

# the parser CPython's re compiles with (3.11+); private, so typed loosely
_OPS: Any = importlib.import_module("re._constants")
sre_parse: Any = importlib.import_module("re._parser")

_REPEATS = (_OPS.MAX_REPEAT, _OPS.MIN_REPEAT, _OPS.POSSESSIVE_REPEAT)


@functools.lru_cache(maxsize=256)
def required(rx: re.Pattern[str]) -> tuple[str, ...] | None:
    """Strings such that every match of `rx` contains at least one of them, or None when no such
    set is known (case-insensitive, or nothing literal is mandatory): then the text must be searched."""
    if rx.flags & re.IGNORECASE:
        return None
    try:
        parsed = sre_parse.parse(rx.pattern, rx.flags)
    except (re.error, RecursionError):  # pragma: no cover - rx compiled already
        return None
    found = _sequence(list(parsed))
    return tuple(sorted(found)) if found else None


def may_match(rx: re.Pattern[str], text: str) -> bool:
    """False only when `rx` cannot match anywhere in `text` (no required literal occurs in it)."""
    alternatives = required(rx)
    return alternatives is None or any(lit in text for lit in alternatives)


def _sequence(items: list[tuple[Any, Any]]) -> frozenset[str] | None:
    """The best disjunction of one mandatory element of a sequence (the one whose shortest literal is
    longest), a run of consecutive literals counting as one string."""
    best: frozenset[str] | None = None
    run = ""

    def consider(option: frozenset[str] | None) -> None:
        nonlocal best
        if option and all(option) and (best is None or min(map(len, option)) > min(map(len, best))):
            best = option

    for op, arg in items:
        if op is _OPS.LITERAL:
            run += chr(arg)
            continue
        consider(frozenset([run]) if run else None)
        run = ""
        consider(_element(op, arg))
    consider(frozenset([run]) if run else None)
    return best


def _element(op: Any, arg: Any) -> frozenset[str] | None:
    if op is _OPS.SUBPATTERN:
        _group, add_flags, _del_flags, body = arg
        if add_flags & re.IGNORECASE:
            return None
        return _sequence(list(body))
    if op is _OPS.BRANCH:
        options: set[str] = set()
        for branch in arg[1]:
            found = _sequence(list(branch))
            if not found:
                return None  # one branch needs no literal: the whole branch needs none
            options |= found
        return frozenset(options)
    if op in _REPEATS and arg[0] >= 1:
        return _sequence(list(arg[2]))
    if op is _OPS.ATOMIC_GROUP:
        return _sequence(list(arg))
    return None  # classes, anchors, lookarounds, back references: nothing literal is owed
