"""Where mutate keeps things outside the user's tree: worktrees and caches (the in-place journal,
inside it, is `redfirst.unmutated.journal_dir`)."""

from __future__ import annotations

import hashlib
from pathlib import Path

from redfirst.gates.config import cache_home


def repo_cache(top: Path, part: str) -> Path:
    """A folder of the cache for one repository (by its path), e.g. its worktrees."""
    key = hashlib.sha256(str(top.resolve()).encode()).hexdigest()[:16]
    return cache_home() / part / key
