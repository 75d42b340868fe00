"""Every checker by its `checkers:` key, in the order they run and print."""

from __future__ import annotations

from redfirst.checkers import (
    append_only,
    caps,
    commit_style,
    doc_checkpoint,
    env_documented,
    matrices,
    ratchets,
    script,
    specs,
    symbol_anchors,
    trailers,
)
from redfirst.checkers.base import Checker

_MODULES: tuple[Checker, ...] = (append_only, specs, matrices, trailers, commit_style, doc_checkpoint,
                                 symbol_anchors, caps, ratchets, env_documented, script)
REGISTRY: dict[str, Checker] = {m.name: m for m in _MODULES}
