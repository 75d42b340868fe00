"""`in-place`: the mutation edits the user's tree, under the journal in `.redfirst/`.

One in-place run per tree at a time: an exclusive lock on `.redfirst/mutate.lock`,
held from recovery to the end of the run (a killed run's lock dies with it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from redfirst import journal
from redfirst.mutations.workspaces.base import WorkspaceError
from redfirst.unmutated import journal_dir, lock_tree
from redfirst.unmutated import recover as recover


class InPlace:
    parallel = False
    mirrors: tuple[Path, Path] | None       # None: the user's tree itself (Workspace.mirrors)

    def __init__(self, root: Path) -> None:
        if not lock_tree(root):
            raise WorkspaceError(f"another mutate run is editing {root} in place (lock {root}/.redfirst/mutate.lock)")
        self.root = root
        self.mirrors = None

    @contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        with journal.mutated(self.root / rel_file, new_bytes, journal_dir(self.root)):
            yield

    def close(self) -> None:
        pass


def open_workspace(root: Path, worker: int) -> InPlace:
    return InPlace(root)
