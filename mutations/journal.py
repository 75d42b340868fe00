"""Byte-for-byte restore under a journal.

`mutated()` is the one place that edits a target file: it records the original bytes
and their sha256 in the journal before the first byte changes, and restores and
verifies them on the way out. `recover()` repairs whatever a killed run left behind;
every `mutate` run calls it before it does anything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

ENTRY_SUFFIX = ".entry.json"


class RestoreError(Exception):
    """A restored file does not hash to what it was before: never silently accepted."""


@dataclass(frozen=True)
class Recovered:
    path: Path
    restored: bool          # False when the file already had its original bytes


def sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _fsync_dir(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_durable(path: Path, data: bytes, durable: bool = True) -> None:
    with open(path, "wb") as f:
        f.write(data)
        if durable:
            f.flush()
            os.fsync(f.fileno())


def _replace_bytes(target: Path, data: bytes, scratch: Path, durable: bool = True, mode: int | None = None) -> None:
    # Written beside the journal and renamed over the target: a kill never leaves a half
    # file in the user's tree, nor a stray temporary next to it.
    tmp = scratch / f"{target.name}.{os.getpid()}.tmp"
    _write_durable(tmp, data, durable)
    if mode is not None:
        os.chmod(tmp, mode)
    elif target.exists():
        shutil.copymode(target, tmp)
    try:
        os.replace(tmp, target)
    except OSError:
        # Another filesystem: write in place; the journal still holds the original.
        target.write_bytes(data)
        tmp.unlink(missing_ok=True)


def ensure_journal_dir(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    state = folder.parent if folder.parent.name == ".redfirst" else None
    if state is not None and not (state / ".gitignore").exists():
        (state / ".gitignore").write_text("*\n", encoding="utf-8")
    return folder


def real_target(target: Path, inside: Path | None = None) -> Path:
    """The file a mutation of `target` edits: through a symbolic link, the file it names
    (replacing the link itself would leave a regular file where the user has a link).
    RestoreError when the file lies outside `inside` (a scratch tree's link into the user's)."""
    real = target.resolve()
    if inside is not None and not real.is_relative_to(inside.resolve()):
        raise RestoreError(f"{target} is a link to {real}, outside {inside}: editing it would edit that file")
    return real


@contextmanager
def mutated(target: Path, new_bytes: bytes, journal_dir: Path, durable: bool = True,
            inside: Path | None = None) -> Iterator[str]:
    """Replace `target`'s bytes with `new_bytes` for the duration of the block, then put
    the original bytes back and verify their sha256 (RestoreError if they differ).

    Yields the sha256 of the original bytes. A journal entry exists from before the
    first write until after the verified restore, so `recover()` can finish the job
    after a SIGKILL at any point. `durable=False` skips the fsyncs: for scratch trees
    (worktrees) that a crash throws away anyway, never for the user's tree.
    """
    target = real_target(target, inside)
    journal = ensure_journal_dir(journal_dir)
    original = target.read_bytes()
    mode = stat.S_IMODE(target.stat().st_mode)
    before = sha256(original)
    key = sha256(str(target.resolve()).encode())[:16]
    backup, entry = journal / f"{key}.orig", journal / f"{key}{ENTRY_SUFFIX}"
    if entry.exists():
        raise RestoreError(f"{target}: a journal entry already exists ({entry}); run recovery first")
    _write_durable(backup, original, durable)
    tmp_entry = journal / f"{key}.entry.tmp"
    _write_durable(tmp_entry, json.dumps({"path": str(target.resolve()), "sha256": before,
                                          "backup": backup.name, "mode": mode}).encode(), durable)
    os.replace(tmp_entry, entry)
    if durable:
        _fsync_dir(journal)
    try:
        _replace_bytes(target, new_bytes, journal, durable)
        yield before
    finally:
        _restore(target, original, before, journal, durable, mode)
        entry.unlink()
        backup.unlink(missing_ok=True)
        if durable:
            _fsync_dir(journal)


def _restore(target: Path, original: bytes, before: str, scratch: Path, durable: bool = True,
             mode: int | None = None) -> None:
    # A gate may have deleted the target: the mode comes from the journal, not from it.
    if not target.exists() or sha256(target.read_bytes()) != before:
        _replace_bytes(target, original, scratch, durable, mode)
    after = sha256(target.read_bytes())
    if after != before:
        raise RestoreError(f"{target}: sha256 after restore is {after}, was {before}")


def recover(journal_dir: Path) -> list[Recovered]:
    """Finish every restore a killed run left in `journal_dir`; RestoreError when a
    backup is damaged (then the entry is kept for a person to look at)."""
    if not journal_dir.is_dir():
        return []
    done: list[Recovered] = []
    for tmp in journal_dir.glob("*.tmp"):
        tmp.unlink(missing_ok=True)
    for entry in sorted(journal_dir.glob(f"*{ENTRY_SUFFIX}")):
        record = json.loads(entry.read_text(encoding="utf-8"))
        target, before = Path(record["path"]), record["sha256"]
        backup = journal_dir / record["backup"]
        current = target.read_bytes() if target.exists() else None
        restored = current is None or sha256(current) != before
        if restored:
            original = backup.read_bytes()
            if sha256(original) != before:
                raise RestoreError(f"{target}: journal backup {backup} does not hash to {before}")
            _replace_bytes(target, original, journal_dir, mode=record.get("mode"))
            if sha256(target.read_bytes()) != before:
                raise RestoreError(f"{target}: sha256 after recovery differs from {before}")
        entry.unlink()
        backup.unlink(missing_ok=True)
        done.append(Recovered(target, restored))
    for orphan in journal_dir.glob("*.orig"):
        # A backup whose entry was never written: the target was not touched yet.
        orphan.unlink(missing_ok=True)
    return done
