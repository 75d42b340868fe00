"""A tree that an in-place `mutate` run left mutated is never graded as the user's.

An in-place run edits the user's files under a journal (`redfirst.journal`) and holds the tree's
lock (`.redfirst/mutate.lock`) while it runs. Every entry point that grades the tree calls
`before_grading` first: a killed run's edits are restored from the journal (sha256 verified), and a
live run's tree is refused (TreeBusy) rather than graded while it holds a mutation.
"""

from __future__ import annotations

import fcntl
import os
from pathlib import Path

from redfirst import journal

_held: dict[Path, int] = {}


class TreeBusy(Exception):
    """A live in-place run holds the tree (its files may hold a mutation right now); exit 2."""


def state_dir(root: Path) -> Path:
    """`root/.redfirst`, made with a `.gitignore` that ignores it whole."""
    state = root / ".redfirst"
    state.mkdir(parents=True, exist_ok=True)
    ignore = state / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n", encoding="utf-8")
    return state


def journal_dir(root: Path) -> Path:
    return state_dir(root) / "journal"


def lock_tree(root: Path) -> bool:
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


def before_grading(root: Path) -> list[str]:
    """Finish a killed in-place run's restore before anything grades `root`; one line per restored
    file. TreeBusy while a live run holds the tree mutated; journal.JournalConflict when a mutated
    file was edited since."""
    folder = root / ".redfirst" / "journal"
    if not folder.is_dir() or not any(folder.glob(f"*{journal.ENTRY_SUFFIX}")):
        return []
    if not lock_tree(root):
        raise TreeBusy(f"a mutate run is editing {root} in place right now: the files its journal {folder} "
                       "names hold a mutation; run the gates when it has ended")
    return _restored(folder)


def recover(root: Path) -> list[str]:
    """What a new in-place run does first: finish a killed run's restore (a live run's is its own)."""
    folder = root / ".redfirst" / "journal"
    if not folder.is_dir() or not lock_tree(root):
        return []
    return _restored(folder)


def _restored(folder: Path) -> list[str]:
    return [f"restored {r.path} from the journal (sha256 verified)" for r in journal.recover(folder) if r.restored]
