"""Where mutate keeps things: worktrees and caches outside the user's tree, the
in-place journal inside it (under `.redfirst/`, ignored by its own `.gitignore`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from gates.config import cache_home


def repo_cache(top: Path, part: str) -> Path:
    """A folder of the cache for one repository (by its path), e.g. its worktrees."""
    key = hashlib.sha256(str(top.resolve()).encode()).hexdigest()[:16]
    return cache_home() / part / key


def state_dir(root: Path) -> Path:
    state = root / ".redfirst"
    state.mkdir(parents=True, exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    return state


def journal_dir(root: Path) -> Path:
    return state_dir(root) / "journal"
