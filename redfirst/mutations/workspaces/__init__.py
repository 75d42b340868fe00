"""Workspaces: where a mutation is applied and its gates run. One Protocol, one module
per mode (`worktree`, `commit`, `in-place`), one registry."""

from __future__ import annotations

import importlib
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


REGISTRY: dict[str, str] = {
    "worktree": "worktree",
    "commit": "commit",
    "in-place": "in_place",
}


def open_workspace(mode: str, root: Path, worker: int) -> Workspace:
    module = importlib.import_module(f"mutations.workspaces.{REGISTRY[mode]}")
    workspace: Workspace = module.open_workspace(root, worker)
    return workspace


def recover(root: Path) -> list[str]:
    """Repair what killed runs left: the in-place journal, then stale worktrees.
    Returns one line per repaired thing."""
    from mutations.workspaces import in_place, worktree

    return [*in_place.recover(root), *worktree.recover(root)]
