"""Workspaces: where a mutation is applied and its gates run. One Protocol (`base.Workspace`),
one module per mode (`worktree`, `commit`, `in-place`), one registry."""

from __future__ import annotations

import importlib
from pathlib import Path

from redfirst.mutations.workspaces.base import Workspace, WorkspaceError

__all__ = ["REGISTRY", "Workspace", "WorkspaceError", "open_workspace", "recover"]

REGISTRY: dict[str, str] = {
    "worktree": "worktree",
    "commit": "commit",
    "in-place": "in_place",
}


def open_workspace(mode: str, root: Path, worker: int) -> Workspace:
    module = importlib.import_module(f"redfirst.mutations.workspaces.{REGISTRY[mode]}")
    workspace: Workspace = module.open_workspace(root, worker)
    return workspace


def recover(root: Path) -> list[str]:
    """Repair what killed runs left: the in-place journal, then stale worktrees.
    Returns one line per repaired thing."""
    from redfirst.mutations.workspaces import in_place, worktree

    return [*in_place.recover(root), *worktree.recover(root)]
