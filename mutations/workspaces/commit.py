"""`commit`: a worktree whose detached HEAD is a scratch commit holding the mutation on
top of the user's HEAD, for gates that read `merge-base..HEAD` (an unstaged edit reads
as passing against those). The user's branch, HEAD and refs never move."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mutations import git
from mutations.workspaces.worktree import Worktree


class CommitWorktree(Worktree):
    @contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        rel_top = str((self.root / rel_file).relative_to(self.path))
        with super().mutated(rel_file, new_bytes, label):
            git.commit_paths(self.path, f"mutate: {label}", [rel_top])
            try:
                yield
            finally:
                # Back to the base commit; this index and HEAD belong to the worktree only.
                git.git(self.path, "reset", "-q", self.base)


def open_workspace(root: Path, worker: int) -> CommitWorktree:
    return CommitWorktree(root, worker)
