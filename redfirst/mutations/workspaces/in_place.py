"""`in-place`: the mutation edits the user's tree, under the journal in `.redfirst/`.

One in-place run per tree at a time: an exclusive lock on `.redfirst/mutate.lock`,
held from recovery to the end of the run (a killed run's lock dies with it)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mutations import journal
from mutations.paths import journal_dir, state_dir
from mutations.workspaces import WorkspaceError

_held: dict[Path, int] = {}


def _lock(root: Path) -> bool:
    """Take the tree's lock for the rest of this process; False when another run holds it."""
    key = root.resolve()
    if key in _held:
        return True
    fd = os.open(state_dir(root) / "mutate.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return False
    _held[key] = fd
    return True


class InPlace:
    parallel = False
    mirrors: tuple[Path, Path] | None       # None: the user's tree itself (Workspace.mirrors)

    def __init__(self, root: Path) -> None:
        if not _lock(root):
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


def before_grading(root: Path) -> list[str]:
    """What `gates run` does first, so mutated code is never graded as the user's: finish
    a killed in-place run's restore. WorkspaceError while a live run holds the tree
    mutated; journal.JournalConflict when a mutated file was edited since."""
    folder = root / ".redfirst" / "journal"
    if not folder.is_dir() or not any(folder.glob(f"*{journal.ENTRY_SUFFIX}")):
        return []
    if not _lock(root):
        raise WorkspaceError(f"a mutate run is editing {root} in place right now: the files its journal {folder} "
                             "names hold a mutation; run the gates when it has ended")
    return [f"restored {r.path} from the journal (sha256 verified)" for r in journal.recover(folder) if r.restored]


def recover(root: Path) -> list[str]:
    folder = root / ".redfirst" / "journal"
    if not folder.is_dir():
        return []
    if not _lock(root):
        # A live run owns this journal; its own restore will finish the job.
        return []
    return [f"restored {r.path} from the journal (sha256 verified)" for r in journal.recover(folder) if r.restored]
