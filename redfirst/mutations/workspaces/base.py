"""What every workspace mode implements, and the error it raises (the modes import this, the
registry in `__init__` imports the modes)."""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol


class Workspace(Protocol):
    # the root the gates run in: the user's root, or the same subfolder of a worktree
    root: Path
    # whether several of these may exist at once (one per worker)
    parallel: bool
    # (this workspace's top folder, the user's it copies), or None for the user's tree itself:
    # a file its gates read outside the root, under that top, stands for the user's one
    mirrors: tuple[Path, Path] | None

    # The tree with `rel_file` (relative to the root) holding `new_bytes` for the
    # duration of the block, restored byte for byte afterwards.
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> AbstractContextManager[None]: ...

    # Give back whatever the workspace holds (worktrees); the user's tree is untouched.
    def close(self) -> None: ...


class WorkspaceError(Exception):
    """The workspace cannot be made (not a git repository, no commit yet); exit 2."""
