"""Selectors over box labels: `k=v`, `k!=v`, `k>=n`, `k<=n`, comma = AND (the rc controller's grammar).

Values compare case-insensitively; dotted versions compare numerically per part (`cuda>=12.4`
admits 12.10); sizes take K/M/G/T (binary); a missing label never matches, not even `!=`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

OPERATORS = ("!=", ">=", "<=", "=")   # longest first: ">=" must win over "="
_VERSION = re.compile(r"^\d+(\.\d+)*$")
_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*([kmgt])(?:i?b)?$", re.IGNORECASE)
_UNIT = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


class SelectorError(ValueError):
    """A selector that does not parse; the message names the bad term."""


@dataclass(frozen=True)
class Term:
    key: str
    op: str
    value: str

    def __str__(self) -> str:
        return f"{self.key}{self.op}{self.value}"

    def matches(self, labels: Mapping[str, str]) -> bool:
        have = _lookup(labels, self.key)
        if have is None:
            return False
        return compare(have, self.op, self.value)


@dataclass(frozen=True)
class Selector:
    terms: tuple[Term, ...]

    def __str__(self) -> str:
        return ",".join(str(t) for t in self.terms)

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(t.matches(labels) for t in self.terms)

    def first_unmet(self, labels: Mapping[str, str]) -> Term | None:
        """The first term these labels fail, for a reason that names the missing label."""
        return next((t for t in self.terms if not t.matches(labels)), None)


def parse(text: str) -> Selector:
    if not text or not text.strip():
        raise SelectorError("empty selector")
    terms = []
    for raw in text.split(","):
        part = raw.strip()
        if not part:
            raise SelectorError(f"empty term in selector {text!r}")
        terms.append(_parse_term(part))
    return Selector(tuple(terms))


def _parse_term(part: str) -> Term:
    for op in OPERATORS:
        key, found, value = part.partition(op)
        if not found:
            continue
        key, value = key.strip(), value.strip()
        if not key or not value:
            raise SelectorError(f"term {part!r} needs a key and a value")
        if any(c in key + value for c in "=!<>"):
            raise SelectorError(f"term {part!r} has more than one operator")
        return Term(key.lower(), op, value)
    raise SelectorError(f"term {part!r} has no operator (one of =, !=, >=, <=)")


def _lookup(labels: Mapping[str, str], key: str) -> str | None:
    for k, v in labels.items():
        if k.lower() == key:
            return str(v)
    return None


def _version(s: str) -> tuple[int, ...] | None:
    return tuple(int(p) for p in s.split(".")) if _VERSION.match(s) else None


def _size(s: str) -> float | None:
    m = _SIZE.match(s)
    if m:
        return float(m.group(1)) * _UNIT[m.group(2).lower()]
    return None


def _pad(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[tuple[int, ...], tuple[int, ...]]:
    n = max(len(a), len(b))
    return a + (0,) * (n - len(a)), b + (0,) * (n - len(b))


def compare(have: str, op: str, want: str) -> bool:
    """`have OP want` with the label rules of DESIGN section 4."""
    have, want = have.strip(), want.strip()
    hv, wv = _version(have), _version(want)
    if hv is not None and wv is not None:
        a, b = _pad(hv, wv)
        return _apply(op, a, b)
    hs = _size(have) if hv is None else None
    ws = _size(want) if wv is None else None
    if hs is not None and ws is not None:
        return _apply(op, hs, ws)
    if op in (">=", "<=") and (hv is None and hs is None or wv is None and ws is None):
        # An ordering needs two quantities: `gpu_model>=h100` must not admit t4 by spelling.
        return False
    if (hv is not None and ws is not None) or (hs is not None and wv is not None):
        # A bare number against a size: the number is bytes.
        x = float(have) if hv is not None and len(hv) == 1 else hs
        y = float(want) if wv is not None and len(wv) == 1 else ws
        if x is None or y is None:
            return False
        return _apply(op, x, y)
    return _apply(op, have.lower(), want.lower())


def _apply(op: str, a: object, b: object) -> bool:
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    if op == ">=":
        return a >= b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    raise SelectorError(f"unknown operator {op!r}")
