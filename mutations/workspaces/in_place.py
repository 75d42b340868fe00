"""`in-place`: the mutation edits the user's tree, under the journal in `.redfirst/`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mutations import journal
from mutations.paths import journal_dir


class InPlace:
    parallel = False

    def __init__(self, root: Path) -> None:
        self.root = root

    @contextmanager
    def mutated(self, rel_file: str, new_bytes: bytes, label: str) -> Iterator[None]:
        with journal.mutated(self.root / rel_file, new_bytes, journal_dir(self.root)):
            yield

    def close(self) -> None:
        pass


def open_workspace(root: Path, worker: int) -> InPlace:
    return InPlace(root)


def recover(root: Path) -> list[str]:
    folder = root / ".redfirst" / "journal"
    return [f"restored {r.path} from the journal (sha256 verified)" for r in journal.recover(folder) if r.restored]
