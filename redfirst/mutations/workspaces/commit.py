"""`commit`: a worktree whose detached HEAD is a scratch commit holding the mutation on
top of the user's HEAD, for gates that read `merge-base..HEAD` (an unstaged edit reads
as passing against those). The user's branch, HEAD and refs never move.

The baseline runs on a scratch commit of the untouched tree made exactly as a mutated
one is (`scratch_commit`: HEAD's message and author, the scratch committer, parent HEAD),
so a gate that reads commits sees the same commits but for the mutated file: the shape
of a scratch commit can never be what turns a gate RED. Both commit the tree as the user
sees it (`CommitWorktree.committed`: the user's uncommitted edits, as the other modes run on
them), so the two commits differ by the mutation alone."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redfirst.mutations import git
from redfirst.mutations.workspaces.worktree import Worktree

# The scratch committer says the commit is redfirst's; author and message are HEAD's.
SCRATCH_COMMITTER = {k: v for k, v in git.SCRATCH_ENV.items() if k.startswith("GIT_COMMITTER_")}


def scratch_commit(top: Path, base: str, paths: list[str]) -> str:
    """Commit `paths` (none: an empty commit) on top of `base`, with base's message and
    author; hooks, signing and the user's identity stay out of it."""
    quiet = ("-c", "core.hooksPath=/dev/null", "-c", "commit.gpgsign=false")
    if paths:
        git.git(top, *quiet, "add", "--", *paths)
    git.git(top, *quiet, "commit", "-q", "--no-verify", "--allow-empty", "-C", base,
            *(("--", *paths) if paths else ()), env=SCRATCH_COMMITTER)
    return git.git(top, "rev-parse", "HEAD").strip()


class CommitWorktree(Worktree):
    def committed(self, *mutated: str) -> list[str]:
        """The paths (relative to the top) a scratch commit holds: every uncommitted edit of the
        user's (changed, new or deleted files) and `mutated`. The baseline's and every mutated
        commit take the same edits, so the one thing a gate reading commits can tell apart is
        the mutation."""
        return list(dict.fromkeys([*self.overlaid, *mutated]))

    @contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        rel_top = str((self.root / rel_file).relative_to(self.path))
        with super().mutated(rel_file, new_bytes, label):
            scratch_commit(self.path, self.base, self.committed(rel_top))
            try:
                yield
            finally:
                # Back to the base commit; this index and HEAD belong to the worktree only.
                git.git(self.path, "reset", "-q", self.base)

    @contextmanager
    def untouched(self) -> Iterator[None]:
        """The untouched tree on a scratch commit made as a mutated one is: the baseline."""
        scratch_commit(self.path, self.base, self.committed())
        try:
            yield
        finally:
            git.git(self.path, "reset", "-q", self.base)


def open_workspace(root: Path, worker: int) -> CommitWorktree:
    return CommitWorktree(root, worker)
