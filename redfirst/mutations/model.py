"""A mutation as loaded from its file: plain frozen data, validated before anything runs."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field

from redfirst.gates.model import Source

MODES = ("worktree", "in-place", "commit")


@dataclass(frozen=True)
class Expect:
    build: str = "ok"                    # ok | fails (a compile error is the red)
    red: tuple[str, ...] = ()            # gates that must go RED
    green: tuple[str, ...] = ()          # controls that must stay GREEN

    @property
    def gates(self) -> tuple[str, ...]:
        return (*self.red, *(g for g in self.green if g not in self.red))


@dataclass(frozen=True)
class Mutation:
    id: str
    file: str                            # relative to the root
    anchor: str                          # matched literally
    replace: str
    source: Source
    expect: Expect = field(default_factory=Expect)
    why: str | None = None
    occurrence: int | None = None        # 1-based; None: the anchor must occur exactly once
    build: tuple[str, ...] | str | None = None   # replaces the gates' build for this mutation
    mode: str = "worktree"
    document: str = ""                   # the mutation's own YAML text as loaded

    @property
    def patch_digest(self) -> str:
        """The sha256 of the patch this mutation applies: its file, anchor, replacement and
        occurrence. With the digest of the tree it is applied to, it fixes the mutated tree: what an
        evidence record of its runs is bound to (redfirst.gates.record.Binding)."""
        text = json.dumps([self.file, self.anchor, self.replace, self.occurrence], separators=(",", ":"))
        return hashlib.sha256(text.encode("utf-8", errors="surrogateescape")).hexdigest()
